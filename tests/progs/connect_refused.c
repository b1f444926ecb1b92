/*
 * connect_refused: how many times is connect() refused before the server
 * starts listening?
 *
 * The parent creates a socket and binds it to 127.0.0.1 port 0 but does not
 * listen yet, then forks a child.  The child loops: socket(), connect(); on
 * ECONNREFUSED it closes the socket, counts, sleeps 1 ms and retries (at
 * most 5000 tries).  Once connected it sends its refusal count
 * ("refused <N> times\n") and waits for EOF.  The parent sleeps a random
 * jitter, calls listen(), accepts, reads the message, closes, and after
 * reaping the child prints
 *     child was refused 4 times
 * Race: N (>= 0; varies natively with DDBX_JITTER=20).
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

#define MAX_TRIES 5000

static void client(int port)
{
    struct sockaddr_in a;
    char msg[64], rest[16];
    int fd = -1, refused = 0;

    jitter_init();
    fill_addr(&a, port);
    for (;;) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
            die("socket");
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
            break;
        if (errno != ECONNREFUSED)
            die("connect");
        if (close(fd) < 0)
            die("close");
        if (++refused >= MAX_TRIES)
            fail("refused too often");
        if (usleep(1000) < 0)
            die("usleep");
    }
    snprintf(msg, sizeof msg, "refused %d times\n", refused);
    write_str(fd, msg);
    if (read_to_eof(fd, rest, sizeof rest) != 0)
        fail("client: unexpected data");
    if (close(fd) < 0)
        die("close");
    exit(0);
}

int main(void)
{
    int port, lfd, fd, n;
    char buf[64];
    pid_t pid;

    setvbuf(stdout, NULL, _IOLBF, 0);
    jitter_init();
    lfd = bind_any(&port, 0); /* bound, not listening: connects are refused */
    pid = fork_or_die();
    if (pid == 0) {
        if (close(lfd) < 0)
            die("close");
        client(port);
    }
    jitter();
    if (listen(lfd, 16) < 0)
        die("listen");
    fd = accept_one(lfd);
    if (close(lfd) < 0)
        die("close");
    read_line(fd, buf, sizeof buf);
    if (sscanf(buf, "refused %d times", &n) != 1 || n < 0)
        fail("bad message");
    if (close(fd) < 0)
        die("close");
    wait_ok(pid);
    printf("child was refused %d times\n", n);
    return 0;
}
