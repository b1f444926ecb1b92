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
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>

extern char **environ;

#define UNUSED __attribute__((unused))

/* ---- common helpers (duplicated in every test program on purpose, so that
 * each program is a single self-contained C file) ---- */

static long jitter_max_us;

/* Unexpected system call failure: message with errno on stderr, exit 1. */
static UNUSED void die(const char *what)
{
    fprintf(stderr, "[pid %d] %s: %s\n", (int)getpid(), what, strerror(errno));
    exit(1);
}

/* Unexpected protocol situation (no errno). */
static UNUSED void fail(const char *what)
{
    fprintf(stderr, "[pid %d] %s\n", (int)getpid(), what);
    exit(1);
}

/* Call once in every process (after fork in children): reads DDBX_JITTER
 * (maximum sleep in milliseconds) and seeds the RNG per process. */
static UNUSED void jitter_init(void)
{
    const char *s = getenv("DDBX_JITTER");
    struct timespec ts;

    jitter_max_us = s ? strtol(s, NULL, 10) * 1000 : 0;
    if (jitter_max_us < 0)
        jitter_max_us = 0;
    if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
        die("clock_gettime");
    srandom((unsigned)getpid() ^ (unsigned)ts.tv_nsec);
}

/* Sleep a random 0..DDBX_JITTER ms; no-op without DDBX_JITTER. */
static UNUSED void jitter(void)
{
    if (jitter_max_us > 0 &&
        usleep((useconds_t)(random() % (jitter_max_us + 1))) < 0)
        die("usleep");
}

/* socket + bind 127.0.0.1:0 (+ listen if do_listen); *port = chosen port. */
static UNUSED int bind_any(int *port, int do_listen)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0)
        die("socket");
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
        die("bind");
    if (do_listen && listen(fd, 64) < 0)
        die("listen");
    if (getsockname(fd, (struct sockaddr *)&a, &alen) < 0)
        die("getsockname");
    *port = ntohs(a.sin_port);
    return fd;
}

static UNUSED void fill_addr(struct sockaddr_in *a, int port)
{
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a->sin_port = htons((unsigned short)port);
}

static UNUSED int connect_to(int port)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0)
        die("socket");
    fill_addr(&a, port);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
        die("connect");
    return fd;
}

static UNUSED int accept_one(int lfd)
{
    int fd = accept(lfd, NULL, NULL);

    if (fd < 0)
        die("accept");
    return fd;
}

static UNUSED void write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("write");
        }
        p += n;
        len -= (size_t)n;
    }
}

static UNUSED void write_str(int fd, const char *s)
{
    write_all(fd, s, strlen(s));
}

/* Read until a '\n' has been received (or EOF, which is an error here).
 * The result is NUL-terminated; returns its length. */
static UNUSED size_t read_line(int fd, char *buf, size_t cap)
{
    size_t got = 0;

    for (;;) {
        ssize_t n;
        if (got + 1 >= cap)
            fail("read_line: line too long");
        n = read(fd, buf + got, cap - 1 - got);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("read");
        }
        if (n == 0)
            fail("read_line: unexpected EOF");
        got += (size_t)n;
        buf[got] = '\0';
        if (memchr(buf, '\n', got))
            return got;
    }
}

/* Read until EOF; returns the number of bytes (stores at most cap-1, NUL-terminated). */
static UNUSED size_t read_to_eof(int fd, char *buf, size_t cap)
{
    size_t got = 0;

    for (;;) {
        char tmp[4096];
        ssize_t n = read(fd, tmp, sizeof tmp);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("read");
        }
        if (n == 0)
            break;
        if (got + (size_t)n < cap)
            memcpy(buf + got, tmp, (size_t)n);
        got += (size_t)n;
    }
    buf[got < cap ? got : cap - 1] = '\0';
    return got;
}

/* Bytes as text with '\n' shown as the two characters \n (and other
 * non-printable bytes as \xNN) into out (size >= 4*len+1). */
static UNUSED void escape(const char *in, size_t len, char *out)
{
    size_t i;

    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == '\n') {
            *out++ = '\\';
            *out++ = 'n';
        } else if (c == '\\') {
            *out++ = '\\';
            *out++ = '\\';
        } else if (c < 32 || c >= 127) {
            sprintf(out, "\\x%02x", c);
            out += 4;
        } else {
            *out++ = (char)c;
        }
    }
    *out = '\0';
}

static UNUSED pid_t fork_or_die(void)
{
    pid_t pid = fork();

    if (pid < 0)
        die("fork");
    return pid;
}

/* waitpid; returns the exit status; dies if the child was killed by a signal. */
static UNUSED int wait_status(pid_t pid)
{
    int st;

    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            die("waitpid");
    }
    if (!WIFEXITED(st)) {
        fprintf(stderr, "[pid %d] child %d killed by signal %d\n",
                (int)getpid(), (int)pid, WTERMSIG(st));
        exit(1);
    }
    return WEXITSTATUS(st);
}

/* waitpid and require exit status 0. */
static UNUSED void wait_ok(pid_t pid)
{
    int st = wait_status(pid);

    if (st != 0) {
        fprintf(stderr, "[pid %d] child %d exited with status %d\n",
                (int)getpid(), (int)pid, st);
        exit(1);
    }
}

/* ---- end of common helpers ---- */

#define NCLIENTS 4

static int client(int id, int port, int report)
{
    char msg[64], reply[64];
    int fd;

    jitter_init();
    jitter();
    fd = connect_to(port);
    snprintf(msg, sizeof msg, "client %d\n", id);
    write_str(fd, msg);
    read_line(fd, reply, sizeof reply);
    if (strcmp(reply, "ok\n") != 0)
        fail("client: unexpected reply");
    if (close(fd) < 0)
        die("close");
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

static int wait_raw(pid_t pid)
{
    int st;

    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            die("waitpid");
    }
    return st;
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
        if (close(lfd) < 0)
            die("close");
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
        if (close(lfd) < 0)
            die("close");
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

    for (i = 0; i < NCLIENTS; i++) {
        char buf[64];
        int fd = accept_one(lfd), id;

        read_line(fd, buf, sizeof buf);
        if (sscanf(buf, "client %d", &id) != 1 || id < 1 || id > NCLIENTS)
            fail("server: bad message");
        order[i] = id;
        write_str(fd, "ok\n");
        if (close(fd) < 0)
            die("close");
    }
    if (close(lfd) < 0)
        die("close");

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

    printf("accepted:");
    for (i = 0; i < NCLIENTS; i++)
        printf(" %d", order[i]);
    printf("\n");
    printf("popen output: %s\n", popen_out);
    printf("fork: %s, posix_spawn: %s, system: %s, popen: %s\n", what[0], what[1], what[2],
           what[3]);
    for (i = 0; i < NCLIENTS; i++) {
        if (!WIFEXITED(st[i]) || WEXITSTATUS(st[i]) != 0)
            return 1;
    }
    return 0;
}
