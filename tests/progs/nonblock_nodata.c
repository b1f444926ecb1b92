/*
 * nonblock_nodata: how often does a non-blocking recv() find no data?
 *
 * The parent listens and forks one child, which connects, sleeps a random
 * jitter, sends "hello\n", waits for the reply "ok\n" and exits.  The parent
 * sets the accepted socket O_NONBLOCK and polls it with recv(), counting
 * the EAGAIN results (usleep(200) between tries) until the whole line has
 * arrived, replies "ok\n" and, after reaping the child, prints
 *     eagain count: 37
 *     got: hello
 * Race: the EAGAIN count (varies natively with DDBX_JITTER=5).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>

#define UNUSED __attribute__((unused))

#include "common.h" /* the helpers every test program shares */

#define MAX_TRIES 50000 /* 50000 * 200us = 10 s at least: give up then */

static void client(int port)
{
    char reply[64];
    int fd;

    jitter_init();
    fd = connect_to(port);
    jitter();
    write_str(fd, "hello\n");
    read_line(fd, reply, sizeof reply);
    if (strcmp(reply, "ok\n") != 0)
        fail("client: unexpected reply");
    if (close(fd) < 0)
        die("close");
    exit(0);
}

int main(void)
{
    int port, lfd, fd, fl, tries;
    long eagain = 0;
    char buf[64];
    size_t got = 0;
    pid_t pid;

    setvbuf(stdout, NULL, _IOLBF, 0);
    jitter_init();
    lfd = bind_any(&port, 1);
    pid = fork_or_die();
    if (pid == 0) {
        if (close(lfd) < 0)
            die("close");
        client(port);
    }
    fd = accept_one(lfd);
    if (close(lfd) < 0)
        die("close");
    fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        die("fcntl");
    for (tries = 0;; tries++) {
        ssize_t n;

        if (tries >= MAX_TRIES)
            fail("no data after MAX_TRIES attempts");
        n = recv(fd, buf + got, sizeof buf - 1 - got, 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            eagain++;
            if (usleep(200) < 0)
                die("usleep");
            continue;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("recv");
        }
        if (n == 0)
            fail("unexpected EOF");
        got += (size_t)n;
        buf[got] = '\0';
        if (memchr(buf, '\n', got))
            break;
        if (got + 1 >= sizeof buf)
            fail("message too long");
    }
    if (strcmp(buf, "hello\n") != 0)
        fail("unexpected message");
    write_str(fd, "ok\n"); /* tiny: fits the empty send buffer, no EAGAIN */
    if (close(fd) < 0)
        die("close");
    wait_ok(pid);
    printf("eagain count: %ld\n", eagain);
    printf("got: hello\n");
    return 0;
}
