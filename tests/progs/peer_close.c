/*
 * peer_close: a server that learns of its peers' ends through readiness and reads (issue #10,
 * class 3: a close that a peer observes is an event).
 *
 * The parent listens and forks 3 clients.  Client i connects, sends "c<i>\n" after a jitter,
 * and then ends its side of the connection in its own way:
 *     1: close()s it, then exits;
 *     2: shutdown(SHUT_WR), then reads the server's answer to its end and checks it;
 *     3: exits without closing it (its exit closes it).
 * The parent accepts the 3 connections and watches them (poll by default; with "epoll":
 * epoll_wait with EPOLLRDHUP, which reports the end as in|rdhup), reading once from each one
 * reported until every connection reached its end (a 0-byte read).  At client 2's end it
 * answers "bye 2\n" on that connection (client 2 still reads: it only shut down its sending
 * side).  It closes each connection at its end.  After reaping the children it prints, in the
 * order they happened, one line per read:
 *     c<i>: data        (the hello, read whole)
 *     c<i>: end
 * Race: the order of the hellos and of the ends (each client's jitter).
 */
#include "common.h" /* the helpers every test program shares */

#define NCLIENTS 3

/* Client i's part (see the top of the file); exits. */
static void client(int port, int id)
{
    char msg[16], answer[16];
    int fd;

    client_start();
    fd = connect_to(port);
    snprintf(msg, sizeof msg, "c%d\n", id);
    jitter();
    write_str(fd, msg);
    jitter();
    switch (id) {
    case 1:
        close_or_die(fd);
        break;
    case 2:
        if (shutdown(fd, SHUT_WR) < 0)
            die("shutdown");
        if (read_to_eof(fd, answer, sizeof answer) != 6 || memcmp(answer, "bye 2\n", 6) != 0)
            fail("client 2: unexpected answer");
        close_or_die(fd);
        break;
    default:
        break; /* exit closes it */
    }
    exit(0);
}

/* Waits until one of conn[0..NCLIENTS-1] (-1: ended) is readable or ended; returns its index.
 * epfd >= 0: with epoll_wait on it, else with poll. */
static int wait_any(int epfd, const int *conn)
{
    for (;;) {
        if (epfd >= 0) {
            struct epoll_event ev;
            int r = epoll_wait(epfd, &ev, 1, -1);

            if (r < 0 && errno == EINTR)
                continue;
            if (r != 1)
                die("epoll_wait");
            return (int)ev.data.u32;
        } else {
            struct pollfd p[NCLIENTS];
            int i, r;

            for (i = 0; i < NCLIENTS; i++) {
                p[i].fd = conn[i];
                p[i].events = POLLIN;
                p[i].revents = 0;
            }
            r = poll(p, NCLIENTS, -1);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                die("poll");
            for (i = 0; i < NCLIENTS; i++)
                if (p[i].revents)
                    return i;
        }
    }
}

int main(int argc, char **argv)
{
    int port, lfd, i, open_count = NCLIENTS, epfd = -1;
    int conn[NCLIENTS], who[NCLIENTS];
    pid_t pids[NCLIENTS];

    if (argc > 2 || (argc == 2 && strcmp(argv[1], "epoll") != 0))
        fail("usage: peer_close [epoll]");
    program_start();
    lfd = bind_any(&port, 1);
    i = fork_clients(lfd, NCLIENTS, pids);
    if (i > 0)
        client(port, i);
    for (i = 0; i < NCLIENTS; i++) {
        conn[i] = accept_one(lfd);
        who[i] = 0;
    }
    close_or_die(lfd);
    if (argc == 2) {
        epfd = epoll_create1(0);
        if (epfd < 0)
            die("epoll_create1");
        for (i = 0; i < NCLIENTS; i++) {
            struct epoll_event ev;

            memset(&ev, 0, sizeof ev);
            ev.events = EPOLLIN | EPOLLRDHUP;
            ev.data.u32 = (uint32_t)i;
            if (epoll_ctl(epfd, EPOLL_CTL_ADD, conn[i], &ev) < 0)
                die("epoll_ctl ADD");
        }
    }
    while (open_count > 0) {
        char buf[64];
        ssize_t n;

        i = wait_any(epfd, conn);
        n = read_retry(conn[i], buf, sizeof buf);
        if (n < 0)
            die("read");
        if (n > 0) {
            /* The hello is one write of 3 bytes: read whole, before the end. */
            if (n != 3 || buf[0] != 'c' || buf[1] < '1' || buf[1] > '0' + NCLIENTS)
                fail("server: unexpected hello");
            who[i] = buf[1] - '0';
            log_line("c%d: data", who[i]);
            continue;
        }
        log_line("c%d: end", who[i]);
        if (who[i] == 2)
            write_str(conn[i], "bye 2\n");
        if (epfd >= 0 && epoll_ctl(epfd, EPOLL_CTL_DEL, conn[i], NULL) < 0)
            die("epoll_ctl DEL");
        close_or_die(conn[i]);
        conn[i] = -1;
        open_count--;
    }
    if (epfd >= 0)
        close_or_die(epfd);
    wait_all_ok(pids, NCLIENTS);
    print_log();
    return 0;
}
