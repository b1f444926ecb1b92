/*
 * sig_merged: two kills of one signal that the record delivered apart arrive as one in replay.
 *
 *   sig_merged [FILE [die|late]]
 *
 * The parent makes a socketpair and forks a child, which makes its own process group. The
 * child installs a SIGTERM handler that counts, sends "ready", then sleeps in 10 ms usleeps
 * until its handler has run twice (at most 300 sleeps), and prints how many times it ran. The
 * parent reads "ready", waits until the child is in a sleep, sends it SIGTERM, sleeps as many
 * microseconds as FILE says (none: 0), sends its group SIGTERM (as GNU `timeout` does: its
 * child, then the group), reaps it and prints how it ended.
 *
 * With FILE saying 200000 the child takes each signal in a sleep of its own: "child took 2
 * terms". With 0 the two kills come a microsecond apart, while the child has not run yet, and
 * the kernel keeps one: natively, most runs print "child took 1 terms". A record made with
 * 200000 and replayed with 0 (ddbx replays the arguments, not the contents of files: as a
 * sender that runs ahead under other timing) must still run the handler twice, where the
 * record ran it: the LD counts the kills the session's processes made.
 *
 * With `die`, the handler also leaves SIGTERM to its default action (a gunicorn worker): the
 * second kill ends the child ("child killed by signal 15"; natively with 0, in the runs where
 * the kernel kept one, the child sleeps its 300 sleeps and prints "child took 1 terms"). A
 * replay with 0 must end the child by the kill that merged, where its history ends.
 *
 * With `late`, the child leaves SIGTERM to its default action itself, in its loop after the
 * handler first ran (Python does so as it finalizes: a gunicorn worker that its arbiter and
 * `timeout` both signal). Recorded with 200000, the second kill ends it after the reset. With 0
 * the second kill comes while the handler is still there, natively and in replay alike: the
 * handler runs for it (or the kernel merges it), and the child is not killed. A replay must
 * end the child by that kill all the same, where its history ends, and not wait there for a
 * kill that already came.
 */
#include "common.h"
#include <signal.h>

static volatile sig_atomic_t terms;
static int to_default;
static int late;

static void on_term(int sig)
{
    struct sigaction dfl;

    terms++;
    if (to_default) {
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(sig, &dfl, NULL);
    }
}

static int child_main(int fd)
{
    struct sigaction sa;
    int slept;

    if (setpgid(0, 0) < 0)
        fail("setpgid");
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL) < 0)
        fail("sigaction");
    if (write(fd, "ready", 5) != 5)
        fail("write");
    for (slept = 0; terms < 2 && slept < 300; slept++) {
        if (late && terms == 1) {
            late = 0;
            sa.sa_handler = SIG_DFL;
            if (sigaction(SIGTERM, &sa, NULL) < 0)
                fail("sigaction");
        }
        usleep(10000);
    }
    printf("child took %d terms\n", (int)terms);
    return 0;
}

int main(int argc, char **argv)
{
    static const long sleeps[] = {SYS_nanosleep, SYS_clock_nanosleep, -1};
    long gap = number_in(argc > 1 ? argv[1] : NULL);
    to_default = argc > 2 && !strcmp(argv[2], "die");
    late = argc > 2 && !strcmp(argv[2], "late");
    int sv[2];
    char buf[5];
    pid_t child;

    program_start();
    child = fork_on_pair(sv);
    if (child == 0)
        return child_main(sv[1]);
    if (recv_all(sv[0], buf, sizeof buf) != sizeof buf)
        fail("read ready");
    await_state(child, sleeps, 0);
    if (kill(child, SIGTERM) < 0)
        fail("kill");
    if (gap > 0)
        usleep((useconds_t)gap);
    if (kill(-child, SIGTERM) < 0)
        fail("kill group");
    reap_and_say(child, "child");
    return 0;
}
