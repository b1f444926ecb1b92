/*
 * ext_server: a server for clients that are NOT under ddbx (the `ddbx record ./server` case).
 *     ext_server N [WORDING_FILE]
 * Listens on 127.0.0.1 (kernel-chosen port), prints "port P" first (flushed), then serves N
 * clients one at a time: reads one line, prints "request K: <line>", replies
 * "you are number K\n" and closes. With WORDING_FILE, the reply starts with that file's first
 * line instead of "you are number" (a test changes it between record and replay: a changed
 * reply to an outside peer must be a divergence). Exit status 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void die(const char *what)
{
    fprintf(stderr, "ext_server: %s: %s\n", what, strerror(errno));
    exit(1);
}

int main(int argc, char **argv)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int n = argc > 1 ? atoi(argv[1]) : 3, k, lfd;
    char wording[64] = "you are number";

    if (argc > 2) {
        FILE *f = fopen(argv[2], "r");
        if (!f || !fgets(wording, sizeof wording, f))
            die("wording file");
        fclose(f);
        wording[strcspn(wording, "\n")] = '\0';
    }

    setvbuf(stdout, NULL, _IOLBF, 0);
    alarm(60);
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0)
        die("socket");
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 16) < 0)
        die("bind/listen");
    if (getsockname(lfd, (struct sockaddr *)&a, &len) < 0)
        die("getsockname");
    printf("port %d\n", ntohs(a.sin_port));
    for (k = 1; k <= n; k++) {
        char line[256], reply[128];
        size_t got = 0;
        int fd = accept(lfd, NULL, NULL);

        if (fd < 0)
            die("accept");
        while (got < sizeof line - 1) {
            ssize_t r = read(fd, line + got, sizeof line - 1 - got);
            if (r < 0)
                die("read");
            if (r == 0)
                break;
            got += (size_t)r;
            if (line[got - 1] == '\n')
                break;
        }
        line[got] = '\0';
        if (got > 0 && line[got - 1] == '\n')
            line[got - 1] = '\0';
        printf("request %d: %s\n", k, line);
        snprintf(reply, sizeof reply, "%s %d\n", wording, k);
        if (write(fd, reply, strlen(reply)) != (ssize_t)strlen(reply))
            die("write");
        close(fd);
    }
    close(lfd);
    return 0;
}
