/*
 * conn_churn [WORKERS [CONNS]]: many short-lived connections over one run (issue #11, "10,000
 * connections over a run"). WORKERS (default 4) forked clients each open CONNS (default 100)
 * connections one after the other: connect, send one 16-byte message "w<id> <k>", read the
 * server's reply to its end of stream, close. The server is one poll() loop over its listening
 * socket and its open connections: it accepts when the listening socket is readable, and when
 * a connection has brought its whole message it sends back the message's serial number in the
 * server's order ("<serial>\n") and closes first (so TIME_WAIT stays on the server's side and
 * no client runs out of ports). Each client checks every reply and sums the serials it got.
 *
 * Which client's connection is accepted next, and in which order messages complete, differ from
 * run to run: the server prints the number of connections and a hash of the sequence of
 * (worker, k) it served; each worker exits 0 only if its replies came whole. WORKERS=1 is the
 * sequential case (one connection at a time), larger values the concurrent one.
 */
#include "common.h" /* the helpers every test program shares */

#define MAXWORKERS 256
#define MSG 16
/* At most one connection per worker is waiting for its message; the ones the server closed
 * are gone. A worker may have connected again before the server accepted the last: twice
 * that, and the listening socket. */
#define SLOTS (2 * MAXWORKERS + 1)

/* A worker: CONNS connections one after the other. */
static void worker(int port, int id, int conns)
{
    char msg[32], reply[32];
    int k;

    client_start();
    for (k = 0; k < conns; k++) {
        int fd = connect_to(port);
        ssize_t n;
        size_t got = 0;

        snprintf(msg, sizeof msg, "w%03d %010d\n", id % 1000, k % 1000000000);
        write_all(fd, msg, MSG);
        while ((n = read_retry(fd, reply + got, sizeof reply - 1 - got)) > 0)
            got += (size_t)n;
        if (n < 0)
            die("read reply");
        reply[got] = '\0';
        if (got < 2 || reply[got - 1] != '\n' || atol(reply) < 1)
            fail("a reply came broken");
        close_or_die(fd);
    }
    exit(0);
}

int main(int argc, char **argv)
{
    int workers = argc > 1 ? atoi(argv[1]) : 4, conns = argc > 2 ? atoi(argv[2]) : 100;
    struct pollfd pfd[SLOTS];
    char msgs[SLOTS][MSG];
    size_t have[SLOTS];
    pid_t pids[MAXWORKERS];
    unsigned long hash = 5381;
    long total, served = 0;
    int port, lfd, id, i, used = 1;

    if (workers < 1 || workers > MAXWORKERS || conns < 1)
        fail("usage: conn_churn [WORKERS (1..256) [CONNS]]");
    total = (long)workers * conns;
    program_start();
    lfd = bind_any(&port, 0);
    if (listen(lfd, SOMAXCONN) < 0)
        die("listen");
    id = fork_clients(lfd, workers, pids);
    if (id > 0)
        worker(port, id, conns);
    pfd[0].fd = lfd;
    pfd[0].events = POLLIN;
    while (served < total) {
        if (poll(pfd, (nfds_t)used, -1) < 0) {
            if (errno == EINTR)
                continue;
            die("poll");
        }
        for (i = used - 1; i >= 1; i--) {
            ssize_t n;

            if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            n = read(pfd[i].fd, msgs[i] + have[i], MSG - have[i]);
            if (n <= 0)
                fail(n < 0 ? "read" : "a client closed before its message");
            have[i] += (size_t)n;
            if (have[i] == MSG) {
                char reply[32];
                int w, k;

                if (sscanf(msgs[i], "w%d %d", &w, &k) != 2)
                    fail("a message came broken");
                served++;
                hash = (hash * 33 + (unsigned long)w) * 33 + (unsigned long)k;
                snprintf(reply, sizeof reply, "%ld\n", served);
                write_all(pfd[i].fd, reply, strlen(reply));
                close_or_die(pfd[i].fd);
                /* The last slot takes this one's place. */
                used--;
                pfd[i] = pfd[used];
                memcpy(msgs[i], msgs[used], MSG);
                have[i] = have[used];
            }
        }
        if (pfd[0].revents & POLLIN) {
            if (used == SLOTS)
                fail("more connections open at once than the server has slots for");
            pfd[used].fd = accept_one(lfd);
            pfd[used].events = POLLIN;
            pfd[used].revents = 0;
            have[used] = 0;
            used++;
        }
    }
    close_or_die(lfd);
    wait_all_ok(pids, workers);
    printf("%d workers x %d connections: %ld served, hash %lx\n", workers, conns, served, hash);
    return 0;
}
