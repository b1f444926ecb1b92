/*
 * sig_clock_errno: a clock read that succeeded must not leave EINTR in errno, although a
 * signal interrupted ddbx's own wait inside it.
 *
 *   sig_clock_errno FILE
 *
 * The parent installs a SIGUSR1 handler that sets a flag and forks a child that sleeps as
 * many microseconds as FILE says and sends it SIGUSR1. The parent reads the clock every
 * millisecond until its handler has run (at most 3000 times), setting errno to 0 before each
 * read and counting the reads after which errno says EINTR, and prints that count: 0,
 * natively. Recorded with 50000, the delivery comes after about 50 clock reads; replayed with
 * 400000, the 50th read waits for the signal, which interrupts that wait. Before, the read
 * returned its recorded value with errno saying EINTR ("after 1 clock reads").
 */
#include "common.h"
#include <signal.h>
#include <time.h>

static volatile sig_atomic_t got;

static void on_usr1(int sig)
{
    (void)sig;
    got = 1;
}

int main(int argc, char **argv)
{
    long gap = number_in(argc > 1 ? argv[1] : NULL);
    struct timespec ts;
    int leaked = 0, turns;
    pid_t child;

    program_start();
    handle(SIGUSR1, on_usr1, 0);
    child = fork();
    if (child < 0)
        fail("fork");
    if (child == 0) {
        usleep((useconds_t)gap);
        if (kill(getppid(), SIGUSR1) < 0)
            fail("kill");
        return 0;
    }
    for (turns = 0; !got && turns < 3000; turns++) {
        errno = 0;
        if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
            fail("clock_gettime");
        if (errno == EINTR)
            leaked++;
        usleep(1000);
    }
    printf("handler %s, errno EINTR after %d clock reads that succeeded\n",
           got ? "ran" : "never ran", leaked);
    reap_and_say(child, "child");
    return 0;
}
