/*
 * term_unblocked: a child that unblocks every signal itself, as haproxy does at its start,
 * and leaves SIGTERM to its default action, killed by its parent after its last message.
 *
 *   term_unblocked FILE
 *
 * The parent makes a socketpair and forks a child. The child sets an empty signal mask, then
 * 3 times: reads a 4-byte message, answers "ack.", computes (a loop of as many iterations as
 * FILE says, no system call; none if no file) and prints "got K". The parent sends each
 * message and reads its ack, then waits until the child is blocked reading a 4th message or
 * has computed for 50 ms of CPU (/proc/PID), sends the child SIGTERM, reaps it and prints
 * "child killed by signal 15": the record's child has printed "got 3" by then and waits for a
 * 4th message.
 *
 * A replay with FILE saying 700000000 has the parent's kill come during the computation: the
 * signal, held by ddbx until the child's next call although the child unblocked it, must not
 * end the child before it prints "got 3".
 */
#include "common.h"
#include <signal.h>

int main(int argc, char **argv)
{
    int sv[2], i;
    char msg[4];
    pid_t child;

    program_start();
    child = fork_on_pair(sv);
    if (child == 0) {
        long spins = number_in(argc > 1 ? argv[1] : NULL);
        sigset_t none;
        volatile long k;

        sigemptyset(&none);
        if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
            fail("sigprocmask");
        for (i = 1;; i++) {
            if (recv_all(sv[1], msg, sizeof msg) != sizeof msg)
                return 1;
            if (write(sv[1], "ack.", 4) != 4)
                return 1;
            for (k = 0; k < spins; k++)
                ;
            printf("got %d\n", i);
            fflush(stdout);
        }
    }
    for (i = 0; i < 3; i++) {
        if (write(sv[0], "msg.", 4) != 4)
            fail("write");
        if (recv_all(sv[0], msg, sizeof msg) != sizeof msg)
            fail("read ack");
    }
    /* In the record, the child's read of a 4th message; in a slow replay, its computation
     * (5 ticks of CPU: 50 ms). */
    {
        static const long reads[] = {SYS_read, SYS_recvfrom, -1};

        await_state(child, reads, 5);
    }
    terminate_and_say(child, "child");
    return 0;
}
