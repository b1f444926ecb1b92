/*
 * connect_twice: what hiredis (redis-cli) does to connect (issue #10, class 12): a non-blocking
 * connect (EINPROGRESS), a poll for POLLOUT, then connect() AGAIN on the same socket to learn
 * the outcome (0 once connected; EISCONN on later calls). The second call completes the first
 * connection: it makes none of its own. A forked server accepts, reads "ping\n" and answers
 * "pong\n"; the client reads it and, after reaping the server, prints
 *     second connect: 0, got: pong
 * No race in the output.
 */
#include "common.h" /* the helpers every test program shares */

int main(void)
{
    struct sockaddr_in a;
    struct pollfd p;
    char buf[16];
    int port, lfd, fd, again;
    pid_t pid;

    program_start();
    lfd = bind_any(&port, 1);
    pid = fork_or_die();
    if (pid == 0) { /* the server */
        fd = accept_last(lfd);
        read_line(fd, buf, sizeof buf);
        if (strcmp(buf, "ping\n") != 0)
            fail("server: bad request");
        write_str(fd, "pong\n");
        close_or_die(fd);
        exit(0);
    }
    close_or_die(lfd);
    fill_addr(&a, port);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        die("socket");
    set_nonblock(fd);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS)
        die("connect");
    p.fd = fd;
    p.events = POLLOUT;
    p.revents = 0;
    if (poll(&p, 1, 5000) != 1)
        die("poll");
    again = connect(fd, (struct sockaddr *)&a, sizeof a) < 0 ? errno : 0;
    if (again != 0 && again != EISCONN) {
        errno = again;
        die("connect again");
    }
    if (fcntl(fd, F_SETFL, 0) < 0)
        die("fcntl");
    write_str(fd, "ping\n");
    read_line(fd, buf, sizeof buf);
    wait_ok(pid);
    printf("second connect: %s, got: %s", again ? "EISCONN" : "0", buf);
    return 0;
}
