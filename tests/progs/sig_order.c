/*
 * sig_order: where an asynchronous signal lands among a server's receives (issue #10, class 5).
 *
 *   sig_order MODE [N]
 *
 * The parent listens on TCP and forks a client that connects and sends N (default 20) 4-byte
 * messages, a random pause (DDBX_JITTER) before each, then waits for "bye". It also forks a
 * "timer" child that pauses N/2 random times and exits: its SIGCHLD comes somewhere among the
 * client's messages, at another place in every native run. The parent's SIGCHLD handler
 * notes the signal; the parent polls the connection and reads one message per ready set, and
 * prints after how many messages it saw the signal. MODE says how the handler tells the loop:
 *
 *   flag     the handler sets a flag (sa_flags 0: a poll it interrupts fails with EINTR),
 *            looked at after every poll;
 *   restart  the same with SA_RESTART, installed with signal(3);
 *   pipe     the handler writes a byte to a self-pipe that the poll watches beside the
 *            connection (what nginx, postgres and gunicorn do);
 *   reap     three timer children, and the handler reaps whatever has ended with a
 *            waitpid(-1, WNOHANG) loop (nginx's master, postgres's postmaster, gunicorn's
 *            arbiter); the line ends with which child each run of the handler reaped, e.g.
 *            "reaped t2 t1 | t3 | c" (c: the client), which differs natively too.
 *
 * After the N messages the parent waits for the signal if it has not come (pause(2) for the
 * flags, the pipe's poll for the pipe), reaps the timer, says "bye", reaps the client (whose
 * SIGCHLD comes during that waitpid) and prints one line:
 *   "signal after K of N messages, E interrupted polls, H handler runs"
 * K differs natively; a replay prints the record's line.
 */
#include "common.h"
#include <signal.h>

static volatile sig_atomic_t got, runs, reaping, timers_left, client_left;
static int self_pipe[2] = {-1, -1};
static pid_t timer_pids[3], client_pid;
static char reaped[256];

/* Appends s to `reaped` (async-signal-safe). */
static void note_reaped(const char *s)
{
    size_t n = strlen(reaped);

    if (n + strlen(s) + 1 < sizeof reaped)
        memcpy(reaped + n, s, strlen(s) + 1);
}

static void reap_all(void)
{
    pid_t p;
    int i;

    if (runs > 1)
        note_reaped(" |");
    while ((p = waitpid(-1, NULL, WNOHANG)) > 0) {
        if (p == client_pid) {
            note_reaped(" c");
            client_left = 0;
        }
        for (i = 0; i < 3; i++)
            if (p == timer_pids[i]) {
                char t[4] = {' ', 't', (char)('1' + i), 0};

                note_reaped(t);
                timers_left--;
            }
    }
}

static void on_chld(int sig)
{
    int e = errno;

    (void)sig;
    got = 1;
    runs++;
    if (reaping)
        reap_all();
    if (self_pipe[1] >= 0 && write(self_pipe[1], "s", 1) < 0 && errno != EAGAIN)
        _exit(3);
    errno = e;
}

static void client(int port, int n)
{
    int fd = connect_to(port), i;
    char buf[4];

    jitter_init();
    for (i = 0; i < n; i++) {
        jitter();
        snprintf(buf, sizeof buf, "m%02d", i % 100);
        write_all(fd, buf, 4);
    }
    if (read_retry(fd, buf, 3) != 3 || memcmp(buf, "bye", 3) != 0)
        fail("client: no bye");
    _exit(0);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "flag";
    int n = argc > 2 ? atoi(argv[2]) : 20;
    int lfd, port, conn, k = -1, msgs = 0, eintr = 0, i, t, timers;
    pid_t cpid, tpid = -1;
    sigset_t chld, old;
    char buf[4];

    program_start();
    if (n < 2 || n > 1000)
        fail("usage: sig_order flag|restart|pipe|reap [N]");
    reaping = strcmp(mode, "reap") == 0;
    timers = reaping ? 3 : 1;
    if (strcmp(mode, "pipe") == 0) {
        if (pipe2(self_pipe, O_NONBLOCK | O_CLOEXEC) < 0)
            die("pipe2");
    }
    if (strcmp(mode, "restart") == 0) {
        if (signal(SIGCHLD, on_chld) == SIG_ERR)
            die("signal");
    } else {
        struct sigaction sa;

        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_chld;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGCHLD, &sa, NULL) < 0)
            die("sigaction");
    }
    lfd = bind_any(&port, 1);
    /* The handler must not see a child before its pid is known. */
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &old);
    cpid = fork_or_die();
    if (cpid == 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        close_or_die(lfd);
        client(port, n);
    }
    client_pid = cpid;
    client_left = 1;
    sigprocmask(SIG_SETMASK, &old, NULL);
    conn = accept_one(lfd);
    sigprocmask(SIG_BLOCK, &chld, &old);
    for (t = 0; t < timers; t++) {
        tpid = fork_or_die();
        if (tpid == 0) {
            sigprocmask(SIG_SETMASK, &old, NULL);
            jitter_init();
            for (i = 0; i < n / 2; i++)
                jitter();
            _exit(0);
        }
        timer_pids[t] = tpid;
    }
    timers_left = timers;
    sigprocmask(SIG_SETMASK, &old, NULL);
    while (msgs < n) {
        struct pollfd p[2] = {{conn, POLLIN, 0}, {self_pipe[0], POLLIN, 0}};
        int r = poll(p, self_pipe[0] >= 0 ? 2 : 1, -1);

        if (r < 0 && errno != EINTR)
            die("poll");
        if (r < 0)
            eintr++;
        /* Looked at right after the poll only: a handler that runs anywhere between two
         * polls counts the same, as replay runs one that came in computation between the
         * same two events (not at the same instruction). */
        if (self_pipe[0] < 0 && got && k < 0)
            k = msgs;
        if (r > 0 && self_pipe[0] >= 0 && (p[1].revents & POLLIN)) {
            if (read(self_pipe[0], buf, 1) == 1 && k < 0)
                k = msgs;
        }
        if (r > 0 && (p[0].revents & POLLIN)) {
            if (recv_all(conn, buf, 4) != 4)
                fail("short message");
            msgs++;
        }
    }
    while (k < 0) {
        if (self_pipe[0] >= 0) {
            struct pollfd p = {self_pipe[0], POLLIN, 0};

            if (poll(&p, 1, -1) == 1 && read(self_pipe[0], buf, 1) == 1)
                k = msgs;
        } else {
            pause();
            if (got)
                k = msgs;
        }
    }
    if (!reaping) {
        wait_ok(tpid);
        write_all(conn, "bye", 3);
        wait_ok(cpid);
        printf("signal after %d of %d messages, %d interrupted polls, %d handler runs\n", k,
               n, eintr, (int)runs);
        return 0;
    }
    sigprocmask(SIG_BLOCK, &chld, &old);
    while (timers_left > 0)
        sigsuspend(&old);
    sigprocmask(SIG_SETMASK, &old, NULL);
    write_all(conn, "bye", 3);
    sigprocmask(SIG_BLOCK, &chld, &old);
    while (client_left)
        sigsuspend(&old);
    sigprocmask(SIG_SETMASK, &old, NULL);
    printf("signal after %d of %d messages, %d interrupted polls, reaped%s\n", k, n, eintr,
           reaped);
    return 0;
}
