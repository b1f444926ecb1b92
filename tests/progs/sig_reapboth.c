/*
 * sig_reapboth [N]: children are reaped both by a SIGCHLD handler (a `waitpid(-1, WNOHANG)`
 * loop) and by the main program (a blocking `waitpid(-1)`, then computation), as bash reaps
 * its background jobs both in its SIGCHLD handler and in its `wait` builtin.
 *
 * The root forks N (default 8) children; child i pauses (DDBX_JITTER) and exits with status i.
 * Each reap notes who made it. Prints, once every child is reaped,
 *     handler: 3 1 6 | main: 2 4 5 7 8
 * (the exit statuses each reaper got, in order), or `lost: …` for the children neither got
 * (a wait that found no child although one had not been reaped).
 */
#include "common.h"
#include <signal.h>
#include <sys/wait.h>

#define MAX 32

static volatile sig_atomic_t by_handler[MAX], handler_count, done;

static void on_chld(int sig)
{
    int saved = errno, status;
    pid_t p;

    (void)sig;
    while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
        if (handler_count < MAX)
            by_handler[handler_count++] = WIFEXITED(status) ? WEXITSTATUS(status) : 100;
        done++;
    }
    errno = saved;
}

/* About 2 ms of computation, in which a SIGCHLD may land. */
static void compute(void)
{
    for (volatile long i = 0; i < 2000000; i++)
        ;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 8, i, status, by_main[MAX], mains = 0;
    struct sigaction sa;
    sigset_t chld, old;
    pid_t p;

    if (n < 1 || n > MAX)
        fail("usage: sig_reapboth [N (1..32)]");
    program_start();
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_chld;
    sa.sa_flags = SA_RESTART;
    if (sigaction(SIGCHLD, &sa, NULL) < 0)
        die("sigaction");
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    for (i = 1; i <= n; i++) {
        /* As bash does: no SIGCHLD while the fork is under way. */
        sigprocmask(SIG_BLOCK, &chld, &old);
        p = fork_or_die();
        if (p == 0) {
            sigprocmask(SIG_SETMASK, &old, NULL);
            client_start();
            _exit(i);
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
    }
    while (done < n) {
        p = waitpid(-1, &status, 0);
        if (p > 0) {
            by_main[mains++] = WIFEXITED(status) ? WEXITSTATUS(status) : 100;
            done++;
        } else if (errno == ECHILD) {
            break;
        } else if (errno != EINTR) {
            die("waitpid");
        }
        compute();
    }
    printf("handler:");
    for (i = 0; i < handler_count; i++)
        printf(" %d", (int)by_handler[i]);
    printf(" | main:");
    for (i = 0; i < mains; i++)
        printf(" %d", by_main[i]);
    if (done < n)
        printf(" | lost: %d", n - (int)done);
    printf("\n");
    return 0;
}
