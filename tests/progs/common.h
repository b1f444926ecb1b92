/*
 * common.h: the helpers every test program in tests/progs shares. Include it first: it defines
 * _GNU_SOURCE and includes the system headers the programs use.
 *
 * The basic ones (jitter from DDBX_JITTER, die/fail, connect and accept helpers, exact reads and
 * writes, escaping, child reaping) are the Figure 1 example's own, kept in one place:
 * examples/figure1/figure1.h (which also has the example's port-file helpers). Below them, the
 * pieces several test programs repeat: forking the clients, the "client N" hello, the numbered
 * messages of the receive-from-any programs, a readiness wait (select or poll) and the loop that
 * reads from whichever connection it reports, the output kept for the end, the chunked streams,
 * and the benchmarks' blocking transfers. Everything is `static` and marked UNUSED, so a program
 * that uses only part of it builds with -Wall -Wextra -Werror.
 *
 * None of these helpers adds a system call: a program that calls them makes the calls it made
 * when it wrote them out, in the same order.
 */
#ifndef DDBX_TEST_PROGS_COMMON_H
#define DDBX_TEST_PROGS_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>

#include "../../examples/figure1/figure1.h"

/* close(2), or die. */
static UNUSED void close_or_die(int fd)
{
    if (close(fd) < 0)
        die("close");
}

/* What every program does first: line-buffered stdout (nothing buffered is duplicated by
 * fork), and this process's jitter seeded. */
static UNUSED void program_start(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    jitter_init();
}

/* What every client process does first: seed its own jitter, then wait a random time (with
 * DDBX_JITTER) before it connects. */
static UNUSED void client_start(void)
{
    jitter_init();
    jitter();
}

/* O_NONBLOCK on fd (fcntl F_GETFL, then F_SETFL). */
static UNUSED void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);

    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        die("fcntl");
}

/* ---- processes ---- */

/* Forks n children. Each child closes lfd (unless it is -1) and gets back its number, 1..n: the
 * caller then runs that child's part, which must exit. The parent gets 0, with the children's
 * pids in pids[0..n-1]. */
static UNUSED int fork_clients(int lfd, int n, pid_t *pids)
{
    int i;

    for (i = 0; i < n; i++) {
        pids[i] = fork_or_die();
        if (pids[i] == 0) {
            if (lfd >= 0)
                close_or_die(lfd);
            return i + 1;
        }
    }
    return 0;
}

/* wait_ok on each of pids[0..n-1], in order. */
static UNUSED void wait_all_ok(const pid_t *pids, int n)
{
    int i;

    for (i = 0; i < n; i++)
        wait_ok(pids[i]);
}

/* Accepts one connection, then closes the listening socket (the program expects no other). */
static UNUSED int accept_last(int lfd)
{
    int fd = accept_one(lfd);

    close_or_die(lfd);
    return fd;
}

/* Listens on 127.0.0.1, forks one child that runs client(port) (which must exit), accepts the
 * child's connection and closes the listener; returns the connection (*pid: the child). */
static UNUSED int accept_child(void (*client)(int port), pid_t *pid)
{
    int port, lfd = bind_any(&port, 1);

    if (fork_clients(lfd, 1, pid))
        client(port);
    return accept_last(lfd);
}

/* The end of a client that only speaks once: sends line, waits until the server closes (it must
 * send nothing), closes, exits 0. */
static UNUSED void send_line_and_exit(int fd, const char *line)
{
    char rest[16];

    write_str(fd, line);
    if (read_to_eof(fd, rest, sizeof rest) != 0)
        fail("client: unexpected data");
    close_or_die(fd);
    exit(0);
}

/* ---- sockets of other families ---- */

/* socket(family) + bind(a) + listen: the listening socket, or -1 with errno set when socket()
 * or bind() failed (a missing address family is not always an error). */
static UNUSED int listen_at(int family, const struct sockaddr *a, socklen_t len)
{
    int fd = socket(family, SOCK_STREAM, 0), err;

    if (fd < 0)
        return -1;
    if (bind(fd, a, len) < 0) {
        err = errno;
        close_or_die(fd);
        errno = err;
        return -1;
    }
    if (listen(fd, 64) < 0)
        die("listen");
    return fd;
}

