/*
 * sig_errno: a signal that interrupts ddbx's own wait inside a hooked call must not leave
 * EINTR in the errno of a call that succeeded.
 *
 *   sig_errno FILE
 *
 * The parent installs a SIGUSR1 handler that sets a flag, makes a socketpair and forks two
 * children: a writer that sleeps as many microseconds as FILE says (none: 0) and sends the
 * parent one byte, and a killer that sleeps 100 ms and sends the parent SIGUSR1. The parent
 * selects on its end of the pair the way CPython does (errno set to 0, the call made again
 * while errno says EINTR, whatever it returned), then waits for its handler, and prints how
 * many times it made the select again. With 0, the byte comes before the signal: "select
 * made again 0 times". With 500000 the signal interrupts the select natively: "1 times". A
 * record made with 0 and replayed with 500000 must print the record's line: in replay the
 * signal interrupts ddbx's wait for the recorded ready set, and errno said EINTR after a
 * select that succeeded (the select was made again, which the record never did: gunicorn's
 * worker, under Python's select, diverged at its last wait).
 */
#include "common.h"
#include <signal.h>
#include <sys/select.h>

static volatile sig_atomic_t got;

static void on_usr1(int sig)
{
    (void)sig;
    got = 1;
}

int main(int argc, char **argv)
{
    long gap = number_in(argc > 1 ? argv[1] : NULL);
    int sv[2], again = -1, n, turns;
    pid_t writer, killer;
    fd_set r;

    program_start();
    handle(SIGUSR1, on_usr1, 0);
    writer = fork_on_pair(sv);
    if (writer == 0) {
        if (gap > 0)
            usleep((useconds_t)gap);
        if (write(sv[1], "x", 1) != 1)
            fail("write");
        return 0;
    }
    killer = fork();
    if (killer < 0)
        fail("fork");
    if (killer == 0) {
        usleep(100000);
        if (kill(getppid(), SIGUSR1) < 0)
            fail("kill");
        return 0;
    }
    do {
        again++;
        FD_ZERO(&r);
        FD_SET(sv[0], &r);
        errno = 0;
        n = select(sv[0] + 1, &r, NULL, NULL, NULL);
    } while (errno == EINTR);
    if (n != 1)
        fail("select");
    for (turns = 0; !got && turns < 300; turns++)
        usleep(10000);
    printf("select made again %d times, handler %s\n", again, got ? "ran" : "never ran");
    reap_and_say(writer, "writer");
    reap_and_say(killer, "killer");
    return 0;
}
