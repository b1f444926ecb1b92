/*
 * sig_midgap: a SIGTERM whose handler clears a loop's flag lands in the middle of the child's
 * computation, where the flag is checked, with no hooked call between the event before and the
 * check (a main loop that checks its flag between two halves of its work, as Python's eval
 * loop checks its pending signals between bytecodes).
 *
 * The root forks a child on a socketpair. The child installs its handler, says so, and loops:
 * about 4 ms of computation, leaves the loop if the flag is clear, about 4 ms more, counts a
 * turn and polls its end of the pair (1 ms, nothing comes); it then sends the root how many
 * turns it made, and ends. The root waits for the word, pauses 30 or 300 ms (from the CPU's
 * cycle counter, not a recorded outcome), sends SIGTERM, reads the count and prints
 *     turns before the SIGTERM: 3
 * A SIGTERM that lands in the second half is seen by the next turn's check, one in the first
 * half by this turn's: both are between the same two events, so only where in the computation
 * the handler ran decides the count.
 */
#include "common.h"
#include <signal.h>

static void compute(void)
{
    for (volatile long i = 0; i < 4000000; i++)
        ;
}

static int turns(int fd)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int n = 0;

    for (;;) {
        compute();
        if (!term_running)
            break;
        compute();
        n++;
        if (poll(&pfd, 1, 1) < 0 && errno != EINTR)
            die("poll");
    }
    return n;
}

int main(void)
{
    program_start();
    term_after_pause(turns, "turns");
    return 0;
}