/* socket(family) + connect(a): the connected socket. */
static UNUSED int connect_at(int family, const struct sockaddr *a, socklen_t len)
{
    int fd = socket(family, SOCK_STREAM, 0);

    if (fd < 0)
        die("socket");
    if (connect(fd, a, len) < 0)
        die("connect");
    return fd;
}

/* ---- the hello: "client <id>\n", answered "ok\n" ---- */

/* Client side: sends "client <id>\n" and requires the reply "ok\n". */
static UNUSED void client_hello(int fd, int id)
{
    char msg[64], reply[64];

    snprintf(msg, sizeof msg, "client %d\n", id);
    write_str(fd, msg);
    read_line(fd, reply, sizeof reply);
    if (strcmp(reply, "ok\n") != 0)
        fail("client: unexpected reply");
}

/* Server side: reads a client's line "client <id>" (1 <= id <= n) and returns id. */
static UNUSED int read_client_id(int fd, int n)
{
    char buf[64];
    int id;

    read_line(fd, buf, sizeof buf);
    if (sscanf(buf, "client %d", &id) != 1 || id < 1 || id > n)
        fail("server: bad first line");
    return id;
}

/* Accepts a connection, reads its client's hello (*id, one of 1..n) and replies "ok\n";
 * returns the connection. */
static UNUSED int accept_hello(int lfd, int n, int *id)
{
    int fd = accept_one(lfd);

    *id = read_client_id(fd, n);
    write_str(fd, "ok\n");
    return fd;
}

/* Prints "<label> o1 o2 ...", e.g. "accepted: 2 1 3". */
static UNUSED void print_order(const char *label, const int *order, int n)
{
    int i;

    printf("%s", label);
    for (i = 0; i < n; i++)
        printf(" %d", order[i]);
    printf("\n");
}

/* ---- output kept for the end: only the parent prints, after it reaped its children ---- */

#define MAXLINES 256

static UNUSED char *log_lines[MAXLINES];
static UNUSED int log_count;

/* Keeps one output line (printed by print_log). */
static UNUSED __attribute__((format(printf, 1, 2))) void log_line(const char *fmt, ...)
{
    va_list ap;
    int len;
    char *line;

    if (log_count >= MAXLINES)
        fail("too many reads");
    va_start(ap, fmt);
    len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    line = len < 0 ? NULL : malloc((size_t)len + 1);
    if (!line)
        fail("out of memory");
    va_start(ap, fmt);
    vsnprintf(line, (size_t)len + 1, fmt, ap);
    va_end(ap);
    log_lines[log_count++] = line;
}

/* Prints the kept lines, in order, one per line. */
static UNUSED void print_log(void)
{
    int i;

    for (i = 0; i < log_count; i++)
        printf("%s\n", log_lines[i]);
    for (i = 0; i < log_count; i++)
        free(log_lines[i]);
    log_count = 0;
}

/* ---- receive from any: numbered messages, a readiness wait, reads where it says ---- */

#define NMSGS 3     /* messages per client */
#define MAXWAIT 64  /* descriptors one readiness wait watches at most */

/* A client of the receive-from-any programs, on its connected socket fd: (after the hello, if
 * `hello`) NMSGS messages "c<id> m<j>\n", a jitter before each; then close and exit 0. */
static UNUSED void numbered_client(int fd, int id, int hello)
{
    char msg[64];
    int j;

    if (hello)
        client_hello(fd, id);
    for (j = 0; j < NMSGS; j++) {
        jitter();
        snprintf(msg, sizeof msg, "c%d m%d\n", id, j);
        write_str(fd, msg);
    }
    close_or_die(fd);
    exit(0);
}

/* Listens, forks n clients that each connect to it and run numbered_client (no hello), and
 * accepts their n connections into conn[0..n-1], in accept order; closes the listener. */
static UNUSED void accept_numbered_clients(int *conn, pid_t *pids, int n)
{
    int port, lfd = bind_any(&port, 1), i = fork_clients(lfd, n, pids);

    if (i > 0) {
        client_start();
        numbered_client(connect_to(port), i, 0);
    }
    for (i = 0; i < n; i++)
        conn[i] = accept_one(lfd);
    close_or_die(lfd);
}

/* A readiness wait over fds[0..n-1] (negative ones are not watched): sets ready[i] for the
 * readable ones and returns 1, or returns 0 when a signal interrupted it (call again). */
