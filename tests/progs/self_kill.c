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
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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
    int port, lfd, fd, st, msgs = 0, acked = 0;
    size_t bytes = 0;
    pid_t pid;

    setvbuf(stdout, NULL, _IOLBF, 0);
    jitter_init();
    lfd = bind_any(&port, 1);
    pid = fork_or_die();
    if (pid == 0) {
        if (close(lfd) < 0)
            die("close");
        child(port);
    }
    fd = accept_one(lfd);
    if (close(lfd) < 0)
        die("close");
    for (;;) {
        char buf[256];
        ssize_t n = read(fd, buf, sizeof buf), i;

        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("read");
        }
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
    if (close(fd) < 0)
        die("close");
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            die("waitpid");
    }
    printf("received %d messages, %zu bytes\n", msgs, bytes);
    if (WIFSIGNALED(st))
        printf("child killed by signal %d\n", WTERMSIG(st));
    else if (WIFEXITED(st))
        printf("child exited with status %d\n", WEXITSTATUS(st));
    return 0;
}
