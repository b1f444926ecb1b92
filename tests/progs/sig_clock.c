/*
 * sig_clock: a SIGTERM whose handler clears a loop's flag lands in the program's computation,
 * after the loop has read the clock twice and checked the flag in between (an event loop that
 * reads its clock several times a turn: Twisted's reactor).
 *
 * The root forks a child on a socketpair. The child installs its handler, says so, and loops:
 * reads the clock, leaves the loop if the flag is clear, reads the clock again, computes about
 * 10 ms, counts a turn, and polls its end of the pair (1 ms, nothing comes); it then sends the
 * root how many turns it made, and ends. The root waits for the word, pauses 30 or 300 ms
 * (chosen from the CPU's cycle counter, not a recorded outcome), sends SIGTERM, reads the count
 * and prints
 *     turns before the SIGTERM: 3
 * Most of a turn is its computation, after both clock reads: a SIGTERM that lands there is
 * seen by the next turn's check. Replayed at the start of its gap (as the poll returns), the
 * handler ran before the first read and that check, and the child made a turn fewer.
 */
#include "common.h"
#include <signal.h>
#include <time.h>

static long now_us(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
        die("clock_gettime");
    return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

static int turns(int fd)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int n = 0;

    for (;;) {
        (void)now_us();
        if (!term_running)
            break;
        (void)now_us();
        for (volatile long i = 0; i < 10000000; i++)
            ;
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
