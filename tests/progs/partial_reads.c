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
#include "common.h" /* the helpers every test program shares */

int main(void)
{
    int fd, nreads;
    size_t sizes[MAXREADS];
    pid_t pid;

    program_start();
    fd = accept_child(chunk_client, &pid);
    nreads = read_chunks(fd, sizes);
    close_or_die(fd);
    wait_ok(pid);
    report_chunks(sizes, nreads);
    return 0;
}
