/*
 * term_stuck: a child that its parent kills while it waits in a call ddbx does not see.
 *
 *   term_stuck
 *
 * The parent makes a socketpair and forks a child. The child reads one 4-byte message,
 * prints "got it", sends "ack." back and then waits for signals with the raw pause system
 * call (no libc function a preload could hook). The parent reads the ack, sends the child
 * SIGTERM, reaps it and prints how it ended: "child killed by signal 15".
 *
 * In replay the child's last event is its ack; ddbx holds the SIGTERM until the child's next
 * call, which never comes. The replay must still end, with the child killed by SIGTERM as
 * in the record, not hang with the parent waiting for it.
 */
#include "common.h"
#include <signal.h>
#include <sys/syscall.h>

int main(void)
{
    int sv[2];
    char msg[4];
    pid_t child;

    program_start();
    child = fork_on_pair(sv);
    if (child == 0) {
        if (recv_all(sv[1], msg, sizeof msg) != sizeof msg)
            return 1;
        printf("got it\n");
        fflush(stdout);
        if (write(sv[1], "ack.", 4) != 4)
            return 1;
        for (;;)
            syscall(SYS_pause);
    }
    if (write(sv[0], "msg.", 4) != 4)
        fail("write");
    if (recv_all(sv[0], msg, sizeof msg) != sizeof msg)
        fail("read ack");
    if (kill(child, SIGTERM) < 0)
        fail("kill");
    reap_and_say(child, "child");
    return 0;
}
