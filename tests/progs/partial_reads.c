/*
 * partial_reads: how many bytes does each read() return?
 *
 * The parent listens and forks one child, which connects and does 20
 * writes of 10 bytes each (random jitter between them with DDBX_JITTER,
 * back to back without), then closes.  The parent reads with a 4096-byte
 * buffer until EOF (with DDBX_JITTER, it also sleeps a random jitter before
 * each read, so that writes pile up in the receive buffer in varying
 * numbers) and, after reaping the child, prints the size of every
 * read, then the total:
 *     read 30
 *     read 10
 *     ...
 *     total 200
 * Race: the read sizes (vary natively with DDBX_JITTER=1 or 2).
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

#define NWRITES 20
#define CHUNK 10
#define MAXREADS (NWRITES * CHUNK)

static void client(int port)
{
    int fd, j;

    jitter_init();
    fd = connect_to(port);
    for (j = 0; j < NWRITES; j++) {
        char msg[CHUNK + 1];
        if (j > 0)
            jitter();
        snprintf(msg, sizeof msg, "chunk %02d\n", j); /* exactly 9 chars + '\n' */
        write_all(fd, msg, CHUNK);
    }
    if (close(fd) < 0)
        die("close");
    exit(0);
}

int main(void)
{
    int port, lfd, fd, i, nreads = 0;
    size_t sizes[MAXREADS], total = 0;
    pid_t pid;

    setvbuf(stdout, NULL, _IOLBF, 0);
    jitter_init();
    lfd = bind_any(&port, 1);
    pid = fork_or_die();
    if (pid == 0) {
        if (close(lfd) < 0)
            die("close");
        client(port);
    }
    fd = accept_one(lfd);
    if (close(lfd) < 0)
        die("close");
    for (;;) {
        char buf[4096];
        ssize_t n;

        jitter();
        n = read(fd, buf, sizeof buf);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("read");
        }
        if (n == 0)
            break;
        if (nreads >= MAXREADS)
            fail("more reads than bytes?");
        sizes[nreads++] = (size_t)n;
        total += (size_t)n;
    }
    if (close(fd) < 0)
        die("close");
    wait_ok(pid);
    for (i = 0; i < nreads; i++)
        printf("read %zu\n", sizes[i]);
    printf("total %zu\n", total);
    if (total != NWRITES * CHUNK)
        fail("wrong total");
    return 0;
}
