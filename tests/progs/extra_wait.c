/*
 * extra_wait: a program that, changed since its record, makes one readiness wait more just
 * before it exits.
 *
 *   extra_wait FILE
 *
 * The parent forks a child on a socketpair; the child sends one byte and exits. The parent
 * polls its end, reads the byte, and, when FILE says 1, polls its end once more (it is at
 * EOF: readable) before it exits. A record made with 0 and replayed with 1 must be reported
 * as a divergence at the parent's exit, not as a kill from outside: the replay waits there
 * for a signal that could have ended the record's process in that wait, and ends it when none
 * comes.
 */
#include "common.h"
#include <poll.h>

int main(int argc, char **argv)
{
    long extra = number_in(argc > 1 ? argv[1] : NULL);
    struct pollfd p;
    int sv[2];
    char c;
    pid_t child;

    program_start();
    child = fork_on_pair(sv);
    if (child == 0) {
        if (write(sv[1], "x", 1) != 1)
            fail("write");
        return 0;
    }
    p.fd = sv[0];
    p.events = POLLIN;
    if (poll(&p, 1, -1) != 1)
        fail("poll");
    if (read(sv[0], &c, 1) != 1)
        fail("read");
    reap_and_say(child, "child");
    if (extra) {
        p.revents = 0;
        if (poll(&p, 1, -1) != 1)
            fail("poll again");
    }
    return 0;
}
