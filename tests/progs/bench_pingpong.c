/*
 * bench_pingpong [ROUNDS [SIZE]]: the overhead benchmark's ping-pong (see
 * BENCHMARKS.md and ddbx/benches/overhead.rs).
 *
 * The parent listens on 127.0.0.1 (kernel-chosen port) and forks a child
 * that connects.  They then do ROUNDS (default 100000) round trips of SIZE
 * (default 64, at most 65536) bytes: the child sends SIZE bytes, the parent
 * receives all of them and sends SIZE bytes back, the child receives all of
 * them.  Blocking send()/recv(), TCP_NODELAY on both ends; each side loops
 * until the full SIZE has been sent / received, so partial transfers are
 * fine.  The parent checks the last byte of every message (the round number
 * modulo 256), reaps the child and prints "ok".  No race in the output; no
 * jitter.  Exit status 0 on success, 1 on any error (message on stderr).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>

#define MAX_SIZE 65536

static void die(const char *what)
{
    fprintf(stderr, "[pid %d] %s: %s\n", (int)getpid(), what, strerror(errno));
    exit(1);
}

static void fail(const char *what)
{
    fprintf(stderr, "[pid %d] %s\n", (int)getpid(), what);
    exit(1);
}

/* Sends all len bytes of buf. */
static void send_all(int fd, const unsigned char *buf, size_t len)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = send(fd, buf + done, len - done, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("send");
        }
        done += (size_t)n;
    }
}

/* Receives exactly len bytes into buf; EOF before that is an error. */
static void recv_all(int fd, unsigned char *buf, size_t len)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = recv(fd, buf + done, len - done, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("recv");
        }
        if (n == 0)
            fail("unexpected EOF");
        done += (size_t)n;
    }
}

static void nodelay(int fd)
{
    int one = 1;

    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
        die("setsockopt TCP_NODELAY");
}

static unsigned char buf[MAX_SIZE];

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
    long size = argc > 2 ? strtol(argv[2], NULL, 10) : 64;
    struct sockaddr_in addr;
    socklen_t alen = sizeof addr;
    int lfd, fd, status;
    pid_t child;
    long i;

    if (rounds < 0 || size < 1 || size > MAX_SIZE)
        fail("usage: bench_pingpong [ROUNDS [SIZE]] (SIZE 1..65536)");

    lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0)
        die("socket");
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0)
        die("bind");
    if (listen(lfd, 1) < 0)
        die("listen");
    if (getsockname(lfd, (struct sockaddr *)&addr, &alen) < 0)
        die("getsockname");

    fflush(stdout);
    child = fork();
    if (child < 0)
        die("fork");
    if (child == 0) {
        close(lfd);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
            die("socket");
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0)
            die("connect");
        nodelay(fd);
        for (i = 0; i < rounds; i++) {
            memset(buf, (int)(i & 0xff), (size_t)size);
            send_all(fd, buf, (size_t)size);
            recv_all(fd, buf, (size_t)size);
            if (buf[size - 1] != (unsigned char)(i & 0xff))
                fail("child: wrong reply");
        }
        close(fd);
        _exit(0);
    }

    fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        die("accept");
    close(lfd);
    nodelay(fd);
    for (i = 0; i < rounds; i++) {
        recv_all(fd, buf, (size_t)size);
        if (buf[size - 1] != (unsigned char)(i & 0xff))
            fail("parent: wrong message");
        send_all(fd, buf, (size_t)size);
    }
    close(fd);
    if (waitpid(child, &status, 0) < 0)
        die("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail("child failed");
    printf("ok\n");
    return 0;
}
