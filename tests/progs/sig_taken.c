/*
 * sig_taken MODE: signals taken synchronously; which one a call takes is the race.
 *
 * The root blocks SIGUSR1, SIGUSR2 and SIGWINCH and forks 3 children; child I waits a random
 * time and sends the root its signal (SIGUSR1, SIGUSR2, SIGWINCH). The root takes the 3
 * signals one call at a time and prints their numbers in the order taken:
 *     taken: 12 10 28
 * MODE says how:
 *     wait   sigwait
 *     info   sigwaitinfo; also checks that each si_pid is the pid fork returned for the
 *            sender ("senders: ok")
 *     timed  sigtimedwait with a 10 s timeout; then one more with a zero timeout, which
 *            finds nothing ("then: timed out")
 *     fd     reads of a signalfd with room for 2 signals each, until it has the 3 (a read
 *            returns what is pending: 1 or 2); prints "reads: R", and that each ssi_pid is
 *            the sender's ("senders: ok"); then a read of the non-blocking signalfd, which
 *            finds nothing ("then: EAGAIN")
 */
#include "common.h"
#include <sys/signalfd.h>

#define N 3

static const int SIGS[N] = { SIGUSR1, SIGUSR2, SIGWINCH };

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "wait";
    struct timespec ten = { 10, 0 }, zero = { 0, 0 };
    int i, j, sig, senders_ok = 1;
    pid_t pids[N];
    sigset_t m;
    siginfo_t si;

    program_start();
    sigemptyset(&m);
    for (i = 0; i < N; i++)
        sigaddset(&m, SIGS[i]);
    if (sigprocmask(SIG_BLOCK, &m, NULL) < 0)
        die("sigprocmask");
    for (i = 0; i < N; i++) {
        pids[i] = fork_or_die();
        if (pids[i] == 0) {
            client_start();
            if (kill(getppid(), SIGS[i]) < 0)
                die("kill");
            exit(0);
        }
    }
    printf("taken:");
    if (strcmp(mode, "fd") == 0) {
        struct signalfd_siginfo got[2];
        int fd = signalfd(-1, &m, SFD_NONBLOCK), reads = 0, k = 0;
        struct pollfd p = { fd, POLLIN, 0 };

        if (fd < 0)
            die("signalfd");
        while (k < N) {
            ssize_t n;

            if (poll(&p, 1, -1) < 0)
                die("poll");
            n = read(fd, got, sizeof got);
            if (n < 0 && errno == EAGAIN)
                continue;
            if (n < 0)
                die("read");
            reads++;
            for (i = 0; i < (int)(n / sizeof got[0]); i++, k++) {
                printf(" %u", got[i].ssi_signo);
                for (j = 0; j < N; j++)
                    if (SIGS[j] == (int)got[i].ssi_signo && (pid_t)got[i].ssi_pid != pids[j])
                        senders_ok = 0;
            }
        }
        printf("\nreads: %d\nsenders: %s\n", reads, senders_ok ? "ok" : "wrong");
        printf("then: %s\n", read(fd, got, sizeof got) < 0 && errno == EAGAIN ? "EAGAIN" : "a signal");
        wait_all_ok(pids, N);
        return 0;
    }
    for (i = 0; i < N; i++) {
        if (strcmp(mode, "wait") == 0) {
            if (sigwait(&m, &sig) != 0)
                fail("sigwait");
        } else {
            sig = strcmp(mode, "info") == 0 ? sigwaitinfo(&m, &si) : sigtimedwait(&m, &si, &ten);
            if (sig < 0)
                die("sigwaitinfo");
            for (j = 0; j < N; j++)
                if (SIGS[j] == sig && si.si_pid != pids[j])
                    senders_ok = 0;
        }
        printf(" %d", sig);
    }
    printf("\n");
    if (strcmp(mode, "info") == 0)
        printf("senders: %s\n", senders_ok ? "ok" : "wrong");
    if (strcmp(mode, "timed") == 0)
        printf("then: %s\n", sigtimedwait(&m, &si, &zero) < 0 && errno == EAGAIN ? "timed out" : "a signal");
    wait_all_ok(pids, N);
    return 0;
}
