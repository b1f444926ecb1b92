/*
 * kill_grace: a parent stops its child the way scripts and wrappers do, by asking, waiting a
 * grace period, then sending SIGKILL (`kill $pid; sleep 1; kill -9 $pid`; runuser sends
 * SIGKILL two seconds after the SIGTERM it relays).
 *
 *   kill_grace [FILE]
 *
 * The parent makes a socketpair and forks a child. The child reads "stop", cleans up (sleeps
 * as many microseconds as FILE says, none if no file), prints "cleaned up" and exits 0. The
 * parent sends "stop", sleeps 200 ms (its grace period), sends the child SIGKILL, reaps it and
 * prints how it ended.
 *
 * Recorded with FILE saying 0 the child has exited when the SIGKILL comes: "child exited 0".
 * Natively with FILE saying 1000000 the SIGKILL ends the child in its clean-up: "child killed
 * by signal 9". A replay with that FILE (the child slower, as under load; ddbx does not replay
 * the contents of files) must still print the record's lines: the SIGKILL, which found the
 * record's child gone, waits for the replay's to end.
 */
#include "common.h"
#include <signal.h>

int main(int argc, char **argv)
{
    int sv[2];
    char buf[4];
    pid_t child;

    program_start();
    child = fork_on_pair(sv);
    if (child == 0) {
        long cleanup = number_in(argc > 1 ? argv[1] : NULL);

        if (recv_all(sv[1], buf, sizeof buf) != sizeof buf)
            return 1;
        if (cleanup > 0)
            usleep((useconds_t)cleanup);
        printf("cleaned up\n");
        fflush(stdout);
        return 0;
    }
    if (write(sv[0], "stop", 4) != 4)
        fail("write");
    usleep(200000);
    if (kill(child, SIGKILL) < 0)
        fail("kill");
    reap_and_say(child, "child");
    return 0;
}
