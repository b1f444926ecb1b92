/*
 * connect_nonblock MODE: how many non-blocking connects are refused before the server
 * listens, learning each outcome the way C client libraries do (issue #10, class 2):
 *     sockopt   poll for POLLOUT, then getsockopt(SO_ERROR) (libpq, curl)
 *     again     poll for POLLOUT, then connect() again on the same socket: ECONNREFUSED, or
 *               0/EISCONN once connected (hiredis; the second call is class 12)
 *
 * The parent binds 127.0.0.1 port 0 without listening and forks a client. The client loops:
 * socket(), O_NONBLOCK, connect() (EINPROGRESS), poll(POLLOUT) and the MODE's check; when
 * refused it closes, counts, sleeps 1 ms and tries again (at most 5000 times). Connected, it
 * makes the socket blocking again, sends "refused <N> times [<revents>]\n" (revents of its last
 * poll, as "out|err|hup") and waits for EOF. The parent sleeps a random jitter, listens,
 * accepts, reads the message and, after reaping the client, prints
 *     child was refused 4 times [out] (first refusal seen as out|err|hup)
 * Race: N (>= 0; varies natively with DDBX_JITTER=20).
 */
#include "common.h" /* the helpers every test program shares */

#define MAX_TRIES 5000

/* poll revents as "out|err|hup". */
static void revents_text(short ev, char *out, size_t cap)
{
    snprintf(out, cap, "%s%s%s%s", ev & POLLOUT ? "out" : "", ev & POLLERR ? "|err" : "",
             ev & POLLHUP ? "|hup" : "", ev ? "" : "none");
}

/* Connects non-blocking; returns the socket once connected, -1 after a refusal (closed).
 * *ev: the revents of the poll. */
static int try_connect(const struct sockaddr_in *a, int by_sockopt, short *ev)
{
    struct pollfd p;
    int fd = socket(AF_INET, SOCK_STREAM, 0), err = 0;
    socklen_t len = sizeof err;

    if (fd < 0)
        die("socket");
    set_nonblock(fd);
    if (connect(fd, (const struct sockaddr *)a, sizeof *a) == 0)
        return fd;
    if (errno != EINPROGRESS)
        die("connect");
    p.fd = fd;
    p.events = POLLOUT;
    p.revents = 0;
    if (poll(&p, 1, 5000) != 1)
        die("poll");
    *ev = p.revents;
    if (by_sockopt) {
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            die("getsockopt");
    } else if (connect(fd, (const struct sockaddr *)a, sizeof *a) < 0 && errno != EISCONN) {
        err = errno;
    }
    if (err == 0)
        return fd;
    if (err != ECONNREFUSED) {
        errno = err;
        die("connect outcome");
    }
    close_or_die(fd);
    return -1;
}

static void client(int port, int by_sockopt)
{
    struct sockaddr_in a;
    char msg[128], first[32] = "", last[32];
    int fd, refused = 0;
    short ev = 0;

    jitter_init();
    fill_addr(&a, port);
    while ((fd = try_connect(&a, by_sockopt, &ev)) < 0) {
        if (refused == 0)
            revents_text(ev, first, sizeof first);
        if (++refused >= MAX_TRIES)
            fail("refused too often");
        if (usleep(1000) < 0)
            die("usleep");
    }
    revents_text(ev, last, sizeof last);
    if (fcntl(fd, F_SETFL, 0) < 0)
        die("fcntl");
    snprintf(msg, sizeof msg, "refused %d times [%s] (first refusal seen as %s)\n", refused,
             last, refused ? first : "-");
    send_line_and_exit(fd, msg);
}

int main(int argc, char **argv)
{
    int port, lfd, fd, by_sockopt;
    char buf[160];
    pid_t pid;

    if (argc != 2 || (strcmp(argv[1], "sockopt") && strcmp(argv[1], "again")))
        fail("usage: connect_nonblock sockopt|again");
    by_sockopt = strcmp(argv[1], "sockopt") == 0;
    program_start();
    lfd = bind_any(&port, 0); /* bound, not listening: connects are refused */
    if (fork_clients(lfd, 1, &pid))
        client(port, by_sockopt);
    jitter();
    if (listen(lfd, 16) < 0)
        die("listen");
    fd = accept_last(lfd);
    read_line(fd, buf, sizeof buf);
    if (strncmp(buf, "refused ", 8) != 0)
        fail("bad message");
    close_or_die(fd);
    wait_ok(pid);
    printf("child was %s", buf);
    return 0;
}
