// What every nginx worker does first (ngx_epoll_init → ngx_epoll_notify_init and
// ngx_epoll_test_rdhup): an eventfd and one end of a socketpair registered in one epoll set with
// the SAME epoll data (nginx passes &notify_conn for both), the other end closed by this same
// process, and an epoll_wait that reports `in|hup|rdhup` for the socket.
//
// ddbx maps the reported `data` back to an fd and picks the eventfd: the record says
// `Ready(call: Epoll, fds: [(fd: <eventfd>, ev: "in|hup|rdhup")])`, and replay waits forever for
// the eventfd to become readable. With `distinct` as argument the two registrations carry their
// own fd as data (what most programs do), which isolates the peer-closed-by-itself part.
//
// Build: gcc -O1 -o epoll_same_data epoll_same_data.c
// Show:  ddbx record -o r -- ./epoll_same_data; ddbx show r p1; ddbx replay r  (hangs)
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int distinct = argc > 1 && strcmp(argv[1], "distinct") == 0;
    int log = open("/dev/null", O_WRONLY); // nginx has its logs open by then
    int ep = epoll_create(512);
    int efd = eventfd(0, 0);
    int s[2];
    if (ep < 0 || efd < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, s) < 0) {
        perror("setup");
        return 1;
    }
    static int notify_conn; // nginx: a static ngx_connection_t
    struct epoll_event ee = {.events = EPOLLIN | EPOLLET};
    ee.data.ptr = distinct ? (void *)(long)efd : &notify_conn;
    epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ee);
    ee.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
    ee.data.ptr = distinct ? (void *)(long)s[0] : &notify_conn;
    epoll_ctl(ep, EPOLL_CTL_ADD, s[0], &ee);
    close(s[1]); // the peer, closed by this process: s[0] now reports in|hup|rdhup
    struct epoll_event got;
    int n = epoll_wait(ep, &got, 1, 5000);
    printf("ready: %d, rdhup: %s\n", n, n == 1 && (got.events & EPOLLRDHUP) ? "yes" : "no");
    close(s[0]);
    close(log);
    return 0;
}
