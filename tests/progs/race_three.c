/*
 * race_three: one select() over three senders: which of them does it report?
 *
 * The parent makes three listening sockets (one per child, so that no accept
 * has a choice: no accept race) and forks 3 children.  Child i (1..3)
 * connects to listener i, sleeps a random jitter and sends the 3 bytes
 * "c<i>\n", then waits for EOF and exits.  The parent accepts the 3
 * connections (in child order), does ONE select() over the three, reads the
 * message of every reported connection (recv MSG_WAITALL, 3 bytes), then
 * reads the others with blocking recv in child order, closes everything and
 * reaps the children.  It prints
 *     reported: c2 c3
 *     order: c2 c3 c1
 * Race (exactly one, paper 004's <r, M> with |M| = 3): which connections the
 * select reports.  It is the receiver's first (locally-first) race and no
 * other race affects it (unaffected).
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
#include <sys/select.h>

#define N 3
#define MSG 3

static void child(int port, int id)
{
    char msg[MSG + 1], buf[16];
    int fd;

    jitter_init();
    fd = connect_to(port);
    jitter();
    snprintf(msg, sizeof msg, "c%d\n", id);
    write_all(fd, msg, MSG);
    while (read(fd, buf, sizeof buf) > 0)
        ;
    exit(0);
}

static void recv_msg(int fd, char *buf)
{
    ssize_t n = recv(fd, buf, MSG, MSG_WAITALL);

    if (n < 0)
        die("recv");
    if (n != MSG)
        fail("short message");
    buf[MSG - 1] = '\0';
}

int main(void)
{
    int lfd[N], port[N], conn[N], done[N] = {0}, i, maxfd = -1;
    pid_t pids[N];
    char got[N][MSG + 1], order[64] = "", reported[64] = "";
    fd_set rfds;

    setvbuf(stdout, NULL, _IOLBF, 0);
    jitter_init();
    for (i = 0; i < N; i++)
        lfd[i] = bind_any(&port[i], 1);
    for (i = 0; i < N; i++) {
        pids[i] = fork_or_die();
        if (pids[i] == 0)
            child(port[i], i + 1);
    }
    for (i = 0; i < N; i++) {
        conn[i] = accept_one(lfd[i]);
        if (conn[i] >= FD_SETSIZE)
            fail("fd too large for select");
        if (conn[i] > maxfd)
            maxfd = conn[i];
    }
    FD_ZERO(&rfds);
    for (i = 0; i < N; i++)
        FD_SET(conn[i], &rfds);
    while (select(maxfd + 1, &rfds, NULL, NULL, NULL) < 0) {
        if (errno != EINTR)
            die("select");
    }
    for (i = 0; i < N; i++) {
        if (!FD_ISSET(conn[i], &rfds))
            continue;
        recv_msg(conn[i], got[i]);
        done[i] = 1;
        strcat(reported, " ");
        strcat(reported, got[i]);
        strcat(order, " ");
        strcat(order, got[i]);
    }
    for (i = 0; i < N; i++) {
        if (done[i])
            continue;
        recv_msg(conn[i], got[i]);
        strcat(order, " ");
        strcat(order, got[i]);
    }
    for (i = 0; i < N; i++) {
        if (close(conn[i]) < 0 || close(lfd[i]) < 0)
            die("close");
    }
    for (i = 0; i < N; i++)
        wait_ok(pids[i]);
    printf("reported:%s\n", reported);
    printf("order:%s\n", order);
    return 0;
}
