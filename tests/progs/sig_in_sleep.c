/*
 * sig_in_sleep: a signal the record took inside a readiness wait arrives, in replay, while
 * the program sleeps (or computes) before that wait.
 *
 *   sig_in_sleep [FILE [spin]]
 *
 * The parent makes a socketpair and forks a child (the "server"). The server installs a
 * SIGTERM handler that sets a flag and writes a byte into a self-pipe, sends "ready" to the
 * parent, sleeps as many microseconds as FILE says (none: 0) with usleep (with `spin`:
 * computes, a loop of as many iterations, no system call),
 * and then, unless the flag is already set, waits in select on its self-pipe (at most 5 s).
 * It prints "stopped in select" or "stopped before select" and exits 0. The parent reads
 * "ready", waits until the server is blocked in its sleep or its select (/proc/PID/syscall)
 * or has computed for 50 ms of CPU,
 * sends SIGTERM to the server, reaps it and prints how it ended.
 *
 * Recorded with FILE saying 0 the signal comes during the select. A replay run with FILE
 * saying 1000000 (the server slower before its select, as under load; ddbx replays the
 * environment and arguments, not the contents of files) receives it during the usleep: the
 * handler must still run in the select, as recorded. The same with `spin` and 300000000: the
 * signal arrives while the server computes before its select.
 */
#include "common.h"
#include <signal.h>
#include <sys/select.h>

static volatile sig_atomic_t stop;
static int self_pipe[2];

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
    if (write(self_pipe[1], "x", 1) < 0)
        _exit(3);
}

static int server(int fd, const char *file, int spin)
{
    long pre = number_in(file);
    volatile long k;
    struct sigaction sa;
    fd_set in;
    struct timeval tv = {5, 0};

    if (pipe(self_pipe) < 0)
        fail("pipe");
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL) < 0)
        fail("sigaction");
    if (write(fd, "ready", 5) != 5)
        fail("write");
    if (pre > 0 && spin)
        for (k = 0; k < pre; k++)
            ;
    else if (pre > 0)
        usleep((useconds_t)pre);
    if (stop) {
        printf("stopped before select\n");
        return 0;
    }
    FD_ZERO(&in);
    FD_SET(self_pipe[0], &in);
    if (select(self_pipe[0] + 1, &in, NULL, NULL, &tv) < 0 && errno != EINTR)
        fail("select");
    printf(stop ? "stopped in select\n" : "select timed out\n");
    return 0;
}

int main(int argc, char **argv)
{
    int sv[2];
    char buf[5];
    pid_t child;

    program_start();
    child = fork_on_pair(sv);
    if (child == 0)
        return server(sv[1], argc > 1 ? argv[1] : NULL, argc > 2 && !strcmp(argv[2], "spin"));
    if (recv_all(sv[0], buf, sizeof buf) != sizeof buf)
        fail("read ready");
    /* In the record, the server's select; in a slow replay, its sleep before it. */
    {
        static const long waits[] = {SYS_select, SYS_pselect6, SYS_nanosleep, SYS_clock_nanosleep, -1};

        await_state(child, waits, 5);
    }
    terminate_and_say(child, "server");
    return 0;
}
