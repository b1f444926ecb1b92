/*
 * ext_server: a server for clients that are NOT under ddbx (the `ddbx record ./server` case).
 *     ext_server N [WORDING_FILE [peek]]
 * Listens on 127.0.0.1 (kernel-chosen port), prints "port P" first (flushed), then serves N
 * clients one at a time: reads one line, prints "request K: <line>", replies
 * "you are number K\n" and closes. With WORDING_FILE, the reply starts with that file's first
 * line instead of "you are number" (a test changes it between record and replay: a changed
 * reply to an outside peer must be a divergence). With "peek", each read is a recv(MSG_PEEK)
 * first, then a read of exactly the bytes it saw. Exit status 0.
 */
#include "common.h" /* the helpers every test program shares */

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 3, k, lfd, port;
    int peek = argc > 3 && strcmp(argv[3], "peek") == 0;
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
    lfd = bind_any(&port, 1);
    printf("port %d\n", port);
    for (k = 1; k <= n; k++) {
        char line[256], reply[128];
        size_t got = 0;
        int fd = accept_one(lfd);

        /* One line, or what came before EOF. */
        while (got < sizeof line - 1) {
            size_t room = sizeof line - 1 - got;
            ssize_t r;

            if (peek) {
                r = recv(fd, line + got, room, MSG_PEEK);
                if (r < 0)
                    die("recv MSG_PEEK");
                room = (size_t)r;
            }
            r = read_retry(fd, line + got, room);
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
        write_str(fd, reply);
        close_or_die(fd);
    }
    close_or_die(lfd);
    return 0;
}
