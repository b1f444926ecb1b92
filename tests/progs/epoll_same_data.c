/*
 * epoll_same_data [distinct]: what every nginx worker does first (ngx_epoll_init, then
 * ngx_epoll_notify_init and ngx_epoll_test_rdhup): an eventfd and one end of a socketpair
 * registered in one epoll set with the SAME epoll data (nginx passes &notify_conn for both),
 * the other end closed by this same process, and an epoll_wait that reports in|hup|rdhup for
 * the socket.
 *
 * epoll data is the program's opaque value, not an fd: the ready set must name the socket,
 * `Ready(call: Epoll, fds: [(fd: <socket>, ev: "in|hup|rdhup")])` (ddbx once mapped the data
 * back to the eventfd, and replay waited for ever for the eventfd to become readable), and the
 * program must get its own data back. With "distinct" the two registrations carry their own fd
 * as data (what most programs do).
 *
 * Prints the socket's fd, then what epoll_wait reported:
 *     socket fd 6
 *     ready: 1, rdhup: yes, data: the program's
 * No race: the output is the same in every run.
 */
#include "common.h" /* the helpers every test program shares */
#include <sys/eventfd.h>

static int notify_conn; /* nginx: a static ngx_connection_t */

int main(int argc, char **argv)
{
    int distinct = argc > 1 && strcmp(argv[1], "distinct") == 0;
    int log = open("/dev/null", O_WRONLY); /* nginx has its logs open by then */
    int ep = epoll_create(512), efd = eventfd(0, 0), s[2], n;
    struct epoll_event ee, got;
    void *want;

    program_start();
    if (log < 0 || ep < 0 || efd < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, s) < 0)
        die("setup");
    memset(&ee, 0, sizeof ee);
    ee.events = EPOLLIN | EPOLLET;
    ee.data.ptr = distinct ? (void *)(long)efd : &notify_conn;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ee) < 0)
        die("epoll_ctl eventfd");
    ee.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
    ee.data.ptr = want = distinct ? (void *)(long)s[0] : &notify_conn;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, s[0], &ee) < 0)
        die("epoll_ctl socket");
    close_or_die(s[1]); /* the peer, closed by this process: s[0] now reports in|hup|rdhup */
    n = epoll_wait(ep, &got, 1, 5000);
    if (n < 0)
        die("epoll_wait");
    printf("socket fd %d\n", s[0]);
    printf("ready: %d, rdhup: %s, data: %s\n", n,
           n == 1 && (got.events & EPOLLRDHUP) ? "yes" : "no",
           n == 1 && got.data.ptr == want ? "the program's" : "other");
    close_or_die(s[0]);
    close_or_die(efd);
    close_or_die(ep);
    close_or_die(log);
    return 0;
}
