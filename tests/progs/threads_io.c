// link: -pthread
/*
 * threads_io: socket I/O from a second thread (which ddbx refuses to record),
 * and a second thread that does no socket I/O (which ddbx records fine).
 *
 * threads_io (no argument): the main thread listens on 127.0.0.1 (kernel-
 * chosen port) and starts a second thread that connects, sends "hello\n" and
 * closes; the main thread accepts, reads to EOF, joins the thread and prints
 *     got: hello\n
 * Under `ddbx record` this must be stopped with exit code 103 (socket I/O
 * from a second thread).
 *
 * threads_io quiet-thread: the second thread only computes (a sum); the
 * socket peer is a forked child (connects, sends "hello\n", closes).  The
 * parent accepts, reads to EOF, joins the thread, reaps the child and prints
 *     thread computed 500000500000
 *     got: hello\n
 * No race in the output: this checks that threads without socket I/O are
 * recorded and replayed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

static int port;
static long long sum;

static void *io_thread(void *arg)
{
    int fd;

    (void)arg;
    jitter();
    fd = connect_to(port);
    write_str(fd, "hello\n");
    if (close(fd) < 0)
        die("close");
    return NULL;
}

static void *quiet_thread(void *arg)
{
    long long i;

    (void)arg;
    for (i = 1; i <= 1000000; i++)
        sum += i;
    return NULL;
}

int main(int argc, char **argv)
{
    int quiet = argc > 1 && strcmp(argv[1], "quiet-thread") == 0;
    int lfd, fd, e;
    pid_t child = -1;
    pthread_t th;
    char buf[256], esc[256 * 4 + 1];
    size_t n;

    if (argc > 1 && !quiet)
        fail("usage: threads_io [quiet-thread]");
    setvbuf(stdout, NULL, _IOLBF, 0);
    jitter_init();
    lfd = bind_any(&port, 1);
    e = pthread_create(&th, NULL, quiet ? quiet_thread : io_thread, NULL);
    if (e != 0) {
        errno = e;
        die("pthread_create");
    }
    if (quiet) {
        child = fork_or_die();
        if (child == 0) {
            jitter_init();
            if (close(lfd) < 0)
                die("close");
            io_thread(NULL);
            exit(0);
        }
    }
    fd = accept_one(lfd);
    n = read_to_eof(fd, buf, sizeof buf);
    if (close(fd) < 0 || close(lfd) < 0)
        die("close");
    e = pthread_join(th, NULL);
    if (e != 0) {
        errno = e;
        die("pthread_join");
    }
    if (quiet) {
        wait_ok(child);
        printf("thread computed %lld\n", sum);
    }
    escape(buf, n < sizeof buf ? n : sizeof buf - 1, esc);
    printf("got: %s\n", esc);
    return 0;
}
