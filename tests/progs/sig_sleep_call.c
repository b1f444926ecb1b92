/*
 * sig_sleep_call: a signal the record took in a hooked call arrives, in replay, while the
 * program sleeps in a loop that waits for its handler.
 *
 *   sig_sleep_call FILE
 *
 * The parent makes a socketpair and forks a child with a SIGTERM handler that sets a flag.
 * The child sends "ready" and waits for the flag: with FILE saying 0 in sigsuspend(2) (a call
 * ddbx hooks: the record notes the signal "in a call"), with 1 in 10 ms usleeps (at most
 * 300), as gunicorn's arbiter waits for its workers in `time.sleep` loops. The parent reads
 * "ready", waits until the child is in that call or sleep, sends it SIGTERM, reaps it and says
 * how it ended; the child prints whether its handler ran. Natively both print "child took the
 * term". A record made with 0 and replayed with 1 must run the handler in one of the sleeps
 * (before, replay kept it for a hooked call that never came, and the loop ran out).
 */
#include "common.h"
#include <signal.h>

static volatile sig_atomic_t took;

static void on_term(int sig)
{
    (void)sig;
    took = 1;
}

static int child_main(int fd, long sleeping)
{
    sigset_t term, empty;
    int slept;

    handle(SIGTERM, on_term, 0);
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigemptyset(&empty);
    if (!sleeping && sigprocmask(SIG_BLOCK, &term, NULL) < 0)
        fail("sigprocmask");
    if (write(fd, "ready", 5) != 5)
        fail("write");
    for (slept = 0; !took && slept < 300; slept++) {
        if (sleeping)
            usleep(10000);
        else
            sigsuspend(&empty);
    }
    printf("child %s the term\n", took ? "took" : "never took");
    return 0;
}

int main(int argc, char **argv)
{
    static const long waits[] = {SYS_rt_sigsuspend, SYS_nanosleep, SYS_clock_nanosleep, -1};
    long sleeping = number_in(argc > 1 ? argv[1] : NULL);
    int sv[2];
    char buf[5];
    pid_t child;

    program_start();
    child = fork_on_pair(sv);
    if (child == 0)
        return child_main(sv[1], sleeping);
    if (recv_all(sv[0], buf, sizeof buf) != sizeof buf)
        fail("read ready");
    await_state(child, waits, 0);
    if (kill(child, SIGTERM) < 0)
        fail("kill");
    reap_and_say(child, "child");
    return 0;
}
