/*
 * term_merged: a child killed by the second of two SIGTERMs sent by two processes, the first
 * taken by its handler (issue #10, class 5; a gunicorn worker stopped by `timeout` and by its
 * arbiter).
 *
 *   term_merged
 *
 * The parent forks the child C, then a killer K. C blocks SIGTERM, installs a handler that
 * prints "handled" and sets SIGTERM back to its default action, says "r" to the parent on a
 * second pipe, reads "go" from the parent,
 * pauses 100 ms (nanosleep), unblocks SIGTERM (its handler runs: the parent's SIGTERM is
 * pending), and reads the parent's pipe again, for ever. The parent, once C is ready, sends
 * C a SIGTERM, then "go", and waits for C. K waits 400 ms in a poll that times out and sends C a SIGTERM, which
 * kills it. The parent prints how C ended: "handled", then "child killed by signal 15".
 *
 * In replay K's poll is over at once (it timed out in the record): both SIGTERMs come while
 * C still blocks the signal, and merge into one, which its handler takes. C's history ends
 * there as the record's did, but the signal that killed it never comes: the GD sends it
 * again once K has sent its own.
 */
#include "common.h"
#include <signal.h>

static void on_term(int sig)
{
    (void)sig;
    signal(SIGTERM, SIG_DFL);
    write(1, "handled\n", 8);
}

static void child(int in, int ready)
{
    struct timespec pause = {0, 100 * 1000 * 1000};
    sigset_t term;
    char b[2];

    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    if (sigprocmask(SIG_BLOCK, &term, NULL) < 0)
        die("sigprocmask");
    if (signal(SIGTERM, on_term) == SIG_ERR)
        die("signal");
    write_all(ready, "r", 1);
    if (read_retry(in, b, 2) != 2 || memcmp(b, "go", 2) != 0)
        fail("child: no go");
    nanosleep(&pause, NULL);
    if (sigprocmask(SIG_UNBLOCK, &term, NULL) < 0)
        die("sigprocmask");
    for (;;)
        if (read(in, b, 1) == 0)
            _exit(0);
}

int main(void)
{
    int p[2], r[2], status;
    pid_t c, k;
    char b;

    program_start();
    if (pipe(p) < 0 || pipe(r) < 0)
        die("pipe");
    c = fork();
    if (c < 0)
        die("fork");
    if (c == 0) {
        close(p[1]);
        close(r[0]);
        child(p[0], r[1]);
    }
    close(p[0]);
    close(r[1]);
    if (read_retry(r[0], &b, 1) != 1)
        fail("parent: child not ready");
    k = fork();
    if (k < 0)
        die("fork");
    if (k == 0) {
        struct pollfd idle;
        int q[2];

        if (pipe(q) < 0)
            die("pipe");
        idle.fd = q[0];
        idle.events = POLLIN;
        if (poll(&idle, 1, 400) != 0)
            fail("killer: the idle pipe was ready");
        if (kill(c, SIGTERM) < 0)
            die("kill");
        _exit(0);
    }
    if (kill(c, SIGTERM) < 0)
        die("kill");
    write_all(p[1], "go", 2);
    if (waitpid(c, &status, 0) != c || waitpid(k, NULL, 0) != k)
        die("waitpid");
    if (WIFSIGNALED(status))
        printf("child killed by signal %d\n", WTERMSIG(status));
    else
        printf("child exited %d\n", WEXITSTATUS(status));
    return 0;
}
