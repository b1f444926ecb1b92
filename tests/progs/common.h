/*
 * common.h: the helpers every test program in tests/progs shares (jitter from DDBX_JITTER,
 * die/fail, connect and accept helpers, exact reads and writes, escaping, child reaping).
 * They are the Figure 1 example's own helpers, kept in one place: examples/figure1/figure1.h
 * (which also has the example's port-file helpers; everything there is `static` and marked
 * UNUSED, so a program that uses only part of it builds with -Wall -Wextra -Werror).
 */
#ifndef DDBX_TEST_PROGS_COMMON_H
#define DDBX_TEST_PROGS_COMMON_H

#include "../../examples/figure1/figure1.h"

/* ---- chunked streams (partial_reads, fd_passing) ---- */

#define CHUNKS 20     /* writes per chunk client */
#define CHUNK 10      /* bytes per write */
#define MAXREADS (CHUNKS * CHUNK)

/* Connect to 127.0.0.1:port, write CHUNKS chunks of CHUNK bytes ("chunk NN\n\0") with a
 * jitter between them, close, exit. */
static UNUSED void chunk_client(int port)
{
    int fd, j;

    jitter_init();
    fd = connect_to(port);
    for (j = 0; j < CHUNKS; j++) {
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

/* Read fd with a 4096-byte buffer until EOF, a jitter before each read; the size of every read
 * goes to sizes (room for MAXREADS); returns how many reads there were. */
static UNUSED int read_chunks(int fd, size_t *sizes)
{
    int nreads = 0;

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
            return nreads;
        if (nreads >= MAXREADS)
            fail("more reads than bytes?");
        sizes[nreads++] = (size_t)n;
    }
}

/* Print "read N" per read, then "total T"; fail unless all CHUNKS * CHUNK bytes came. */
static UNUSED void report_chunks(const size_t *sizes, int nreads)
{
    size_t total = 0;
    int i;

    for (i = 0; i < nreads; i++) {
        printf("read %zu\n", sizes[i]);
        total += sizes[i];
    }
    printf("total %zu\n", total);
    if (total != CHUNKS * CHUNK)
        fail("wrong total");
}

#endif
