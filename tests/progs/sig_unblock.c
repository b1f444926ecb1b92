/*
 * sig_unblock [N]: a SIGCHLD handler that reaps only while the main program lets it, as bash's
 * does (its `wait` builtin sets a flag that leaves the reaping to the builtin's own waits).
 *
 * The root forks N (default 16) children, one at a time, each fork with SIGCHLD blocked, as
 * bash forks; child i exits at once with status i. The root computes for a random while (its
 * child may end meanwhile), unblocks SIGCHLD (a pending one runs the handler there, and the
 * handler reaps), then tells the handler to leave the reaping to it and waits for the child
 * itself unless the handler got it. Prints which reaper got each child, in order:
 *     HMMHMMMHHMMMHMMM
 * (H: the handler, M: the main program). Which one did differs from run to run.
 */
#include "common.h"
#include <signal.h>
#include <sys/wait.h>

#define MAX 64

static volatile sig_atomic_t leave_it, by_handler[MAX + 1];

static void on_chld(int sig)
{
    int saved = errno, status;
    pid_t p;

    (void)sig;
    if (leave_it)
        return;
    while ((p = waitpid(-1, &status, WNOHANG)) > 0)
        if (WIFEXITED(status) && WEXITSTATUS(status) <= MAX)
            by_handler[WEXITSTATUS(status)] = 1;
    errno = saved;
}

/* Up to about 2 ms of computation, its length drawn anew in every run. */
static void compute(unsigned *seed)
{
    long n = rand_r(seed) % 2000000;

    for (volatile long k = 0; k < n; k++)
        ;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 16, i, status;
    unsigned seed = (unsigned)getpid() * 2654435761u;
    char who[MAX + 1];
    struct sigaction sa;
    sigset_t chld, old;
    pid_t p;

    if (n < 1 || n > MAX)
        fail("usage: sig_unblock [N (1..64)]");
    program_start();
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_chld;
    sa.sa_flags = SA_RESTART;
    if (sigaction(SIGCHLD, &sa, NULL) < 0)
        die("sigaction");
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    for (i = 1; i <= n; i++) {
        sigprocmask(SIG_BLOCK, &chld, &old);
        p = fork_or_die();
        if (p == 0)
            _exit(i);
        compute(&seed);
        sigprocmask(SIG_SETMASK, &old, NULL);
        leave_it = 1;
        if (by_handler[i]) {
            who[i - 1] = 'H';
        } else {
            if (waitpid(p, &status, 0) != p)
                die("waitpid");
            who[i - 1] = 'M';
        }
        leave_it = 0;
    }
    who[n] = '\0';
    printf("%s\n", who);
    return 0;
}
