/*
 * unix_race: accept race and receive-from-any over a Unix stream socket.
 *
 * The parent creates a fresh directory (mkdtemp, /tmp/ddbx-unix_race.XXXXXX),
 * listens on DIR/sock and forks 3 client children.  Each child sleeps a
 * random jitter, connects, sends "client <i>\n", waits for "ok\n", then sends
 * 3 messages "c<i> m<j>\n" with jitter in between and closes.  The parent
 * accepts 3 times (reading each client's first line and replying "ok\n"),
 * then reads from whichever connection select() reports readable until all
 * three reached EOF.  It removes the socket and the directory, reaps the
 * children and prints
 *     accepted: 2 1 3
 *     read from conn1: c2 m0\n
 *     ...
 *     eof on conn3
 * (connK = the K-th accepted connection).
 * Race: the accept order, which connection select() reports, how the
 * messages are split into reads (varies natively with DDBX_JITTER=5).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>

#define UNUSED __attribute__((unused))

#include "common.h" /* the helpers every test program shares */

#define NCLIENTS 3
#define NMSGS 3
#define MAXLINES 256

static char *lines[MAXLINES];
static int nlines;

/* Remember the output line a + b (printed at the end). */
static void add_line(const char *a, const char *b)
{
    char *l;

    if (nlines >= MAXLINES)
        fail("too many reads");
    l = malloc(strlen(a) + strlen(b) + 1);
    if (!l)
        fail("out of memory");
    strcpy(l, a);
    strcat(l, b);
    lines[nlines++] = l;
}

static void fill_unix(struct sockaddr_un *a, const char *path)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof a->sun_path)
        fail("socket path too long");
    strcpy(a->sun_path, path);
}

static void client(const char *path, int id)
{
    struct sockaddr_un a;
    char msg[64], reply[64];
    int fd, j;

    jitter_init();
    jitter();
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0)
        die("socket");
    fill_unix(&a, path);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
        die("connect");
    snprintf(msg, sizeof msg, "client %d\n", id);
    write_str(fd, msg);
    read_line(fd, reply, sizeof reply);
    if (strcmp(reply, "ok\n") != 0)
        fail("client: unexpected reply");
    for (j = 0; j < NMSGS; j++) {
        jitter();
        snprintf(msg, sizeof msg, "c%d m%d\n", id, j);
        write_str(fd, msg);
    }
    if (close(fd) < 0)
        die("close");
    exit(0);
}

int main(void)
{
    char dir[] = "/tmp/ddbx-unix_race.XXXXXX";
    char path[sizeof dir + 8];
    struct sockaddr_un a;
    int lfd, i, open_count = NCLIENTS;
    int conn[NCLIENTS], order[NCLIENTS];
    pid_t pids[NCLIENTS];

    setvbuf(stdout, NULL, _IOLBF, 0);
    jitter_init();
    if (!mkdtemp(dir))
        die("mkdtemp");
    snprintf(path, sizeof path, "%s/sock", dir);
    lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (lfd < 0)
        die("socket");
    fill_unix(&a, path);
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) < 0)
        die("bind");
    if (listen(lfd, 64) < 0)
        die("listen");
    for (i = 0; i < NCLIENTS; i++) {
        pids[i] = fork_or_die();
        if (pids[i] == 0) {
            if (close(lfd) < 0)
                die("close");
            client(path, i + 1);
        }
    }
    for (i = 0; i < NCLIENTS; i++) {
        char buf[64];
        int id;

        conn[i] = accept_one(lfd);
        read_line(conn[i], buf, sizeof buf);
        if (sscanf(buf, "client %d", &id) != 1 || id < 1 || id > NCLIENTS)
            fail("server: bad first line");
        order[i] = id;
        write_str(conn[i], "ok\n");
    }
    if (close(lfd) < 0)
        die("close");
    if (unlink(path) < 0)
        die("unlink");
    if (rmdir(dir) < 0)
        die("rmdir");

    while (open_count > 0) {
        fd_set rd;
        int maxfd = -1, r;

        FD_ZERO(&rd);
        for (i = 0; i < NCLIENTS; i++) {
            if (conn[i] >= 0) {
                FD_SET(conn[i], &rd);
                if (conn[i] > maxfd)
                    maxfd = conn[i];
            }
        }
        r = select(maxfd + 1, &rd, NULL, NULL, NULL);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            die("select");
        }
        for (i = 0; i < NCLIENTS; i++) {
            char buf[4096], esc[4096 * 4 + 1], head[32];
            ssize_t n;

            if (conn[i] < 0 || !FD_ISSET(conn[i], &rd))
                continue;
            n = read(conn[i], buf, sizeof buf);
            if (n < 0)
                die("read");
            if (n == 0) {
                snprintf(head, sizeof head, "eof on conn%d", i + 1);
                add_line(head, "");
                if (close(conn[i]) < 0)
                    die("close");
                conn[i] = -1;
                open_count--;
                continue;
            }
            escape(buf, (size_t)n, esc);
            snprintf(head, sizeof head, "read from conn%d: ", i + 1);
            add_line(head, esc);
        }
    }
    for (i = 0; i < NCLIENTS; i++)
        wait_ok(pids[i]);
    printf("accepted:");
    for (i = 0; i < NCLIENTS; i++)
        printf(" %d", order[i]);
    printf("\n");
    for (i = 0; i < nlines; i++)
        printf("%s\n", lines[i]);
    for (i = 0; i < nlines; i++)
        free(lines[i]);
    return 0;
}
