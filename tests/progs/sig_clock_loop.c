/*
 * sig_clock_loop: a SIGCHLD comes before the program has read as many clocks as the record had
 * read before it, and the program then reads more than that without another event.
 *
 *   sig_clock_loop FILE
 *
 * The parent forks a child that sleeps as many microseconds as FILE says (none: 0) and exits.
 * Its SIGCHLD handler sets a flag; the parent waits for the flag in a loop that reads the
 * clock and sleeps 1 ms (at most 3000 turns), as gunicorn's arbiter waits for its workers
 * (`time.time()`, `time.sleep(0.1)`), then reaps the child and prints whether the handler ran
 * ("handler ran" natively, whatever FILE says). Recorded with 200000, the delivery comes after
 * about 200 clock reads; replayed with 0, the signal arrives after a few, when nothing is due.
 * The handler must run once the loop has read as many clocks as the record had (before, it
 * waited for the next event, which came only after the loop ran out: "handler never ran").
 */
#include "common.h"
#include <signal.h>
#include <time.h>

static volatile sig_atomic_t ended;

static void on_chld(int sig)
{
    (void)sig;
    ended = 1;
}

int main(int argc, char **argv)
{
    long gap = number_in(argc > 1 ? argv[1] : NULL);
    struct timespec ts;
    pid_t child;
    int turns, status;

    program_start();
    handle(SIGCHLD, on_chld, SA_RESTART);
    child = fork();
    if (child < 0)
        fail("fork");
    if (child == 0) {
        if (gap > 0)
            usleep((useconds_t)gap);
        _exit(0);
    }
    for (turns = 0; !ended && turns < 3000; turns++) {
        if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
            fail("clock_gettime");
        usleep(1000);
    }
    printf("handler %s\n", ended ? "ran" : "never ran");
    if (waitpid(child, &status, 0) != child)
        fail("waitpid");
    return 0;
}
