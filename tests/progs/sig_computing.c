/*
 * sig_computing: a SIGTERM whose handler clears a loop's flag lands in the program's
 * computation between two polls (mosquitto's main loop, ended by a script's `kill`).
 *
 * The root forks a child on a socketpair. The child installs its handler, says so, and loops
 * while the flag is set: a poll of its end of the pair (1 ms, nothing comes), then about 10 ms
 * of computation; it then sends the root how many polls it made, and ends. The root waits
 * for the word, pauses, sends SIGTERM, reads the count and prints
 *     polls before the SIGTERM: 3
 * The pause is 30 ms or 300 ms, chosen from the CPU's cycle counter (not a recorded outcome:
 * record and replay differ), so the replay's signal may come much later than the record's.
 */
#include "common.h"
#include <signal.h>

static int polls(int fd)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int n = 0;

    while (term_running) {
        if (poll(&pfd, 1, 1) < 0 && errno != EINTR)
            die("poll");
        n++;
        for (volatile long i = 0; i < 10000000 && term_running; i++)
            ;
    }
    return n;
}

int main(void)
{
    program_start();
    term_after_pause(polls, "polls");
    return 0;
}
