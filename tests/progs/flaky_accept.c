/*
 * flaky_accept: a "test" that fails now and then because of an accept race.
 *
 * The parent listens on 127.0.0.1 and forks N clients (N = argv[1], default 10). Each
 * waits until every client is forked (the end of a pipe the parent closes after the last
 * fork: how long a fork takes, longer under ddbx, gives the first forked no head start),
 * sleeps a random jitter (DDBX_JITTER), connects, sends "client <i>\n", waits for "ok\n"
 * and exits. The parent accepts them all and publishes which client came first (probe
 * `first`, see ddbx.h). Its bug: it assumes the last client forked (N) is never accepted
 * first. When it is, MODE (argv[2]) says what happens:
 *     exit   (default) prints "bug: client N came first" on stderr and exits 1;
 *     abort  the same, then abort(): killed by SIGABRT;
 *     quiet  nothing: exits 0 (only the probe tells; for `--fail-if 'first == N'`).
 * Otherwise (and in quiet mode) it prints "accepted: 3 1 …" after reaping its children and
 * exits 0. Race: the accept order; the failure shows in about 1 run in N natively with
 * DDBX_JITTER=5.
 */
#include "common.h" /* the helpers every test program shares */
#include "ddbx.h"

#define MAX_CLIENTS 64

int main(int argc, char **argv)
{
    int n = 10, port, lfd, i, fd, start[2];
    char c;
    int order[MAX_CLIENTS];
    pid_t pids[MAX_CLIENTS];
    const char *mode = argc > 2 ? argv[2] : "exit";

    if (argc > 1) {
        n = atoi(argv[1]);
        if (n < 1 || n > MAX_CLIENTS)
            fail("usage: flaky_accept [N (1..64)] [exit|abort|quiet]");
    }
    if (strcmp(mode, "exit") != 0 && strcmp(mode, "abort") != 0 && strcmp(mode, "quiet") != 0)
        fail("usage: flaky_accept [N (1..64)] [exit|abort|quiet]");
    program_start();
    lfd = bind_any(&port, 1);
    if (pipe(start) < 0)
        die("pipe");
    i = fork_clients(lfd, n, pids);
    if (i > 0) {
        close_or_die(start[1]);
        if (read(start[0], &c, 1) != 0) /* the end: every client is forked */
            fail("client: unexpected byte on the start pipe");
        close_or_die(start[0]);
        client_start();
        fd = connect_to(port);
        client_hello(fd, i);
        close_or_die(fd);
        exit(0);
    }
    close_or_die(start[0]);
    close_or_die(start[1]);
    for (i = 0; i < n; i++)
        close_or_die(accept_hello(lfd, n, &order[i]));
    close_or_die(lfd);
    wait_all_ok(pids, n);
    ddbx_set("first", order[0]);
    if (order[0] == n && strcmp(mode, "quiet") != 0) {
        fprintf(stderr, "bug: client %d came first\n", n);
        if (strcmp(mode, "abort") == 0)
            abort();
        return 1;
    }
    print_order("accepted:", order, n);
    return 0;
}
