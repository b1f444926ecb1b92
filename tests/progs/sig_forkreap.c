/*
 * sig_forkreap: a parent whose SIGCHLD handler reaps and forks replacements, the way
 * postgres's postmaster starts its background processes once the startup process has ended
 * (issue #10, class 5).
 *
 *   sig_forkreap [TOTAL [term]]
 *
 * The parent forks three children: the third exits at once, the first two wait until the
 * parent has reaped it (the parent closes its end of a pipe they read then), then a random
 * time (DDBX_JITTER), and exit. So the third's SIGCHLD comes first, while the parent sits in
 * its first poll, right after the fork that made it (postgres's startup process). The parent keeps SIGCHLD blocked
 * except in ppoll(2) on a pipe nobody writes (no timeout), so each SIGCHLD interrupts it. The handler reaps
 * every child that has ended with a waitpid(-1, WNOHANG) loop and, for each one reaped, forks
 * a replacement (which waits a random time and exits) until TOTAL children (default 6) have
 * been made. The loop ends when all TOTAL are reaped. Prints one line, e.g.
 * "reaped c3 | c1 | c4 c2 | c5 | c6" ("|" between two runs of the handler), which differs
 * natively; a replay prints the record's line.
 *
 * With `term`, each replacement, instead of pausing, installs a SIGTERM handler and waits in
 * sigsuspend(2) until it has run; the parent sends it SIGTERM when back from the handler that
 * forked it (SIGTERM is blocked until then, so the replacement cannot miss it). A process
 * forked inside a signal handler then needs a delivery of its own (postgres's walwriter,
 * forked from the postmaster's SIGCHLD handler and stopped with SIGTERM at shutdown).
 */
#include "common.h"
#include <signal.h>

static volatile sig_atomic_t made, reaped_n, runs, termed;
static int total = 6, term_mode;
static char signalled[64];
static pid_t pids[64];
static char line[512] = "reaped";
static int gate[2] = {-1, -1};

/* Appends s to `line` (async-signal-safe). */
static void note(const char *s)
{
    size_t n = strlen(line);

    if (n + strlen(s) + 1 < sizeof line)
        memcpy(line + n, s, strlen(s) + 1);
}

static void on_term(int sig)
{
    (void)sig;
    termed = 1;
}

/* A replacement in `term` mode: waits for its SIGTERM, then exits. */
static void wait_for_term(void)
{
    sigset_t empty;

    if (signal(SIGTERM, on_term) == SIG_ERR)
        _exit(3);
    sigemptyset(&empty);
    while (!termed)
        sigsuspend(&empty);
    _exit(0);
}

/* Forks child number made + 1: it waits for the end of `gate` if its read end is still
 * open, then `pauses` random times (or, a replacement in `term` mode, for its SIGTERM), and
 * exits. */
static void spawn(int pauses)
{
    pid_t p = fork();

    if (p < 0)
        _exit(3);
    if (p == 0) {
        int j;
        char c;

        jitter_init();
        if (term_mode && made >= 3)
            wait_for_term();
        if (gate[0] >= 0) {
            close(gate[1]);
            while (read(gate[0], &c, 1) > 0)
                ;
        }
        for (j = 0; j < pauses; j++)
            jitter();
        _exit(0);
    }
    pids[made++] = p;
}

static void on_chld(int sig)
{
    int e = errno, i;
    pid_t p;

    (void)sig;
    if (runs++ > 0)
        note(" |");
    while ((p = waitpid(-1, NULL, WNOHANG)) > 0) {
        for (i = 0; i < made; i++)
            if (pids[i] == p) {
                char s[8];

                snprintf(s, sizeof s, " c%d", i + 1);
                note(s);
            }
        reaped_n++;
        if (gate[1] >= 0) {
            close(gate[1]);
            gate[1] = -1;
        }
        if (made < total)
            spawn(2);
    }
    errno = e;
}

int main(int argc, char **argv)
{
    int idle[2];
    struct sigaction sa;
    struct pollfd pfd;
    sigset_t chld, empty;

    if (argc > 1)
        total = atoi(argv[1]);
    term_mode = argc > 2 && strcmp(argv[2], "term") == 0;
    if (total < 3 || total > 64)
        die("sig_forkreap: TOTAL must be 3..64");
    program_start();
    if (pipe(idle) < 0)
        die("pipe");
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_chld;
    sigemptyset(&sa.sa_mask);
    /* Blocked in the handler too (ppoll's empty mask is its base): the replacements it
     * forks start with SIGTERM blocked. */
    sigaddset(&sa.sa_mask, SIGTERM);
    if (sigaction(SIGCHLD, &sa, NULL) < 0)
        die("sigaction");
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigaddset(&chld, SIGTERM);
    sigemptyset(&empty);
    if (sigprocmask(SIG_BLOCK, &chld, NULL) < 0)
        die("sigprocmask");
    if (pipe(gate) < 0)
        die("pipe");
    spawn(2);
    spawn(2);
    close(gate[0]);
    gate[0] = -1;
    spawn(0);
    pfd.fd = idle[0];
    pfd.events = POLLIN;
    while (reaped_n < total) {
        int i;

        if (ppoll(&pfd, 1, NULL, &empty) < 0 && errno != EINTR)
            die("ppoll");
        for (i = 3; term_mode && i < made; i++)
            if (!signalled[i]) {
                signalled[i] = 1;
                if (kill(pids[i], SIGTERM) < 0)
                    die("kill");
            }
    }
    printf("%s\n", line);
    return 0;
}
