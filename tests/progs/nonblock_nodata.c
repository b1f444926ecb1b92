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
    close_or_die(fd);
    exit(0);
}

/* recv() on the non-blocking fd until a whole line is in buf (NUL-terminated), usleep(200)
 * after each EAGAIN; returns how many EAGAINs there were. */
static long recv_line_counting_eagain(int fd, char *buf, size_t cap)
{
    long eagain = 0;
    size_t got = 0;
    int tries;

    for (tries = 0; !memchr(buf, '\n', got); tries++) {
        ssize_t n;

        if (tries >= MAX_TRIES)
            fail("no data after MAX_TRIES attempts");
        if (got + 1 >= cap)
            fail("message too long");
        n = recv(fd, buf + got, cap - 1 - got, 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            eagain++;
            if (usleep(200) < 0)
                die("usleep");
        } else if (n < 0 && errno != EINTR) {
            die("recv");
        } else if (n == 0) {
            fail("unexpected EOF");
        } else if (n > 0) {
            got += (size_t)n;
            buf[got] = '\0';
        }
    }
    return eagain;
}

int main(void)
{
    int fd;
    long eagain;
    char buf[64];
    pid_t pid;

    program_start();
    fd = accept_child(client, &pid);
    set_nonblock(fd);
    eagain = recv_line_counting_eagain(fd, buf, sizeof buf);
    if (strcmp(buf, "hello\n") != 0)
        fail("unexpected message");
    write_str(fd, "ok\n"); /* tiny: fits the empty send buffer, no EAGAIN */
    close_or_die(fd);
    wait_ok(pid);
    printf("eagain count: %ld\n", eagain);
    printf("got: hello\n");
    return 0;
}
