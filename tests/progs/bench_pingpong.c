/*
 * bench_pingpong [ROUNDS [SIZE]]: the overhead benchmark's ping-pong (see
 * BENCHMARKS.md and ddbx/benches/overhead.rs).
 *
 * The parent listens on 127.0.0.1 (kernel-chosen port) and forks a child
 * that connects.  They then do ROUNDS (default 100000) round trips of SIZE
 * (default 64, at most 65536) bytes: the child sends SIZE bytes, the parent
 * receives all of them and sends SIZE bytes back, the child receives all of
 * them.  Blocking send()/recv(), TCP_NODELAY on both ends; each side loops
 * until the full SIZE has been sent / received, so partial transfers are
 * fine.  The parent checks the last byte of every message (the round number
 * modulo 256), reaps the child and prints "ok".  No race in the output; no
 * jitter.  Exit status 0 on success, 1 on any error (message on stderr).
 * The helpers it takes from common.h (like every test program) make the calls it would
 * make written out, in the same order: they cost nothing in what is measured.
 */
#include "common.h" /* the helpers every test program shares */

#define MAX_SIZE 65536

static unsigned char buf[MAX_SIZE];

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
    long size = argc > 2 ? strtol(argv[2], NULL, 10) : 64;
    int lfd, fd, port;
    pid_t child;
    long i;

    if (rounds < 0 || size < 1 || size > MAX_SIZE)
        fail("usage: bench_pingpong [ROUNDS [SIZE]] (SIZE 1..65536)");

    lfd = bind_any(&port, 1);
    fflush(stdout);
    if (fork_clients(lfd, 1, &child)) {
        fd = connect_to(port);
        nodelay(fd);
        for (i = 0; i < rounds; i++) {
            memset(buf, (int)(i & 0xff), (size_t)size);
            send_all(fd, buf, (size_t)size);
            if (recv_all(fd, buf, (size_t)size) != (size_t)size)
                fail("unexpected EOF");
            if (buf[size - 1] != (unsigned char)(i & 0xff))
                fail("child: wrong reply");
        }
        close_or_die(fd);
        _exit(0);
    }

    fd = accept_last(lfd);
    nodelay(fd);
    for (i = 0; i < rounds; i++) {
        if (recv_all(fd, buf, (size_t)size) != (size_t)size)
            fail("unexpected EOF");
        if (buf[size - 1] != (unsigned char)(i & 0xff))
            fail("parent: wrong message");
        send_all(fd, buf, (size_t)size);
    }
    close_or_die(fd);
    wait_ok(child);
    printf("ok\n");
    return 0;
}