typedef int (*wait_readable_fn)(const int *fds, int n, int *ready);

/* The readiness wait with select(). */
static UNUSED int wait_select(const int *fds, int n, int *ready)
{
    fd_set rfds;
    int i, maxfd = -1;

    FD_ZERO(&rfds);
    for (i = 0; i < n; i++) {
        if (fds[i] < 0)
            continue;
        if (fds[i] >= FD_SETSIZE)
            fail("fd too large for select");
        FD_SET(fds[i], &rfds);
        if (fds[i] > maxfd)
            maxfd = fds[i];
    }
    if (select(maxfd + 1, &rfds, NULL, NULL, NULL) < 0) {
        if (errno == EINTR)
            return 0;
        die("select");
    }
    for (i = 0; i < n; i++)
        ready[i] = fds[i] >= 0 && FD_ISSET(fds[i], &rfds);
    return 1;
}

/* The readiness wait with poll() (a hang-up or an error counts as readable). */
static UNUSED int wait_poll(const int *fds, int n, int *ready)
{
    struct pollfd pfd[MAXWAIT];
    int idx[MAXWAIT], npfd = 0, i, k;

    if (n > MAXWAIT)
        fail("too many descriptors for one poll");
    for (i = 0; i < n; i++) {
        ready[i] = 0;
        if (fds[i] >= 0) {
            pfd[npfd].fd = fds[i];
            pfd[npfd].events = POLLIN;
            pfd[npfd].revents = 0;
            idx[npfd++] = i;
        }
    }
    if (poll(pfd, (nfds_t)npfd, -1) < 0) {
        if (errno == EINTR)
            return 0;
        die("poll");
    }
    for (k = 0; k < npfd; k++) {
        if (pfd[k].revents & POLLNVAL)
            fail("poll: POLLNVAL");
        ready[idx[k]] = (pfd[k].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
    }
    return 1;
}

/* epoll_wait for up to max events, without a time limit: how many came (0 when a signal
 * interrupted the wait). */
static UNUSED int wait_epoll(int epfd, struct epoll_event *evs, int max)
{
    int r = epoll_wait(epfd, evs, max, -1);

    if (r < 0 && errno != EINTR)
        die("epoll_wait");
    return r < 0 ? 0 : r;
}

/* One read() of up to 4096 bytes from fd, connection number k (in accept order), kept as the
 * output line "read from conn<k>: <bytes, \n escaped>", "eof on conn<k>" or (a non-blocking
 * socket with nothing to read) "EAGAIN on conn<k>". Returns what read() returned; dies on any
 * other error. */
static UNUSED ssize_t log_read(int fd, int k)
{
    char buf[4096], esc[4096 * 4 + 1];
    ssize_t n = read(fd, buf, sizeof buf);

    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        log_line("EAGAIN on conn%d", k);
    } else if (n < 0) {
        die("read");
    } else if (n == 0) {
        log_line("eof on conn%d", k);
    } else {
        escape(buf, (size_t)n, esc);
        log_line("read from conn%d: %s", k, esc);
    }
    return n;
}

/* Reads the connections conn[0..n-1] (conn[i] is connection i+1) until each reached EOF: waits
 * with wait_readable, does one log_read on every reported connection in order, and closes a
 * connection at its EOF (conn[i] becomes -1). */
static UNUSED void read_any_until_eof(int *conn, int n, wait_readable_fn wait_readable)
{
    int ready[MAXWAIT], open_count = n, i;

    if (n > MAXWAIT)
        fail("too many connections");
    while (open_count > 0) {
        if (!wait_readable(conn, n, ready))
            continue;
        for (i = 0; i < n; i++) {
            if (ready[i] && log_read(conn[i], i + 1) == 0) {
                close_or_die(conn[i]);
                conn[i] = -1;
                open_count--;
            }
        }
    }
}

/* recv(MSG_WAITALL) of len bytes, again when a signal interrupted it; returns how many came
 * (fewer only at EOF). */
static UNUSED size_t recv_waitall(int fd, void *buf, size_t len)
{
    ssize_t n;

    for (;;) {
        n = recv(fd, buf, len, MSG_WAITALL);
        if (n >= 0 || errno != EINTR)
            break;
    }
    if (n < 0)
        die("recv");
    return (size_t)n;
}

