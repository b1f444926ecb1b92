/*
 * sig_in_clock: a SIGTERM that the record took in a blocking poll arrives, in replay, while
 * the program reads its clock (an event loop reads the time before each wait).
 *
 * The root forks a child on a socketpair. The child installs its handler, says so, reads its
 * clock 200,000 times (a few ms natively, tens of ms under ddbx, where each read is a recorded
 * value), then polls its end of the pair with no timeout while the flag is set, counting the
 * polls, sends the count and ends. The root waits for the word, pauses 30 or 300 ms (from
 * the CPU's cycle counter: record and replay choose independently), sends SIGTERM and prints
 *     polls before the SIGTERM: 1
 * A replay whose signal comes during the reads must still run the handler in the poll (the
 * count 0 means it ran before the loop looked at the flag).
 */
#include "common.h"
#include <signal.h>
#include <time.h>

static int polls(int fd)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    struct timespec ts;
    int n = 0;

    for (long i = 0; i < 200000; i++)
        clock_gettime(CLOCK_MONOTONIC, &ts);
    while (term_running) {
        if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
            die("poll");
        n++;
    }
    return n;
}

int main(void)
{
    program_start();
    term_after_pause(polls, "polls");
    return 0;
}
