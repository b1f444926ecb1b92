/*
 * poll_any: which connection does poll() report readable, and how are
 * the messages of three concurrent senders interleaved and split?
 *
 * The parent listens and forks 3 children.  Child i (1..3) connects, then
 * sends "c<i> m0\n", "c<i> m1\n", "c<i> m2\n" (random jitter before the
 * connect and before each send) and closes.  The parent accepts the 3
 * connections (conn1..conn3, numbered in accept order), then loops on
 * poll() over the open ones, doing one read (4096-byte buffer) on each
 * readable connection, until all three reached EOF.  After reaping the
 * children it prints, in the order they happened, one line per read:
 *     read from conn2: c3 m0\nc3 m1\n
 *     eof on conn2
 * Race: accept order, readiness order, and how bytes are split into reads.
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
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>

#define UNUSED __attribute__((unused))

#include "common.h" /* the helpers every test program shares */
#include <poll.h>

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

static void client(int port, int id)
{
    int fd, j;

    jitter_init();
    jitter();
    fd = connect_to(port);
    for (j = 0; j < NMSGS; j++) {
        char msg[32];
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
    int port, lfd, i, open_count = NCLIENTS;
    int conn[NCLIENTS];
    pid_t pids[NCLIENTS];

    setvbuf(stdout, NULL, _IOLBF, 0);
    jitter_init();
    lfd = bind_any(&port, 1);
    for (i = 0; i < NCLIENTS; i++) {
        pids[i] = fork_or_die();
        if (pids[i] == 0) {
            if (close(lfd) < 0)
                die("close");
            client(port, i + 1);
        }
    }
    for (i = 0; i < NCLIENTS; i++) {
        conn[i] = accept_one(lfd);
    }
    if (close(lfd) < 0)
        die("close");

    while (open_count > 0) {
        struct pollfd pfd[NCLIENTS];
        int idx[NCLIENTS], npfd = 0, r, k;

        for (i = 0; i < NCLIENTS; i++) {
            if (conn[i] >= 0) {
                pfd[npfd].fd = conn[i];
                pfd[npfd].events = POLLIN;
                pfd[npfd].revents = 0;
                idx[npfd++] = i;
            }
        }
        r = poll(pfd, (nfds_t)npfd, -1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            die("poll");
        }
        for (k = 0; k < npfd; k++) {
            char buf[4096], esc[4096 * 4 + 1], head[32];
            ssize_t n;

            i = idx[k];
            if (pfd[k].revents & POLLNVAL)
                fail("poll: POLLNVAL");
            if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
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
    for (i = 0; i < nlines; i++)
        printf("%s\n", lines[i]);
    for (i = 0; i < nlines; i++)
        free(lines[i]);
    return 0;
}