/* ---- chunked streams (partial_reads, fd_passing) ---- */

#define CHUNKS 20     /* writes per chunk client */
#define CHUNK 10      /* bytes per write */
#define MAXREADS (CHUNKS * CHUNK)

/* Connect to 127.0.0.1:port, write CHUNKS chunks of CHUNK bytes ("chunk NN\n\0") with a
 * jitter between them, close, exit. */
static UNUSED void chunk_client(int port)
{
    int fd, j;

    jitter_init();
    fd = connect_to(port);
    for (j = 0; j < CHUNKS; j++) {
        char msg[CHUNK + 1];
        if (j > 0)
            jitter();
        snprintf(msg, sizeof msg, "chunk %02d\n", j); /* exactly 9 chars + '\n' */
        write_all(fd, msg, CHUNK);
    }
    close_or_die(fd);
    exit(0);
}

/* Read fd with a 4096-byte buffer until EOF, a jitter before each read; the size of every read
 * goes to sizes (room for MAXREADS); returns how many reads there were. */
static UNUSED int read_chunks(int fd, size_t *sizes)
{
    int nreads = 0;

    for (;;) {
        char buf[4096];
        ssize_t n;

        jitter();
        n = read_retry(fd, buf, sizeof buf);
        if (n == 0)
            return nreads;
        if (nreads >= MAXREADS)
            fail("more reads than bytes?");
        sizes[nreads++] = (size_t)n;
    }
}

/* Print "read N" per read, then "total T"; fail unless all CHUNKS * CHUNK bytes came. */
static UNUSED void report_chunks(const size_t *sizes, int nreads)
{
    size_t total = 0;
    int i;

    for (i = 0; i < nreads; i++) {
        printf("read %zu\n", sizes[i]);
        total += sizes[i];
    }
    printf("total %zu\n", total);
    if (total != CHUNKS * CHUNK)
        fail("wrong total");
}

/* ---- blocking transfers (the benchmarks) ---- */

/* send(2) until all len bytes of buf are through. */
static UNUSED void send_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = send(fd, p, len, 0);
        if (n < 0 && errno != EINTR)
            die("send");
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        }
    }
}

/* recv(2) until len bytes are in buf or the peer closed; returns how many came (len unless the
 * stream ended first). */
static UNUSED size_t recv_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    size_t done = 0;

    while (done < len) {
        ssize_t n = recv(fd, p + done, len - done, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("recv");
        }
        if (n == 0)
            break;
        done += (size_t)n;
    }
    return done;
}

/* TCP_NODELAY on fd. */
static UNUSED void nodelay(int fd)
{
    int one = 1;

    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
        die("setsockopt TCP_NODELAY");
}

/* A socketpair and a fork. In the child (0 returned) sv[1] is its end, sv[0] closed; in the
 * parent (the child's pid returned) sv[0] is its end, sv[1] closed. */
static UNUSED pid_t fork_on_pair(int sv[2])
{
    pid_t child;

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        fail("socketpair");
    child = fork();
    if (child < 0)
        fail("fork");
    close(child == 0 ? sv[0] : sv[1]);
    return child;
}

/* Reaps `child` and prints how it ended: "WHO killed by signal N" or "WHO exited N". */
static UNUSED void reap_and_say(pid_t child, const char *who)
{
    int status;

    if (waitpid(child, &status, 0) != child)
        fail("waitpid");
    if (WIFSIGNALED(status))
        printf("%s killed by signal %d\n", who, WTERMSIG(status));
    else
        printf("%s exited %d\n", who, WEXITSTATUS(status));
}

/* Whether `pid` is blocked in one of the system calls `calls` (numbers, ended by -1), as
 * /proc/PID/syscall says ("running" or another call: no). */
