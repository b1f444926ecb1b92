/*
 * diverge: a deterministic program built in two variants, to check that
 * replaying a recording of one variant with the other binary is reported
 * as a divergence:
 *     gcc -O1 -Wall -Wextra -DVARIANT=1 -o diverge1 diverge.c
 *     gcc -O1 -Wall -Wextra -DVARIANT=2 -o diverge2 diverge.c
 *
 * The parent listens and forks a child, which connects, sends "a\n" and then
 * "b\n" (one send each), reads until EOF and exits with the number of bytes
 * it received.  The parent accepts; in VARIANT 2 only, it first sends
 * "extra\n" to the child (one system call more than VARIANT 1).  Then it
 * reads until it has the 4 bytes "a\nb\n", closes, reaps the child and
 * prints one line per read, then what the child got:
 *     read: a\nb\n                    (or "read: a\n" + "read: b\n")
 *     child got 0 bytes               (VARIANT 1; "6 bytes" in VARIANT 2)
 */
#include "common.h" /* the helpers every test program shares */

#ifndef VARIANT
#define VARIANT 1
#endif
#if VARIANT != 1 && VARIANT != 2
#error "VARIANT must be 1 or 2"
#endif

static void client(int port)
{
    char buf[256];
    size_t n;
    int fd;

    client_start();
    fd = connect_to(port);
    write_str(fd, "a\n");
    jitter();
    write_str(fd, "b\n");
    n = read_to_eof(fd, buf, sizeof buf);
    close_or_die(fd);
    exit(n > 255 ? 255 : (int)n);
}

int main(void)
{
    int fd, nreads = 0, i, st;
    char reads[4][5];
    size_t total = 0;
    pid_t pid;

    program_start();
    fd = accept_child(client, &pid);
#if VARIANT == 2
    write_str(fd, "extra\n");
#endif
    while (total < 4) {
        ssize_t n = read_retry(fd, reads[nreads], 4 - total);

        if (n == 0)
            fail("unexpected EOF");
        reads[nreads++][n] = '\0';
        total += (size_t)n;
    }
    close_or_die(fd);
    st = wait_status(pid);
    for (i = 0; i < nreads; i++) {
        char esc[4 * 4 + 1];
        escape(reads[i], strlen(reads[i]), esc);
        printf("read: %s\n", esc);
    }
    printf("child got %d bytes\n", st);
    return 0;
}
