/*
 * partial_reads [peek|mmsg|dup]: how many bytes does each read() return?
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
 *
 * With "peek", each read is a recv(MSG_PEEK) followed by a recvmsg() into two buffers (3 and
 * 4093 bytes) that must start with the peeked bytes; it prints "peek K read N". With "mmsg",
 * each read is a recvmmsg() of one message into those two buffers. With "dup", the reads
 * alternate between the connection's fd and a dup() of it (one open file, two numbers). All
 * three check that the bytes are the client's, in order.
 */
#include "common.h" /* the helpers every test program shares */

/* The client's stream, as chunk_client writes it: byte `at` of it. */
static char chunk_byte(size_t at)
{
    char msg[CHUNK + 1];

    snprintf(msg, sizeof msg, "chunk %02d\n", (int)(at / CHUNK) % 100);
    return msg[at % CHUNK];
}

/* One receive into two buffers (3 and 4093 bytes) with recvmsg, or recvmmsg when mmsg; dies on
 * an error. Returns the bytes received, gathered into out. */
static size_t receive_two_parts(int fd, int mmsg, char *out)
{
    struct iovec iov[2] = {{out, 3}, {out + 3, 4093}};
    struct mmsghdr m;
    ssize_t n;

    memset(&m, 0, sizeof m);
    m.msg_hdr.msg_iov = iov;
    m.msg_hdr.msg_iovlen = 2;
    if (mmsg) {
        n = recvmmsg(fd, &m, 1, 0, NULL);
        n = n == 1 ? (ssize_t)m.msg_len : -1;
    } else {
        n = recvmsg(fd, &m.msg_hdr, 0);
    }
    if (n < 0)
        die(mmsg ? "recvmmsg" : "recvmsg");
    return (size_t)n;
}

/* Reads fd until EOF with peeks, recvmmsg or through a dup (see the top), printing each read;
 * checks the bytes. */
static void read_other_ways(int fd, const char *way)
{
    int peek = strcmp(way, "peek") == 0, other = fd, reads = 0;
    size_t total = 0;
    char buf[4096], peeked[4096];

    if (strcmp(way, "dup") == 0 && (other = dup(fd)) < 0)
        die("dup");
    for (;;) {
        ssize_t k = 0;
        size_t n, i;

        jitter();
        if (peek && (k = recv(fd, peeked, sizeof peeked, MSG_PEEK)) < 0)
            die("recv MSG_PEEK");
        if (other != fd) {
            ssize_t r = read(reads++ % 2 ? other : fd, buf, sizeof buf);

            if (r < 0)
                die("read");
            n = (size_t)r;
        } else {
            n = receive_two_parts(fd, !peek, buf);
        }
        if (n < (size_t)k || memcmp(buf, peeked, (size_t)k) != 0)
            fail("the read does not start with the peeked bytes");
        for (i = 0; i < n; i++)
            if (buf[i] != chunk_byte(total + i))
                fail("a byte out of order");
        if (peek)
            printf("peek %zd read %zu\n", k, n);
        else
            printf("read %zu\n", n);
        total += n;
        if (n == 0)
            break;
    }
    printf("total %zu\n", total);
    if (total != CHUNKS * CHUNK)
        fail("wrong total");
    if (other != fd)
        close_or_die(other);
}

int main(int argc, char **argv)
{
    int fd, nreads;
    size_t sizes[MAXREADS];
    pid_t pid;

    program_start();
    fd = accept_child(chunk_client, &pid);
    if (argc > 1) {
        if (strcmp(argv[1], "peek") != 0 && strcmp(argv[1], "mmsg") != 0 &&
            strcmp(argv[1], "dup") != 0)
            fail("usage: partial_reads [peek|mmsg|dup]");
        read_other_ways(fd, argv[1]);
        close_or_die(fd);
        wait_ok(pid);
        return 0;
    }
    nreads = read_chunks(fd, sizes);
    close_or_die(fd);
    wait_ok(pid);
    report_chunks(sizes, nreads);
    return 0;
}
