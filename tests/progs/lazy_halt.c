/*
 * lazy_halt: an RPC server and three kinds of processes around it, for halting a live run
 * (`ddbx run --break-if`, paper 001's lazy halting).
 *
 * The parent (the server) listens on 127.0.0.1 and forks, in this order:
 *
 *   1. a heartbeat client: connects, then sends one byte every 20 ms, 150 times (3 s), and
 *      reads nothing; it interacts with the server all the time;
 *   2. a bystander: forks a child of its own and ping-pongs 200 bytes with it over a
 *      socketpair, then both exit; neither ever talks to the server;
 *   3. a timed client: connects, sends "T" and waits for the reply with a 1-second receive
 *      timeout (SO_RCVTIMEO); on a timeout it prints "timed client: timed out" and exits 1,
 *      else "timed client: got reply".
 *
 * The server serves both connections with poll: it counts the heartbeat bytes until EOF, and
 * answers "T" with "R" right after publishing the probe `asked` = 1 (ddbx.h): `ddbx run
 * --break-if 'p1.asked == 1'` stops the server there, before its answer. It prints
 * "server: asked" (flushed) when the request came, then, at the end, "server: N heartbeats"
 * and exits 0 if every child exited 0, else 1. With LAZY_HALT_PAUSE_MS=N the server stands
 * still for N ms before it answers (what a native debugger's breakpoint there would do): with
 * N > 1000 the timed client times out. Halting it live does not make it time out: its timeout
 * counts virtual time.
 */
#include "common.h" /* the helpers every test program shares */
#include "ddbx.h"

static void heartbeat(int port)
{
    int fd = connect_to(port), i;

    for (i = 0; i < 150; i++) {
        write_all(fd, "h", 1);
        usleep(20 * 1000);
    }
    close_or_die(fd);
    exit(0);
}

static void bystander(void)
{
    int sv[2], i;
    char c = 'b';
    pid_t child = fork_on_pair(sv);

    for (i = 0; i < 200; i++) {
        if (child == 0) {
            if (read_retry(sv[1], &c, 1) != 1)
                fail("bystander child: read");
            write_all(sv[1], &c, 1);
        } else {
            write_all(sv[0], &c, 1);
            if (read_retry(sv[0], &c, 1) != 1)
                fail("bystander: read");
        }
    }
    if (child != 0)
        wait_ok(child);
    exit(0);
}

static void timed(int port)
{
    struct timeval tv = {1, 0};
    int fd = connect_to(port);
    char c;

    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0)
        die("setsockopt");
    write_all(fd, "T", 1);
    if (recv(fd, &c, 1, 0) != 1) {
        printf("timed client: timed out\n");
        exit(1);
    }
    printf("timed client: got reply\n");
    close_or_die(fd);
    exit(0);
}

int main(void)
{
    int port, lfd, conn[2], open_conns = 2, beats = 0, failed = 0, i;
    pid_t pids[3];
    struct pollfd p[2];

    program_start();
    lfd = bind_any(&port, 1);
    for (i = 0; i < 3; i++) {
        pids[i] = fork_or_die();
        if (pids[i] == 0) {
            close_or_die(lfd);
            if (i == 0)
                heartbeat(port);
            if (i == 1)
                bystander();
            timed(port);
        }
    }
    conn[0] = accept_one(lfd);
    conn[1] = accept_one(lfd);
    close_or_die(lfd);
    while (open_conns > 0) {
        for (i = 0; i < 2; i++) {
            p[i].fd = conn[i];
            p[i].events = POLLIN;
        }
        if (poll(p, 2, -1) < 0)
            die("poll");
        for (i = 0; i < 2; i++) {
            char buf[64];
            ssize_t n;

            if (conn[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP)))
                continue;
            n = read(conn[i], buf, sizeof buf);
            if (n < 0)
                die("read");
            if (n == 0) {
                close_or_die(conn[i]);
                conn[i] = -1;
                open_conns--;
                continue;
            }
            if (buf[0] == 'T') {
                printf("server: asked\n");
                ddbx_set("asked", 1);
                if (getenv("LAZY_HALT_PAUSE_MS"))
                    usleep((useconds_t)atoi(getenv("LAZY_HALT_PAUSE_MS")) * 1000);
                write_all(conn[i], "R", 1);
            } else {
                beats += (int)n;
            }
        }
    }
    for (i = 0; i < 3; i++)
        failed |= wait_status(pids[i]) != 0;
    printf("server: %d heartbeats\n", beats);
    return failed;
}
