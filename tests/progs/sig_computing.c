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

static volatile sig_atomic_t run = 1;

static void on_term(int sig)
{
    (void)sig;
    run = 0;
}

static void child(int fd)
{
    struct sigaction sa;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int polls = 0;
    char line[32];

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    if (sigaction(SIGTERM, &sa, NULL) < 0)
        die("sigaction");
    write_all(fd, "r", 1);
    while (run) {
        if (poll(&pfd, 1, 1) < 0 && errno != EINTR)
            die("poll");
        polls++;
        for (volatile long i = 0; i < 10000000 && run; i++)
            ;
    }
    snprintf(line, sizeof line, "%d\n", polls);
    write_str(fd, line);
    close_or_die(fd);
    _exit(0);
}

int main(void)
{
    char line[32];

    program_start();
    term_after_pause(child, line, sizeof line);
    printf("polls before the SIGTERM: %s\n", line);
    return 0;
}
