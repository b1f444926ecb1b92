/*
 * ext_loop MODE N: one event loop serving N clients that are NOT under ddbx, all at once
 * (issue #10, class 1: the listening socket is only accepted from once a ready set names it).
 *     poll   poll() on the listener and every connection (level-triggered, blocking fds)
 *     et     epoll, edge-triggered, non-blocking: accept until EAGAIN, read until EAGAIN
 * Listens on 127.0.0.1 (kernel-chosen port) and prints "port P" first (flushed). Each client
 * sends one line; when a connection's line is complete the server prints
 * "request K: <line>", replies "you are number K\n" and closes it. After N requests, exit 0.
 * Race: the order of the requests (the outside clients sleep randomly).
 */
#include "common.h" /* the helpers every test program shares */

#define MAX_CLIENTS 16

struct conn {
    int fd;
    size_t got;
    char line[128];
};

static struct conn conns[MAX_CLIENTS];
static int served;

/* A connection's bytes arrived: when its line is complete, answer and close it. */
static void on_line(struct conn *c)
{
    char reply[64];

    if (c->got == 0 || c->line[c->got - 1] != '\n')
        return;
    c->line[c->got - 1] = '\0';
    served++;
    printf("request %d: %s\n", served, c->line);
    snprintf(reply, sizeof reply, "you are number %d\n", served);
    write_str(c->fd, reply);
    close_or_die(c->fd);
    c->fd = -1;
}

/* Reads what is there (once, or until EAGAIN when `drain`); false at the end of the stream. */
static int on_readable(struct conn *c, int drain)
{
    do {
        ssize_t n = read(c->fd, c->line + c->got, sizeof c->line - 1 - c->got);
        if (n < 0 && errno == EAGAIN)
            return 1;
        if (n < 0)
            die("read");
        if (n == 0)
            fail("a client closed before its line");
        c->got += (size_t)n;
        on_line(c);
    } while (drain && c->fd >= 0);
    return 1;
}

static struct conn *add(int fd)
{
    int i;

    for (i = 0; i < MAX_CLIENTS; i++)
        if (conns[i].fd < 0) {
            conns[i].fd = fd;
            conns[i].got = 0;
            return &conns[i];
        }
    fail("too many clients");
    return NULL;
}

static void serve_poll(int lfd, int n)
{
    while (served < n) {
        struct pollfd p[MAX_CLIENTS + 1];
        int i, k = 1, ready;

        p[0].fd = lfd;
        p[0].events = POLLIN;
        for (i = 0; i < MAX_CLIENTS; i++)
            if (conns[i].fd >= 0) {
                p[k].fd = conns[i].fd;
                p[k++].events = POLLIN;
            }
        ready = poll(p, (nfds_t)k, -1);
        if (ready < 0)
            die("poll");
        for (i = 1; i < k; i++)
            if (p[i].revents) {
                int j;
                for (j = 0; j < MAX_CLIENTS; j++)
                    if (conns[j].fd == p[i].fd)
                        on_readable(&conns[j], 0);
            }
        if (p[0].revents & POLLIN)
            add(accept_one(lfd));
    }
}

static void serve_epoll_et(int lfd, int n)
{
    int ep = epoll_create1(0), i;
    struct epoll_event ev;

    if (ep < 0)
        die("epoll_create1");
    set_nonblock(lfd);
    ev.events = EPOLLIN | EPOLLET;
    ev.data.ptr = NULL; /* the listener */
    if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) < 0)
        die("epoll_ctl");
    while (served < n) {
        struct epoll_event evs[8];
        int ready = epoll_wait(ep, evs, 8, -1);

        if (ready < 0)
            die("epoll_wait");
        for (i = 0; i < ready; i++) {
            struct conn *c = evs[i].data.ptr;
            if (c) {
                on_readable(c, 1);
                continue;
            }
            for (;;) {
                int fd = accept(lfd, NULL, NULL);
                if (fd < 0 && errno == EAGAIN)
                    break;
                if (fd < 0)
                    die("accept");
                set_nonblock(fd);
                c = add(fd);
                ev.events = EPOLLIN | EPOLLET;
                ev.data.ptr = c;
                if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
                    die("epoll_ctl");
            }
        }
    }
    close_or_die(ep);
}

int main(int argc, char **argv)
{
    int n = argc > 2 ? atoi(argv[2]) : 4, lfd, port, i;

    if (argc < 2 || (strcmp(argv[1], "poll") && strcmp(argv[1], "et")) || n < 1 ||
        n > MAX_CLIENTS)
        fail("usage: ext_loop poll|et [N]");
    setvbuf(stdout, NULL, _IOLBF, 0);
    alarm(60);
    for (i = 0; i < MAX_CLIENTS; i++)
        conns[i].fd = -1;
    lfd = bind_any(&port, 1);
    printf("port %d\n", port);
    if (strcmp(argv[1], "poll") == 0)
        serve_poll(lfd, n);
    else
        serve_epoll_et(lfd, n);
    close_or_die(lfd);
    return 0;
}
