/*
 * epoll_any: which connection does epoll_wait() report readable, and how are
 * the messages of three concurrent senders interleaved and split?
 *
 * The parent listens and forks 3 children.  Child i (1..3) connects, then
 * sends "c<i> m0\n", "c<i> m1\n", "c<i> m2\n" (random jitter before the
 * connect and before each send) and closes.  The parent accepts the 3
 * connections (conn1..conn3, numbered in accept order), registers them with
 * an epoll instance and loops on epoll_wait() until all three reached EOF.
 * Level-triggered (default): one read (4096-byte buffer) per reported
 * connection.  With argv[1] == "et": the sockets are O_NONBLOCK and
 * registered with EPOLLET, and each reported connection is read until
 * read() fails with EAGAIN (or EOF).  After reaping the children it prints,
 * in the order they happened, one line per read outcome:
 *     read from conn2: c3 m0\nc3 m1\n
 *     EAGAIN on conn2            (et mode only)
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
#include <sys/epoll.h>

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

int main(int argc, char **argv)
{
    int port, lfd, i, open_count = NCLIENTS, et = 0, epfd;
    int conn[NCLIENTS];
    pid_t pids[NCLIENTS];

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1) {
        if (strcmp(argv[1], "et") != 0)
            fail("usage: epoll_any [et]");
        et = 1;
    }
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

    epfd = epoll_create1(0);
    if (epfd < 0)
        die("epoll_create1");
    for (i = 0; i < NCLIENTS; i++) {
        struct epoll_event ev;

        if (et) {
            int fl = fcntl(conn[i], F_GETFL);
            if (fl < 0 || fcntl(conn[i], F_SETFL, fl | O_NONBLOCK) < 0)
                die("fcntl");
        }
        memset(&ev, 0, sizeof ev);
        ev.events = EPOLLIN | (et ? EPOLLET : 0);
        ev.data.u32 = (uint32_t)i;
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, conn[i], &ev) < 0)
            die("epoll_ctl ADD");
    }

    while (open_count > 0) {
        struct epoll_event evs[NCLIENTS];
        int r, k;

        r = epoll_wait(epfd, evs, NCLIENTS, -1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            die("epoll_wait");
        }
        for (k = 0; k < r; k++) {
            i = (int)evs[k].data.u32;
            if (i < 0 || i >= NCLIENTS || conn[i] < 0)
                fail("epoll_wait: unexpected event");
            /* level-triggered: one read; edge-triggered: until EAGAIN/EOF */
            for (;;) {
                char buf[4096], esc[4096 * 4 + 1], head[32];
                ssize_t n = read(conn[i], buf, sizeof buf);

                if (n < 0 && et && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                    snprintf(head, sizeof head, "EAGAIN on conn%d", i + 1);
                    add_line(head, "");
                    break;
                }
                if (n < 0)
                    die("read");
                if (n == 0) {
                    snprintf(head, sizeof head, "eof on conn%d", i + 1);
                    add_line(head, "");
                    if (epoll_ctl(epfd, EPOLL_CTL_DEL, conn[i], NULL) < 0)
                        die("epoll_ctl DEL");
                    if (close(conn[i]) < 0)
                        die("close");
                    conn[i] = -1;
                    open_count--;
                    break;
                }
                escape(buf, (size_t)n, esc);
                snprintf(head, sizeof head, "read from conn%d: ", i + 1);
                add_line(head, esc);
                if (!et)
                    break;
            }
        }
    }
    if (close(epfd) < 0)
        die("close");
    for (i = 0; i < NCLIENTS; i++)
        wait_ok(pids[i]);
    for (i = 0; i < nlines; i++)
        printf("%s\n", lines[i]);
    for (i = 0; i < nlines; i++)
        free(lines[i]);
    return 0;
}
