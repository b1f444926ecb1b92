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
#include "common.h" /* the helpers every test program shares */

#define MAX_CLIENTS 64

int main(int argc, char **argv)
{
    int n = 2, port, lfd, i, fd;
    int order[MAX_CLIENTS];
    pid_t pids[MAX_CLIENTS];

    if (argc > 1) {
        n = atoi(argv[1]);
        if (n < 1 || n > MAX_CLIENTS)
            fail("usage: accept_race [N (1..64)]");
    }
    program_start();
    lfd = bind_any(&port, 1);
    i = fork_clients(lfd, n, pids);
    if (i > 0) {
        client_start();
        fd = connect_to(port);
        client_hello(fd, i);
        close_or_die(fd);
        exit(0);
    }
    for (i = 0; i < n; i++)
        close_or_die(accept_hello(lfd, n, &order[i]));
    close_or_die(lfd);
    wait_all_ok(pids, n);
    print_order("accepted:", order, n);
    return 0;
}
