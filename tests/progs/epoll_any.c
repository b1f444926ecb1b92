/*
 * epoll_any: which connection does epoll_wait() report readable, and how are
 * the messages of three concurrent senders interleaved and split?
 *
 * The parent listens and forks 3 children.  Child i (1..3) connects, then
 * sends "c<i> m0\n", "c<i> m1\n", "c<i> m2\n" (random jitter before the
 * connect and before each send) and closes.  The parent accepts the 3
 * connections (conn1..conn3, numbered in accept order), registers them with
 * an epoll instance and loops on epoll_wait() until all three reached EOF.
 * Level-triggered (default): one read (4096-byte buffer) per reported
 * connection.  With argv[1] == "et": the sockets are O_NONBLOCK and
 * registered with EPOLLET, and each reported connection is read until
 * read() fails with EAGAIN (or EOF).  After reaping the children it prints,
 * in the order they happened, one line per read outcome:
 *     read from conn2: c3 m0\nc3 m1\n
 *     EAGAIN on conn2            (et mode only)
 *     eof on conn2
 * With "dup" (after "et" or alone), the program does what mio (tokio's I/O library) does: it
 * duplicates the epoll fd (fcntl F_DUPFD_CLOEXEC), registers the connections through the
 * duplicate and waits on the original; with "et" it also sets O_NONBLOCK through a dup of each
 * connection (closed right after) and reads through the original.
 * Race: accept order, readiness order, and how bytes are split into reads.
 */
#include "common.h" /* the helpers every test program shares */

#define NCLIENTS 3

/* Registers conn[0..NCLIENTS-1] with a new epoll instance (edge-triggered and non-blocking
 * with et), data = the connection's index; returns the instance. With dup: through a
 * duplicate of the epoll fd (and O_NONBLOCK through a duplicate of each connection). */
static int watch(const int *conn, int et, int dup_fds)
{
    int epfd = epoll_create1(0), via, i;

    if (epfd < 0)
        die("epoll_create1");
    via = dup_fds ? fcntl(epfd, F_DUPFD_CLOEXEC, 3) : epfd;
    if (via < 0)
        die("fcntl F_DUPFD_CLOEXEC");
    for (i = 0; i < NCLIENTS; i++) {
        struct epoll_event ev;

        if (et && dup_fds) {
            int other = dup(conn[i]);

            if (other < 0)
                die("dup");
            set_nonblock(other);
            close_or_die(other);
        } else if (et) {
            set_nonblock(conn[i]);
        }
        memset(&ev, 0, sizeof ev);
        ev.events = EPOLLIN | (et ? EPOLLET : 0);
        ev.data.u32 = (uint32_t)i;
        if (epoll_ctl(via, EPOLL_CTL_ADD, conn[i], &ev) < 0)
            die("epoll_ctl ADD");
    }
    return epfd;
}

int main(int argc, char **argv)
{
    int i, open_count = NCLIENTS, et = 0, dup_fds = 0, epfd;
    int conn[NCLIENTS];
    pid_t pids[NCLIENTS];

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "et") == 0)
            et = 1;
        else if (strcmp(argv[i], "dup") == 0)
            dup_fds = 1;
        else
            fail("usage: epoll_any [et] [dup]");
    }
    program_start();
    accept_numbered_clients(conn, pids, NCLIENTS);
    epfd = watch(conn, et, dup_fds);

    /* Reads in the order epoll_wait reports (not in connection order, as read_any_until_eof). */
    while (open_count > 0) {
        struct epoll_event evs[NCLIENTS];
        int r = wait_epoll(epfd, evs, NCLIENTS), k;

        for (k = 0; k < r; k++) {
            i = (int)evs[k].data.u32;
            if (i < 0 || i >= NCLIENTS || conn[i] < 0)
                fail("epoll_wait: unexpected event");
            /* level-triggered: one read; edge-triggered: until EAGAIN/EOF */
            for (;;) {
                ssize_t n = log_read(conn[i], i + 1);

                if (n == 0) {
                    if (epoll_ctl(epfd, EPOLL_CTL_DEL, conn[i], NULL) < 0)
                        die("epoll_ctl DEL");
                    close_or_die(conn[i]);
                    conn[i] = -1;
                    open_count--;
                }
                if (n <= 0 || !et)
                    break;
            }
        }
    }
    close_or_die(epfd);
    wait_all_ok(pids, NCLIENTS);
    print_log();
    return 0;
}
