/*
 * prefork [MODE]: a pre-fork server (issue #10, class 9). The master listens on 127.0.0.1 and
 * forks 4 workers that all accept from that one listening socket, then 8 clients.
 *     epoll  (default) each worker waits in epoll_wait on the listener (non-blocking), then
 *            accepts until EAGAIN: every worker may be woken for one connection, and those
 *            that lose the race find nothing (nginx with accept_mutex off); a woken worker
 *            waits a random jitter before it accepts, so that losers are common
 *     excl   the same with EPOLLEXCLUSIVE (one or more workers woken per connection)
 *     block  each worker blocks in accept() (Apache prefork, gunicorn's sync workers)
 * A worker reads one line per connection: "client I" is answered "worker W" (W = 1..4, the
 * worker's fork order); "quit" is answered "bye" and the worker exits. Each client waits a
 * random jitter, connects, sends its line and exits with the number of the worker that
 * answered. The master reaps the clients, then sends "quit" 4 times, one connection after the
 * other (each is taken by a worker still running), reaps the workers, and prints
 *     client 1: worker 3
 *     ...
 * Race: which worker serves which client (varies natively with DDBX_JITTER=5).
 *
 * prefork MODE outside: the clients are not under ddbx (issue #10, classes 1 and 9 together).
 * The master prints "port P" first (flushed) and forks no client; it waits for a line (or the
 * end) on stdin, which the clients' driver writes when they are done, then stops the workers
 * the same way and prints "worker W served K" per worker (K: its exit status). A worker answers
 * a client "you are number W".
 */
#include "common.h" /* the helpers every test program shares */

#define WORKERS 4
#define CLIENTS 8

static int outside; /* the clients are not under ddbx */
static int answered; /* clients, by this worker */

/* Answers one connection; true if it said "quit". */
static int answer(int fd, int w)
{
    char line[32], reply[32];

    read_line(fd, line, sizeof line);
    if (strcmp(line, "quit\n") == 0) {
        write_str(fd, "bye\n");
        close_or_die(fd);
        return 1;
    }
    if (strncmp(line, "client ", 7) != 0)
        fail("worker: bad request");
    answered++;
    snprintf(reply, sizeof reply, "%s %d\n", outside ? "you are number" : "worker", w);
    write_str(fd, reply);
    close_or_die(fd);
    return 0;
}

static void worker_blocking(int lfd, int w)
{
    while (!answer(accept_one(lfd), w))
        ;
    exit(outside ? answered : 0);
}

static void worker_epoll(int lfd, int w, int exclusive)
{
    struct epoll_event ev, got;
    int ep = epoll_create1(0);

    if (ep < 0)
        die("epoll_create1");
    ev.events = EPOLLIN | (exclusive ? EPOLLEXCLUSIVE : 0);
    ev.data.fd = lfd;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) < 0)
        die("epoll_ctl");
    for (;;) {
        if (epoll_wait(ep, &got, 1, -1) < 0)
            die("epoll_wait");
        jitter(); /* lets another worker woken for the same connection take it first */
        for (;;) {
            int fd = accept(lfd, NULL, NULL);
            if (fd < 0 && errno == EAGAIN)
                break;
            if (fd < 0)
                die("accept");
            if (fcntl(fd, F_SETFL, 0) < 0) /* accepted sockets inherit nothing; be sure */
                die("fcntl");
            if (answer(fd, w))
                exit(outside ? answered : 0);
        }
    }
}

static void client(int port, int i)
{
    char line[32];
    int fd, w;

    client_start();
    fd = connect_to(port);
    snprintf(line, sizeof line, "client %d\n", i);
    write_str(fd, line);
    read_line(fd, line, sizeof line);
    if (sscanf(line, "worker %d", &w) != 1)
        fail("client: bad reply");
    close_or_die(fd);
    exit(w);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "epoll";
    pid_t workers[WORKERS], clients[CLIENTS];
    int port, lfd, i, served[CLIENTS];

    outside = argc > 2 && strcmp(argv[2], "outside") == 0;
    if ((strcmp(mode, "epoll") && strcmp(mode, "excl") && strcmp(mode, "block")) ||
        (argc > 2 && !outside))
        fail("usage: prefork [epoll|excl|block [outside]]");
    program_start();
    lfd = bind_any(&port, 1);
    if (outside)
        printf("port %d\n", port);
    if (strcmp(mode, "block") != 0)
        set_nonblock(lfd);
    for (i = 0; i < WORKERS; i++) {
        workers[i] = fork_or_die();
        if (workers[i] == 0) {
            jitter_init();
            if (strcmp(mode, "block") == 0)
                worker_blocking(lfd, i + 1);
            worker_epoll(lfd, i + 1, strcmp(mode, "excl") == 0);
        }
    }
    if (outside) {
        char go[8];
        if (read(0, go, sizeof go) < 0) /* a line, or the end: the clients are done */
            die("read stdin");
    } else {
        i = fork_clients(lfd, CLIENTS, clients);
        if (i)
            client(port, i);
        for (i = 0; i < CLIENTS; i++) {
            served[i] = wait_status(clients[i]);
            if (served[i] < 1 || served[i] > WORKERS)
                fail("a client failed");
        }
    }
    for (i = 0; i < WORKERS; i++) {
        char bye[8];
        int fd = connect_to(port);
        write_str(fd, "quit\n");
        read_line(fd, bye, sizeof bye);
        close_or_die(fd);
    }
    if (outside) {
        for (i = 0; i < WORKERS; i++)
            printf("worker %d served %d\n", i + 1, wait_status(workers[i]));
        return 0;
    }
    wait_all_ok(workers, WORKERS);
    for (i = 0; i < CLIENTS; i++)
        printf("client %d: worker %d\n", i + 1, served[i]);
    return 0;
}
