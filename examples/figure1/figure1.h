/*
 * figure1.h: the helpers the four Figure 1 programs share: jitter (DDBX_JITTER), error exits,
 * connect/accept helpers, exact reads and writes, and the port files through which the clients
 * find the servers. Everything is `static` and marked UNUSED.
 */
#ifndef FIGURE1_H
#define FIGURE1_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#ifndef UNUSED
#define UNUSED __attribute__((unused))
#endif
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
 * (maximum sleep in milliseconds) and seeds the RNG per process from the
 * clock's nanoseconds, read with the system call itself: ddbx replays what
 * libc's clock_gettime and getpid return, and a replay's sleeps should differ
 * from its record's (replay forces the outcomes, whatever the timing). */
static UNUSED void jitter_init(void)
{
    const char *s = getenv("DDBX_JITTER");
    struct timespec ts;

    jitter_max_us = s ? strtol(s, NULL, 10) * 1000 : 0;
    if (jitter_max_us < 0)
        jitter_max_us = 0;
    if (syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts) < 0)
        die("clock_gettime");
    srandom((unsigned)ts.tv_nsec ^ (unsigned)(ts.tv_sec << 20));
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

/* read(2), again when a signal interrupted it; dies on any other error. Returns what read()
 * returned (0 at EOF). */
static UNUSED ssize_t read_retry(int fd, void *buf, size_t len)
{
    for (;;) {
        ssize_t n = read(fd, buf, len);
        if (n >= 0)
            return n;
        if (errno != EINTR)
            die("read");
    }
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
        n = read_retry(fd, buf + got, cap - 1 - got);
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
        ssize_t n = read_retry(fd, tmp, sizeof tmp);
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

/* waitpid, again when a signal interrupted it; returns the raw wait status. */
static UNUSED int wait_raw(pid_t pid)
{
    int st;

    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            die("waitpid");
    }
    return st;
}

/* waitpid; returns the exit status; dies if the child was killed by a signal. */
static UNUSED int wait_status(pid_t pid)
{
    int st = wait_raw(pid);

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

/* ---- port files: DIR/<name>.port holds a server's port in decimal ---- */

#define PORT_WAIT_TRIES 1000 /* 1000 * 10 ms = 10 s */

/* Write the port to DIR/<name>.port atomically (temp file, then rename),
 * so that a reader never sees a partial file. */
static UNUSED void write_port_file(const char *dir, const char *name, int port)
{
    char path[4096], tmp[4096], text[32];
    int fd;

    snprintf(path, sizeof path, "%s/%s.port", dir, name);
    snprintf(tmp, sizeof tmp, "%s/%s.port.tmp", dir, name);
    snprintf(text, sizeof text, "%d\n", port);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        die("open port file");
    write_all(fd, text, strlen(text));
    if (close(fd) < 0)
        die("close port file");
    if (rename(tmp, path) < 0)
        die("rename port file");
}

/* Wait (up to ~10 s) until DIR/<name>.port exists, and return the port. */
static UNUSED int read_port_file(const char *dir, const char *name)
{
    char path[4096], text[32];
    int fd, tries, port;
    ssize_t n;

    snprintf(path, sizeof path, "%s/%s.port", dir, name);
    for (tries = 0;; tries++) {
        fd = open(path, O_RDONLY);
        if (fd >= 0)
            break;
        if (errno != ENOENT)
            die("open port file");
        if (tries >= PORT_WAIT_TRIES)
            fail("timed out waiting for a port file");
        if (usleep(10000) < 0)
            die("usleep");
    }
    n = read(fd, text, sizeof text - 1);
    if (n <= 0)
        fail("empty port file");
    text[n] = '\0';
    if (close(fd) < 0)
        die("close port file");
    port = atoi(text);
    if (port <= 0 || port > 65535)
        fail("bad port file");
    return port;
}

/* ---- started files: DIR/<name>.started says that a program is running ---- */

/* Called first thing in main by a program the launcher started (it is an actor of ddbx by
 * then: ddbx numbers a process when its image starts). Creates DIR/<name>.started. */
static UNUSED void mark_started(const char *dir, const char *name)
{
    char path[4096];
    int fd;

    snprintf(path, sizeof path, "%s/%s.started", dir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        die("open started file");
    if (close(fd) < 0)
        die("close started file");
}

/* Wait (up to ~10 s) until DIR/<name>.started exists. */
static UNUSED void wait_started(const char *dir, const char *name)
{
    char path[4096];
    int tries;

    snprintf(path, sizeof path, "%s/%s.started", dir, name);
    for (tries = 0; access(path, F_OK) != 0; tries++) {
        if (tries >= PORT_WAIT_TRIES)
            fail("timed out waiting for a program to start");
        if (usleep(10000) < 0)
            die("usleep");
    }
}

/* Strip a trailing "\n" from a received line. */
static UNUSED void chomp(char *s)
{
    size_t n = strlen(s);

    if (n > 0 && s[n - 1] == '\n')
        s[n - 1] = '\0';
}

#endif
