/*
 * bench_selectloop [CLIENTS [MESSAGES [SIZE]]]: a race-heavy workload for the tracing benchmark
 * (BENCHMARKS.md, ddbx/benches/tracing.rs): many clients to one select loop.
 *
 * The parent listens on loopback TCP and forks CLIENTS (default 16, at most 64) children; each
 * connects and sends MESSAGES (default 200) messages of SIZE (default 32) bytes, then closes.
 * The parent accepts them all, then loops on select() over the open connections and, for the
 * lowest readable one, receives one whole message (looping on short reads) or sees its end of
 * stream, until every connection ended.  It prints "ok <messages>" (the output has no race;
 * the order of receives does).  Exit status 0 on success, 1 on any error.
 * The helpers it takes from common.h (like every test program) make the calls it would
 * make written out, in the same order: they cost nothing in what is measured.
 */
#include "common.h" /* the helpers every test program shares */

#define MAX_CLIENTS 64
#define MAX_SIZE 1024

/* Arguments read as bench_pipeline reads its own (the same shape with other names and bounds:
 * three optional numbers with defaults; a shared helper would not be shorter). */
int main(int argc, char **argv)
{
    int clients = argc > 1 ? atoi(argv[1]) : 16;
    long messages = argc > 2 ? atol(argv[2]) : 200;
    size_t size = argc > 3 ? (size_t)atol(argv[3]) : 32;
    unsigned char buf[MAX_SIZE];
    int conns[MAX_CLIENTS], ready[MAX_CLIENTS];
    pid_t pids[MAX_CLIENTS];
    int lfd, port, i;

    if (clients < 1 || clients > MAX_CLIENTS || messages < 1 || size < 1 || size > MAX_SIZE) {
        fprintf(stderr, "usage: bench_selectloop [CLIENTS(1..64) [MESSAGES [SIZE(1..1024)]]]\n");
        return 1;
    }
    lfd = bind_any(&port, 1);
    i = fork_clients(lfd, clients, pids);
    if (i > 0) {
        int fd = connect_to(port);

        memset(buf, 'a' + (i - 1) % 26, size);
        for (long m = 0; m < messages; m++)
            send_all(fd, buf, size);
        close(fd);
        return 0;
    }
    for (i = 0; i < clients; i++)
        conns[i] = accept_one(lfd);
    long got = 0;
    int open = clients;
    while (open > 0) {
        if (!wait_select(conns, clients, ready))
            continue;
        for (i = 0; i < clients && !ready[i]; i++)
            ;
        if (i == clients)
            continue;
        /* The lowest readable connection: one whole message, or its end. */
        size_t done = recv_all(conns[i], buf, size);
        if (done == 0) {
            close(conns[i]);
            conns[i] = -1;
            open--;
        } else if (done == size) {
            got++;
        } else {
            fprintf(stderr, "a message cut short\n");
            return 1;
        }
    }
    wait_all_ok(pids, clients);
    printf("ok %ld\n", got);
    return 0;
}
