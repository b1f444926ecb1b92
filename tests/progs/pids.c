/* pids: what a program shows of process ids, run to run. No socket race: the pids themselves
 * differ, natively and, unless ddbx shows the program its record's, in a replay.
 *
 * The parent prints its own pid four ways (getpid, syscall(SYS_getpid), gettid) and its
 * parent's, and a socketpair's owner and peer; forks child 1, which makes itself a process
 * group, sends "c1 PID PPID PGRP" over the socketpair (the line's length is a function of the
 * pids: a replay that showed other pids would receive another count) and waits in pause();
 * forks child 2, which exits 3. The parent reads child 1's line, awaits it in pause()
 * (/proc/PID/syscall of the pid it read), kills its group by that pid (killpg), waits for it
 * by that pid, then waits for any child; then runs `sh -c 'echo sh $$ $PPID'` through
 * posix_spawn, waits for it by the pid posix_spawn gave, and prints what each call returned
 * and the pid its SA_SIGINFO SIGCHLD handler saw last.
 *
 * Prints (only the parent, after each thing it waited for): "p PID PID PID PPID",
 * "owner PID peer PID" (fcntl's F_SETOWN then F_GETOWN, SO_PEERCRED), "fork C1 C2",
 * "c1 C1 PID C1", "killed C1 15", "reaped C2 3", "sh SH PID" (from sh), "spawned SH 0",
 * "sigchld SH". */
#include "common.h"

#include <signal.h>
#include <spawn.h>

extern char **environ;

static volatile sig_atomic_t last_sigchld;

static void on_sigchld(int sig, siginfo_t *info, void *ctx)
{
    (void)sig;
    (void)ctx;
    last_sigchld = info->si_pid;
}

int main(void)
{
    int sv[2], status;
    pid_t c1, c2, sh, r;
    char line[128];
    size_t got = 0;
    struct sigaction sa;
    char *argv[] = {"sh", "-c", "echo sh $$ $PPID", NULL};

    program_start();
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigchld;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGCHLD, &sa, NULL) < 0)
        die("sigaction");
    printf("p %d %ld %d %d\n", (int)getpid(), syscall(SYS_getpid), (int)gettid(), (int)getppid());
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        die("socketpair");
    {
        /* The socket's owner (nginx makes itself the owner of each worker's channel) and its
         * peer's credentials, which name this process. */
        struct ucred cred;
        socklen_t len = sizeof cred;
        if (fcntl(sv[0], F_SETOWN, getpid()) < 0)
            die("F_SETOWN");
        if (getsockopt(sv[0], SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
            die("SO_PEERCRED");
        printf("owner %d peer %d\n", fcntl(sv[0], F_GETOWN), (int)cred.pid);
    }

    c1 = fork();
    if (c1 < 0)
        die("fork");
    if (c1 == 0) {
        char msg[128];
        int n;

        close_or_die(sv[0]);
        if (setpgid(0, 0) < 0)
            die("setpgid");
        n = snprintf(msg, sizeof msg, "c1 %d %d %d\n", (int)getpid(), (int)getppid(),
                     (int)getpgrp());
        write_all(sv[1], msg, (size_t)n);
        for (;;)
            pause();
    }
    c2 = fork();
    if (c2 < 0)
        die("fork");
    if (c2 == 0)
        _exit(3);
    close_or_die(sv[1]);
    printf("fork %d %d\n", (int)c1, (int)c2);

    /* Child 1's line, up to its newline. */
    while (got == 0 || line[got - 1] != '\n') {
        ssize_t n = read(sv[0], line + got, sizeof line - 1 - got);
        if (n <= 0)
            die("read");
        got += (size_t)n;
    }
    line[got] = '\0';
    fputs(line, stdout);
    {
        int pid, ppid, pgrp;
        if (sscanf(line, "c1 %d %d %d", &pid, &ppid, &pgrp) != 3)
            fail("child 1's line");
        {
            /* Killed only once it waits in pause(), found in /proc/PID/syscall by the pid
             * it sent: killed right after its send, it could die before ddbx logged the
             * send. */
            static const long paused[] = {SYS_pause, SYS_rt_sigsuspend, -1};
            await_state(pid, paused, 0);
        }
        if (killpg(pgrp, SIGTERM) < 0)
            die("killpg");
        r = waitpid(pid, &status, 0);
        if (r < 0)
            die("waitpid");
        printf("killed %d %d\n", (int)r, WIFSIGNALED(status) ? WTERMSIG(status) : -1);
    }
    r = wait(&status);
    if (r < 0)
        die("wait");
    printf("reaped %d %d\n", (int)r, WIFEXITED(status) ? WEXITSTATUS(status) : -1);

    if (posix_spawn(&sh, "/bin/sh", NULL, NULL, argv, environ) != 0)
        die("posix_spawn");
    r = waitpid(sh, &status, 0);
    if (r < 0)
        die("waitpid");
    printf("spawned %d %d\n", (int)r, WEXITSTATUS(status));
    printf("sigchld %d\n", (int)last_sigchld);
    return 0;
}