static int blocked_in(pid_t pid, const long *calls)
{
    char path[64], line[256];
    FILE *f;
    long nr;
    int found = 0;

    snprintf(path, sizeof path, "/proc/%d/syscall", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return 0;
    if (fgets(line, sizeof line, f) && sscanf(line, "%ld", &nr) == 1)
        for (; *calls >= 0 && !found; calls++)
            found = *calls == nr;
    fclose(f);
    return found;
}

/* The CPU time `pid` has used, user and system, in clock ticks (/proc/PID/stat). */
static long cpu_ticks(pid_t pid)
{
    char path[64], line[1024];
    const char *end;
    FILE *f;
    long user = 0, sys = 0;

    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return 0;
    if (fgets(line, sizeof line, f) && (end = strrchr(line, ')')) &&
        sscanf(end + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &user, &sys) != 2)
        user = sys = 0;
    fclose(f);
    return user + sys;
}

/* Waits until `child` is blocked in one of `calls` (ended by -1), or has used `ticks` more
 * clock ticks of CPU from now (0: no such limit): the state a test needs a process in before
 * it signals it, awaited rather than guessed with a pause. It looks every millisecond, for 60
 * s at most (then fails: the state never came). */
static UNUSED void await_state(pid_t child, const long *calls, long ticks)
{
    long start = cpu_ticks(child), waited;

    for (waited = 0; waited < 60000; waited++) {
        if (blocked_in(child, calls) || (ticks > 0 && cpu_ticks(child) - start >= ticks))
            return;
        usleep(1000);
    }
    fail("the child never reached the state awaited");
}

/* Sends `child` SIGTERM, then reaps it as reap_and_say says. */
static UNUSED void terminate_and_say(pid_t child, const char *who)
{
    if (kill(child, SIGTERM) < 0)
        fail("kill");
    reap_and_say(child, who);
}

/* Installs `handler` for `sig` with sigaction(2), an empty mask and `flags` (SA_RESTART...). */
static UNUSED void handle(int sig, void (*handler)(int), int flags)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = flags;
    if (sigaction(sig, &sa, NULL) < 0)
        fail("sigaction");
}

/* The number in file `path` (0 if none, or no such file): what a test changes between a record
 * and its replays, which do not replay the contents of files. */
static UNUSED long number_in(const char *path)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    long n = 0;

    if (f) {
        if (fscanf(f, "%ld", &n) != 1)
            n = 0;
        fclose(f);
    }
    return n;
}

/* One bit of the CPU's cycle counter: a coin that ddbx does not record (it replays clock and
 * random reads, /dev/urandom included), so that record and replay may differ where a program
 * wants them to. */
static UNUSED int cycle_bit(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return (int)((__builtin_ia32_rdtsc() >> 10) & 1);
#elif defined(__aarch64__)
    unsigned long ticks;

    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(ticks));
    return (int)((ticks >> 4) & 1);
#else
#error "needs a cycle counter"
#endif
}

/* Set until the SIGTERM that term_after_pause sends reaches its child (the handler clears it). */
static UNUSED volatile sig_atomic_t term_running = 1;

static UNUSED void term_arrived(int sig)
{
    (void)sig;
    term_running = 0;
}

/* A sig_* program whose child counts something in a loop until a SIGTERM ends it: forks a child
 * on a socketpair, which installs a SIGTERM handler that clears term_running, says so, runs
 * `loop` on its end of the pair (it returns its count), sends the count and ends; the root
 * waits for the word, pauses 30 or 300 ms (from cycle_bit: not recorded, so a replay's signal
 * may come much later than its record's), sends SIGTERM, reads the count, reaps the child and
 * prints `WHAT before the SIGTERM: N`. */
static UNUSED void term_after_pause(int (*loop)(int fd), const char *what)
{
    struct sigaction sa;
    char line[32];
    int sv[2];
    char c;
    pid_t pid;

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        die("socketpair");
    pid = fork_or_die();
    if (pid == 0) {
        close_or_die(sv[0]);
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = term_arrived;
        if (sigaction(SIGTERM, &sa, NULL) < 0)
            die("sigaction");
        write_all(sv[1], "r", 1);
        snprintf(line, sizeof line, "%d\n", loop(sv[1]));
        write_str(sv[1], line);
        close_or_die(sv[1]);
        _exit(0);
    }
    close_or_die(sv[1]);
    if (read_retry(sv[0], &c, 1) != 1)
        die("ready");
    if (usleep(cycle_bit() ? 300000 : 30000) < 0)
        die("usleep");
    if (kill(pid, SIGTERM) < 0)
        die("kill");
    read_line(sv[0], line, sizeof line);
    chomp(line);
    wait_ok(pid);
    printf("%s before the SIGTERM: %s\n", what, line);
}

#endif
