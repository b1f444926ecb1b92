/*
 * sig_spin: a SIGTERM whose handler clears a flag that the child's computation spins on, with
 * no call at all until the flag is clear (a CPU-bound worker stopped by a signal).
 *
 * The root forks a child on a socketpair. The child installs its handler, says so, spins
 * until the flag is clear, sends the root "1" and ends. The root waits for the word, pauses
 * 30 or 300 ms (from the CPU's cycle counter), sends SIGTERM, reads the word and prints
 *     spins before the SIGTERM: 1
 * A record that held the handler back until the child's next call would wait for ever: the
 * child makes none until the handler has run.
 */
#include "common.h"
#include <signal.h>

static int spin(int fd)
{
    (void)fd;
    while (term_running)
        ;
    return 1;
}

int main(void)
{
    program_start();
    term_after_pause(spin, "spins");
    return 0;
}
