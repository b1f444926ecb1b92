/*
 * spawn_paths: client processes created by fork(), posix_spawn(), system()
 * and popen(), racing for accept().
 *
 * The parent listens on 127.0.0.1 (kernel-chosen port) and creates four
 * clients; <self> is this program (/proc/self/exe):
 *   client 1: fork();
 *   client 2: posix_spawn(<self>, "client 2 PORT");
 *   client 3: system("<self> client 3 PORT"), called in a forked launcher
 *             child (system() blocks until the client is done, and the
 *             client waits for the parent's reply, so the parent itself
 *             cannot be the one blocked in system());
 *   client 4: popen("<self> client 4 PORT report", "r").
 * Each client sleeps a random jitter, connects, sends "client N\n", reads
 * "ok\n" and exits 0 (client 4, with "report", first prints
 * "client 4 got ok" on its stdout, i.e. into the popen pipe).  The parent
 * accepts the 4 connections in whatever order they come, replies "ok\n" to
 * each, reads the popen pipe to EOF, pcloses it, reaps the others and prints
 *     accepted: 3 1 4 2
 *     popen output: client 4 got ok
 *     fork: exit 0, posix_spawn: exit 0, system: exit 0, popen: exit 0
 * Race: the accept order (varies natively with DDBX_JITTER=5).
 */
#include "common.h" /* the helpers every test program shares */
#include <spawn.h>

extern char **environ;

#define NCLIENTS 4

static int client(int id, int port, int report)
{
    int fd;

    client_start();
    fd = connect_to(port);
    client_hello(fd, id);
    close_or_die(fd);
    if (report)
        printf("client %d got ok\n", id);
    return 0;
}

/* A shell command line running this program as client `id`. */
static void client_command(char *out, size_t cap, const char *self, int id, int port,
                           const char *extra)
{
    if (strchr(self, '\''))
        fail("program path contains a quote");
    if ((size_t)snprintf(out, cap, "'%s' client %d %d%s", self, id, port, extra) >= cap)
        fail("command line too long");
}

/* "exit N" or "signal N" for a wait status. */
static void describe(int st, char *out, size_t cap)
{
    if (WIFEXITED(st))
        snprintf(out, cap, "exit %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(out, cap, "signal %d", WTERMSIG(st));
    else
        snprintf(out, cap, "status 0x%x", st);
}

int main(int argc, char **argv)
{
    char self[4096], cmd[4096 + 64], portstr[16], idstr[4], popen_out[256];
    char *spawn_argv[5];
    int port, lfd, i, e, order[NCLIENTS], st[NCLIENTS];
    char what[NCLIENTS][32];
    pid_t forked, spawned, launcher;
    ssize_t len;
    FILE *p;
    size_t n;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 4 && strcmp(argv[1], "client") == 0)
        return client(atoi(argv[2]), atoi(argv[3]), argc > 4 && strcmp(argv[4], "report") == 0);
    if (argc != 1)
        fail("usage: spawn_paths | spawn_paths client N PORT [report]");
    jitter_init();
    len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len < 0)
        die("readlink /proc/self/exe");
    self[len] = '\0';
    lfd = bind_any(&port, 1);
    if (fcntl(lfd, F_SETFD, FD_CLOEXEC) < 0)
        die("fcntl");
    snprintf(portstr, sizeof portstr, "%d", port);

    /* 1: fork */
    forked = fork_or_die();
    if (forked == 0) {
        close_or_die(lfd);
        exit(client(1, port, 0));
    }
    /* 2: posix_spawn */
    snprintf(idstr, sizeof idstr, "2");
    spawn_argv[0] = self;
    spawn_argv[1] = "client";
    spawn_argv[2] = idstr;
    spawn_argv[3] = portstr;
    spawn_argv[4] = NULL;
    e = posix_spawn(&spawned, self, NULL, NULL, spawn_argv, environ);
    if (e != 0) {
        errno = e;
        die("posix_spawn");
    }
    /* 3: system, in a launcher child */
    launcher = fork_or_die();
    if (launcher == 0) {
        int s;
        close_or_die(lfd);
        client_command(cmd, sizeof cmd, self, 3, port, "");
        s = system(cmd);
        if (s == -1)
            die("system");
        exit(WIFEXITED(s) ? WEXITSTATUS(s) : 128 + WTERMSIG(s));
    }
    /* 4: popen */
    client_command(cmd, sizeof cmd, self, 4, port, " report");
    p = popen(cmd, "r");
    if (!p)
        die("popen");

    for (i = 0; i < NCLIENTS; i++)
        close_or_die(accept_hello(lfd, NCLIENTS, &order[i]));
    close_or_die(lfd);

    n = fread(popen_out, 1, sizeof popen_out - 1, p);
    if (ferror(p))
        die("fread");
    popen_out[n] = '\0';
    if (n > 0 && popen_out[n - 1] == '\n')
        popen_out[n - 1] = '\0';
    st[3] = pclose(p);
    if (st[3] == -1)
        die("pclose");
    st[0] = wait_raw(forked);
    st[1] = wait_raw(spawned);
    st[2] = wait_raw(launcher);
    for (i = 0; i < NCLIENTS; i++)
        describe(st[i], what[i], sizeof what[i]);

    print_order("accepted:", order, NCLIENTS);
    printf("popen output: %s\n", popen_out);
    printf("fork: %s, posix_spawn: %s, system: %s, popen: %s\n", what[0], what[1], what[2],
           what[3]);
    for (i = 0; i < NCLIENTS; i++) {
        if (!WIFEXITED(st[i]) || WEXITSTATUS(st[i]) != 0)
            return 1;
    }
    return 0;
}
