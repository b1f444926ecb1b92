/*
 * sig_suspend: a parent that keeps SIGCHLD blocked and waits for its children in sigsuspend(2),
 * the way dash's `wait` builtin and nginx's master do (issue #10, class 5).
 *
 *   sig_suspend [K]
 *
 * Forks K children (default 4) that each wait a random time (DDBX_JITTER, a few pauses) and
 * exit. The parent blocks SIGCHLD, then loops: reaps every child that has ended with
 * waitpid(-1, WNOHANG), and when none is left to reap but some still run, sleeps in
 * sigsuspend with SIGCHLD unblocked; its handler sets a flag. Children that end while SIGCHLD
 * is blocked raise one pending SIGCHLD between them (standard signals do not queue), so how
 * many wakeups it takes, and in which batches the children are reaped, differ natively too.
 * Prints one line, e.g. "reaped c2 c1 | c3 | c4" ("|": a sigsuspend between two batches).
 * A replay prints the record's line and does not hang.
 */
#include "common.h"
#include <signal.h>

static volatile sig_atomic_t got;

static void on_chld(int sig)
{
    (void)sig;
    got = 1;
}

int main(int argc, char **argv)
{
    int k = argc > 1 ? atoi(argv[1]) : 4, left, i;
    pid_t pids[16];
    char line[256] = "reaped";
    struct sigaction sa;
    sigset_t block, empty;

    if (k < 1 || k > 16)
        die("sig_suspend: K must be 1..16");
    program_start();
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_chld;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGCHLD, &sa, NULL) < 0)
        fail("sigaction");
    sigemptyset(&block);
    sigaddset(&block, SIGCHLD);
    sigemptyset(&empty);
    if (sigprocmask(SIG_BLOCK, &block, NULL) < 0)
        fail("sigprocmask");
    for (i = 0; i < k; i++) {
        pids[i] = fork();
        if (pids[i] < 0)
            fail("fork");
        if (pids[i] == 0) {
            int j;

            client_start();
            for (j = 0; j < i + 1; j++)
                jitter();
            _exit(0);
        }
    }
    left = k;
    for (;;) {
        pid_t p;

        while ((p = waitpid(-1, NULL, WNOHANG)) > 0)
            for (i = 0; i < k; i++)
                if (p == pids[i]) {
                    size_t n = strlen(line);

                    snprintf(line + n, sizeof line - n, " c%d", i + 1);
                    left--;
                }
        if (left == 0)
            break;
        got = 0;
        while (!got)
            sigsuspend(&empty);
        strncat(line, " |", sizeof line - strlen(line) - 1);
    }
    printf("%s\n", line);
    return 0;
}
