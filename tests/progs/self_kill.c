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
 */
#include "common.h" /* the helpers every test program shares */
#include <signal.h>

static void child(int port)
{
    char msg[16], reply[16];
    int fd, j;

    jitter_init();
    fd = connect_to(port);
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

int main(void)
{
    int fd, st, msgs = 0, acked = 0;
    size_t bytes = 0;
    pid_t pid;

    program_start();
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
