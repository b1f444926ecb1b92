/*
 * load_poll [CLIENTS [MESSAGES [waitall]]]: a poll server under load (issue #11: "replay hangs
 * under load"). CLIENTS (default 4) forked clients each connect and send MESSAGES (default
 * 5000) messages of 16 bytes, one write() each with TCP_NODELAY (many small segments), then
 * close. The server accepts them all, then loops on poll() and does one read() of up to 64 KiB
 * on each readable connection until every connection reached EOF; it checks that each client's
 * bytes came whole and in order. It prints the number of reads and a hash of the sequence of
 * (connection, bytes) of every read: which connection poll() reported and how the bytes were
 * split into reads differ from run to run.
 *
 * Small segments fill a socket's receive memory long before its byte count is large, so a
 * replay that waits in the kernel for a recorded read's bytes can wait for ever. With
 * "waitall" that is certain: the connections' receive buffers are 8 KiB (SO_RCVBUF on the
 * listening socket) and each read is a recv(MSG_WAITALL) of 64 KiB, which the kernel fills as
 * the bytes arrive but can never hold at once.
 */
#include "common.h" /* the helpers every test program shares */

/* 255 clients and the server: 256 processes. */
#define MAXCLIENTS 255
#define MSG 16

/* A client: MESSAGES messages "c<id> <n>" padded to 16 bytes, one write() each. */
static void load_client(int port, int id, int messages)
{
    int fd = connect_to(port), one = 1, j;
    char msg[32];

    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
        die("setsockopt");
    for (j = 0; j < messages; j++) {
        snprintf(msg, sizeof msg, "c%02d %010d\n", id % 100, j % 1000000000);
        write_all(fd, msg, MSG);
    }
    close_or_die(fd);
    exit(0);
}

/* Checks that `n` bytes of client `id` starting at stream offset `off` are its messages. */
static void check(int id, long off, const char *buf, ssize_t n)
{
    char want[32];
    ssize_t i;

    for (i = 0; i < n; i++) {
        long at = off + i;
        snprintf(want, sizeof want, "c%02d %010ld\n", id % 100, (at / MSG) % 1000000000);
        if (buf[i] != want[at % MSG])
            fail("a client's bytes came out of order");
    }
}

int main(int argc, char **argv)
{
    int clients = argc > 1 ? atoi(argv[1]) : 4, messages = argc > 2 ? atoi(argv[2]) : 5000;
    int waitall = argc > 3 && strcmp(argv[3], "waitall") == 0, rcvbuf = 4096;
    int conn[MAXCLIENTS], ids[MAXCLIENTS], port, lfd, i, open_count, id;
    long got[MAXCLIENTS];
    unsigned long hash = 5381, reads = 0;
    pid_t pids[MAXCLIENTS];
    static char buf[65536];

    if (clients < 1 || clients > MAXCLIENTS || messages < 1)
        fail("usage: load_poll [CLIENTS (1..255) [MESSAGES [waitall]]]");
    program_start();
    lfd = bind_any(&port, 0);
    /* Every client may connect before the first accept. */
    if (listen(lfd, SOMAXCONN) < 0)
        die("listen");
    if (waitall && setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) < 0)
        die("setsockopt SO_RCVBUF");
    id = fork_clients(lfd, clients, pids);
    if (id > 0) {
        client_start();
        load_client(port, id, messages);
    }
    for (i = 0; i < clients; i++) {
        /* Which client is on which connection: the first message says (read it whole). */
        char first[MSG];

        conn[i] = accept_one(lfd);
        if (recv_waitall(conn[i], first, MSG) != MSG || sscanf(first, "c%d", &ids[i]) != 1)
            fail("no first message");
        check(ids[i], 0, first, MSG);
        got[i] = MSG;
    }
    close_or_die(lfd);
    for (open_count = clients; open_count > 0;) {
        struct pollfd pfd[MAXCLIENTS];

        for (i = 0; i < clients; i++) {
            pfd[i].fd = conn[i];
            pfd[i].events = POLLIN;
        }
        if (poll(pfd, (nfds_t)clients, -1) < 0) {
            if (errno == EINTR)
                continue;
            die("poll");
        }
        for (i = 0; i < clients; i++) {
            ssize_t n;

            if (conn[i] < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            n = waitall ? recv(conn[i], buf, sizeof buf, MSG_WAITALL) : read(conn[i], buf, sizeof buf);
            if (n < 0)
                die("read");
            reads++;
            hash = (hash * 33 + (unsigned long)i) * 33 + (unsigned long)n;
            if (n == 0) {
                close_or_die(conn[i]);
                conn[i] = -1;
                open_count--;
                continue;
            }
            check(ids[i], got[i], buf, n);
            got[i] += n;
        }
    }
    wait_all_ok(pids, clients);
    for (i = 0; i < clients; i++)
        if (got[i] != (long)messages * MSG)
            fail("a client's bytes are missing");
    printf("%d clients x %d messages: %lu reads, hash %lx\n", clients, messages, reads, hash);
    return 0;
}
