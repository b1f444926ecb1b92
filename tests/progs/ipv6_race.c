/*
 * ipv6_race: accept race and receive-from-any over TCP on ::1 (IPv6 loopback).
 *
 * The parent listens on [::1]:0 (kernel-chosen port) and forks 3 client
 * children.  If the machine has no IPv6 loopback (socket() or bind() fails
 * with EAFNOSUPPORT / EADDRNOTAVAIL / EPROTONOSUPPORT) it prints
 *     ipv6 unavailable
 * and exits 0 before forking.  Each child sleeps a
 * random jitter, connects, sends "client <i>\n", waits for "ok\n", then sends
 * 3 messages "c<i> m<j>\n" with jitter in between and closes.  The parent
 * accepts 3 times (reading each client's first line and replying "ok\n"),
 * then reads from whichever connection poll() reports readable until all
 * three reached EOF.  It reaps the children and prints
 *     accepted: 2 1 3
 *     read from conn1: c2 m0\n
 *     ...
 *     eof on conn3
 * (connK = the K-th accepted connection).
 * Race: the accept order, which connection poll() reports, how the
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
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
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

static void fill_v6(struct sockaddr_in6 *a, int port)
{
    memset(a, 0, sizeof *a);
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_loopback;
    a->sin6_port = htons((unsigned short)port);
}

static void client(int port, int id)
{
    struct sockaddr_in6 a;
    char msg[64], reply[64];
    int fd, j;

    jitter_init();
    jitter();
    fd = socket(AF_INET6, SOCK_STREAM, 0);
    if (fd < 0)
        die("socket");
    fill_v6(&a, port);
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
    struct sockaddr_in6 a;
    socklen_t alen = sizeof a;
    int lfd, i, port, open_count = NCLIENTS;
    int conn[NCLIENTS], order[NCLIENTS];
    pid_t pids[NCLIENTS];

    setvbuf(stdout, NULL, _IOLBF, 0);
    jitter_init();
    lfd = socket(AF_INET6, SOCK_STREAM, 0);
    if (lfd < 0 && (errno == EAFNOSUPPORT || errno == EPROTONOSUPPORT)) {
        printf("ipv6 unavailable\n");
        return 0;
    }
    if (lfd < 0)
        die("socket");
    fill_v6(&a, 0);
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) < 0) {
        if (errno == EADDRNOTAVAIL || errno == EAFNOSUPPORT) {
            printf("ipv6 unavailable\n");
            return 0;
        }
        die("bind");
    }
    if (listen(lfd, 64) < 0)
        die("listen");
    if (getsockname(lfd, (struct sockaddr *)&a, &alen) < 0)
        die("getsockname");
    port = ntohs(a.sin6_port);
    for (i = 0; i < NCLIENTS; i++) {
        pids[i] = fork_or_die();
        if (pids[i] == 0) {
            if (close(lfd) < 0)
                die("close");
            client(port, i + 1);
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
