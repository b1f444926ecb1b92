/*
 * accept_race: which client's connection does accept() return first?
 *
 * The parent listens on 127.0.0.1 (kernel-chosen port) and forks N client
 * children (N = argv[1], default 2).  Each child sleeps a random jitter,
 * connects, sends "client <i>\n", waits for the "ok\n" reply and exits.
 * The parent accepts N times, reads each message, replies "ok\n" and records
 * the order.  After reaping all children it prints
 *     accepted: 2 1
 * Race: the accept order (varies natively with DDBX_JITTER=5).
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

#define MAX_CLIENTS 64

static void client(int port, int id)
{
    char msg[64], reply[64];
    int fd;

    jitter_init();
    jitter();
    fd = connect_to(port);
    snprintf(msg, sizeof msg, "client %d\n", id);
    write_str(fd, msg);
    read_line(fd, reply, sizeof reply);
    if (strcmp(reply, "ok\n") != 0)
        fail("client: unexpected reply");
    if (close(fd) < 0)
        die("close");
    exit(0);
}

int main(int argc, char **argv)
{
    int n = 2, port, lfd, i;
    int order[MAX_CLIENTS];
    pid_t pids[MAX_CLIENTS];

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1) {
        n = atoi(argv[1]);
        if (n < 1 || n > MAX_CLIENTS)
            fail("usage: accept_race [N (1..64)]");
    }
    jitter_init();
    lfd = bind_any(&port, 1);
    for (i = 0; i < n; i++) {
        pids[i] = fork_or_die();
        if (pids[i] == 0) {
            if (close(lfd) < 0)
                die("close");
            client(port, i + 1);
        }
    }
    for (i = 0; i < n; i++) {
        char buf[64];
        int fd = accept_one(lfd), id;

        read_line(fd, buf, sizeof buf);
        if (sscanf(buf, "client %d", &id) != 1 || id < 1 || id > n)
            fail("server: bad message");
        order[i] = id;
        write_str(fd, "ok\n");
        if (close(fd) < 0)
            die("close");
    }
    if (close(lfd) < 0)
        die("close");
    for (i = 0; i < n; i++)
        wait_ok(pids[i]);
    printf("accepted:");
    for (i = 0; i < n; i++)
        printf(" %d", order[i]);
    printf("\n");
    return 0;
}
