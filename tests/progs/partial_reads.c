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

int main(void)
{
    int port, lfd, fd, nreads;
    size_t sizes[MAXREADS];
    pid_t pid;

    setvbuf(stdout, NULL, _IOLBF, 0);
    jitter_init();
    lfd = bind_any(&port, 1);
    pid = fork_or_die();
    if (pid == 0) {
        if (close(lfd) < 0)
            die("close");
        chunk_client(port);
    }
    fd = accept_one(lfd);
    if (close(lfd) < 0)
        die("close");
    nreads = read_chunks(fd, sizes);
    if (close(fd) < 0)
        die("close");
    wait_ok(pid);
    report_chunks(sizes, nreads);
    return 0;
}
