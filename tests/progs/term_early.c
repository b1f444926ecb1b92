/*
 * term_early: a child that leaves SIGTERM to its default action is killed by its parent while
 * it is still reading (issue #10 class 5: a script's `kill` of its server).
 *
 *   term_early [N]
 *
 * The parent makes a socketpair and forks a child that reads 4-byte messages one at a time,
 * a random pause (DDBX_JITTER) before each, and prints "got K" for each. The parent sends N
 * (default 20) messages at once, waits a random time, sends SIGTERM to the child and reaps it.
 * How many messages the child printed before it died differs natively. A replay kills it
 * where the record's died (after the same number), however early the parent's kill comes in
 * replay. The parent prints "child killed by signal 15" last.
 */
#include "common.h"
#include <signal.h>

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20, sv[2], i;
    pid_t child;

    if (n < 1 || n > 1000)
        die("term_early: N must be 1..1000");
    program_start();
    child = fork_on_pair(sv);
    if (child == 0) {
        char msg[4];

        client_start();
        for (i = 1;; i++) {
            jitter();
            if (recv_all(sv[1], msg, sizeof msg) != sizeof msg)
                return 1;
            printf("got %d\n", i);
            fflush(stdout);
        }
    }
    for (i = 0; i < n; i++)
        if (write(sv[0], "msg.", 4) != 4)
            fail("write");
    for (i = 0; i < n / 2; i++)
        jitter();
    if (kill(child, SIGTERM) < 0)
        fail("kill");
    reap_and_say(child, "child");
    return 0;
}
