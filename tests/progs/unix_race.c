/*
 * unix_race: accept race and receive-from-any over a Unix stream socket.
 *
 * The parent creates a fresh directory (mkdtemp, /tmp/ddbx-unix_race.XXXXXX),
 * listens on DIR/sock and forks 3 client children.  Each child sleeps a
 * random jitter, connects, sends "client <i>\n", waits for "ok\n", then sends
 * 3 messages "c<i> m<j>\n" with jitter in between and closes.  The parent
 * accepts 3 times (reading each client's first line and replying "ok\n"),
 * then reads from whichever connection select() reports readable until all
 * three reached EOF.  It removes the socket and the directory, reaps the
 * children and prints
 *     accepted: 2 1 3
 *     read from conn1: c2 m0\n
 *     ...
 *     eof on conn3
 * (connK = the K-th accepted connection).
 * Race: the accept order, which connection select() reports, how the
 * messages are split into reads (varies natively with DDBX_JITTER=5).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
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

#define NCLIENTS 3
#define NMSGS 3
#define MAXLINES 256

static char *lines[MAXLINES];
static int nlines;

/* Remember the output line a + b (printed at the end). */
static void add_line(const char *a, const char *b)
{
    char *l;

    if (nlines >= MAXLINES)
        fail("too many reads");
    l = malloc(strlen(a) + strlen(b) + 1);
    if (!l)
        fail("out of memory");
    strcpy(l, a);
    strcat(l, b);
    lines[nlines++] = l;
}

static void fill_unix(struct sockaddr_un *a, const char *path)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof a->sun_path)
        fail("socket path too long");
    strcpy(a->sun_path, path);
}

static void client(const char *path, int id)
{
    struct sockaddr_un a;
    char msg[64], reply[64];
    int fd, j;

    jitter_init();
    jitter();
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0)
        die("socket");
    fill_unix(&a, path);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
        die("connect");
    snprintf(msg, sizeof msg, "client %d\n", id);
    write_str(fd, msg);
    read_line(fd, reply, sizeof reply);
    if (strcmp(reply, "ok\n") != 0)
        fail("client: unexpected reply");
    for (j = 0; j < NMSGS; j++) {
        jitter();
        snprintf(msg, sizeof msg, "c%d m%d\n", id, j);
        write_str(fd, msg);
    }
    if (close(fd) < 0)
        die("close");
    exit(0);
}

int main(void)
{
    char dir[] = "/tmp/ddbx-unix_race.XXXXXX";
    char path[sizeof dir + 8];
    struct sockaddr_un a;
    int lfd, i, open_count = NCLIENTS;
    int conn[NCLIENTS], order[NCLIENTS];
    pid_t pids[NCLIENTS];

    setvbuf(stdout, NULL, _IOLBF, 0);
    jitter_init();
    if (!mkdtemp(dir))
        die("mkdtemp");
    snprintf(path, sizeof path, "%s/sock", dir);
    lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (lfd < 0)
        die("socket");
    fill_unix(&a, path);
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) < 0)
        die("bind");
    if (listen(lfd, 64) < 0)
        die("listen");
    for (i = 0; i < NCLIENTS; i++) {
        pids[i] = fork_or_die();
        if (pids[i] == 0) {
            if (close(lfd) < 0)
                die("close");
            client(path, i + 1);
        }
    }
    for (i = 0; i < NCLIENTS; i++) {
        char buf[64];
        int id;

        conn[i] = accept_one(lfd);
        read_line(conn[i], buf, sizeof buf);
        if (sscanf(buf, "client %d", &id) != 1 || id < 1 || id > NCLIENTS)
            fail("server: bad first line");
        order[i] = id;
        write_str(conn[i], "ok\n");
    }
    if (close(lfd) < 0)
        die("close");
    if (unlink(path) < 0)
        die("unlink");
    if (rmdir(dir) < 0)
        die("rmdir");

    while (open_count > 0) {
        fd_set rd;
        int maxfd = -1, r;

        FD_ZERO(&rd);
        for (i = 0; i < NCLIENTS; i++) {
            if (conn[i] >= 0) {
                FD_SET(conn[i], &rd);
                if (conn[i] > maxfd)
                    maxfd = conn[i];
            }
        }
        r = select(maxfd + 1, &rd, NULL, NULL, NULL);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            die("select");
        }
        for (i = 0; i < NCLIENTS; i++) {
            char buf[4096], esc[4096 * 4 + 1], head[32];
            ssize_t n;

            if (conn[i] < 0 || !FD_ISSET(conn[i], &rd))
                continue;
            n = read(conn[i], buf, sizeof buf);
            if (n < 0)
                die("read");
            if (n == 0) {
                snprintf(head, sizeof head, "eof on conn%d", i + 1);
                add_line(head, "");
                if (close(conn[i]) < 0)
                    die("close");
                conn[i] = -1;
                open_count--;
                continue;
            }
            escape(buf, (size_t)n, esc);
            snprintf(head, sizeof head, "read from conn%d: ", i + 1);
            add_line(head, esc);
        }
    }
    for (i = 0; i < NCLIENTS; i++)
        wait_ok(pids[i]);
    printf("accepted:");
    for (i = 0; i < NCLIENTS; i++)
        printf(" %d", order[i]);
    printf("\n");
    for (i = 0; i < nlines; i++)
        printf("%s\n", lines[i]);
    for (i = 0; i < nlines; i++)
        free(lines[i]);
    return 0;
}
