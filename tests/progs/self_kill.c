/*
 * self_kill: a child that kills itself with SIGKILL in the middle of a
 * conversation.
 *
 * The parent listens on 127.0.0.1 (kernel-chosen port) and forks a child.
 * The child connects, sends 3 messages "m1\n" "m2\n" "m3\n" (random jitter
 * before each), reads the parent's one reply "ack\n" and then, without
 * closing or exiting, does raise(SIGKILL).  The parent reads until EOF,
 * sending "ack\n" once it has the 3 messages, reaps the child and prints
 *     received 3 messages, 9 bytes
 *     child killed by signal 9
 * and exits 0.  No race in the output: this checks that an actor killed by a
 * signal is recorded (its history ends at its last event) and replayed.
 *
 * With the argument `nonblock` the child connects as client libraries do: a non-blocking
 * connect (EINPROGRESS), a poll for POLLOUT, then the socket made blocking again.
 */
#include "common.h" /* the helpers every test program shares */
#include <signal.h>

static int nonblock;

/* A connect to 127.0.0.1:port that returns EINPROGRESS, then waits for it to complete. */
static int connect_nonblock(int port)
{
    struct sockaddr_in a;
    struct pollfd p;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0)
        die("socket");
    set_nonblock(fd);
    fill_addr(&a, port);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS)
        die("connect");
    p.fd = fd;
    p.events = POLLOUT;
    p.revents = 0;
    if (poll(&p, 1, 5000) != 1 || (p.revents & POLLOUT) == 0)
        die("poll");
    if (fcntl(fd, F_SETFL, 0) < 0)
        die("fcntl");
    return fd;
}

static void child(int port)
{
    char msg[16], reply[16];
    int fd, j;

    jitter_init();
    fd = nonblock ? connect_nonblock(port) : connect_to(port);
    for (j = 1; j <= 3; j++) {
        jitter();
        snprintf(msg, sizeof msg, "m%d\n", j);
        write_str(fd, msg);
    }
    read_line(fd, reply, sizeof reply);
    if (strcmp(reply, "ack\n") != 0)
        fail("child: unexpected reply");
    raise(SIGKILL);
    fail("still alive after SIGKILL");
}

int main(int argc, char **argv)
{
    int fd, st, msgs = 0, acked = 0;
    size_t bytes = 0;
    pid_t pid;

    program_start();
    nonblock = argc > 1 && strcmp(argv[1], "nonblock") == 0;
    fd = accept_child(child, &pid);
    for (;;) {
        char buf[256];
        ssize_t n = read_retry(fd, buf, sizeof buf), i;

        if (n == 0)
            break;
        bytes += (size_t)n;
        for (i = 0; i < n; i++)
            msgs += buf[i] == '\n';
        if (msgs >= 3 && !acked) {
            write_str(fd, "ack\n");
            acked = 1;
        }
    }
    close_or_die(fd);
    st = wait_raw(pid);
    printf("received %d messages, %zu bytes\n", msgs, bytes);
    if (WIFSIGNALED(st))
        printf("child killed by signal %d\n", WTERMSIG(st));
    else if (WIFEXITED(st))
        printf("child exited with status %d\n", WEXITSTATUS(st));
    return 0;
}
