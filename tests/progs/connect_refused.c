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
#include "common.h" /* the helpers every test program shares */

#define MAX_TRIES 5000

static void client(int port)
{
    struct sockaddr_in a;
    char msg[64];
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
        close_or_die(fd);
        if (++refused >= MAX_TRIES)
            fail("refused too often");
        if (usleep(1000) < 0)
            die("usleep");
    }
    snprintf(msg, sizeof msg, "refused %d times\n", refused);
    send_line_and_exit(fd, msg);
}

int main(void)
{
    int port, lfd, fd, n;
    char buf[64];
    pid_t pid;

    program_start();
    lfd = bind_any(&port, 0); /* bound, not listening: connects are refused */
    if (fork_clients(lfd, 1, &pid))
        client(port);
    jitter();
    if (listen(lfd, 16) < 0)
        die("listen");
    fd = accept_last(lfd);
    read_line(fd, buf, sizeof buf);
    if (sscanf(buf, "refused %d times", &n) != 1 || n < 0)
        fail("bad message");
    close_or_die(fd);
    wait_ok(pid);
    printf("child was refused %d times\n", n);
    return 0;
}
