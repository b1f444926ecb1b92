/*
 * clock_retry: a client that waits out a deadline with timed selects and decides from the clock
 * between them (issue #10, class 4: what a client library's retry loop does).
 *
 * The parent listens on TCP and forks a peer that connects, waits a random time (DDBX_JITTER)
 * and sends one byte. The parent accepts it and selects on it with a 1 ms timeout; after every empty
 * select it reads CLOCK_MONOTONIC and, once 5 ms have passed since it started, stops waiting
 * with selects and tells the peer "late" (then reads the byte with a blocking read); if the
 * byte comes first it tells it "early". It prints how many empty selects it made, which way it
 * went, and a few values of the clocks and of randomness (getrandom, getentropy, a read of
 * /dev/urandom), which differ in every native run. A replay must make the same decisions: the
 * empty selects are events, the clock reads between them are not.
 */
#include "common.h"
#include <sys/random.h>
#include <sys/time.h>

static long long ns_of(const struct timespec *t)
{
    return (long long)t->tv_sec * 1000000000LL + t->tv_nsec;
}

int main(void)
{
    int lfd, port, conn, empties = 0, late = 0, fd;
    struct timespec start, now;
    struct timeval tv;
    unsigned char r[4], e[4], u[4];
    char c;
    pid_t pid;

    program_start();
    lfd = bind_any(&port, 1);
    pid = fork_or_die();
    if (pid == 0) {
        close_or_die(lfd);
        jitter_init();
        conn = connect_to(port);
        jitter();
        write_all(conn, "x", 1);
        if (read_retry(conn, &c, 1) != 1)
            fail("peer: no answer");
        _exit(0);
    }
    conn = accept_one(lfd);
    if (clock_gettime(CLOCK_MONOTONIC, &start) < 0)
        die("clock_gettime");
    for (;;) {
        fd_set rs;
        struct timeval t = {0, 1000};

        FD_ZERO(&rs);
        FD_SET(conn, &rs);
        int n = select(conn + 1, &rs, NULL, NULL, &t);
        if (n < 0)
            die("select");
        if (n > 0)
            break;
        empties++;
        if (clock_gettime(CLOCK_MONOTONIC, &now) < 0)
            die("clock_gettime");
        if (ns_of(&now) - ns_of(&start) >= 5000000LL) {
            late = 1;
            break;
        }
    }
    write_all(conn, late ? "L" : "E", 1);
    if (read_retry(conn, &c, 1) != 1)
        fail("no byte");
    wait_ok(pid);
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r || getentropy(e, sizeof e) < 0)
        die("getrandom");
    fd = open("/dev/urandom", O_RDONLY);
    if (fd < 0 || read(fd, u, sizeof u) != (ssize_t)sizeof u)
        die("/dev/urandom");
    close_or_die(fd);
    if (gettimeofday(&tv, NULL) < 0)
        die("gettimeofday");
    clock_gettime(CLOCK_MONOTONIC, &now);
    printf("%s after %d empty selects, %lld us; random %02x%02x%02x%02x %02x%02x%02x%02x "
           "%02x%02x%02x%02x; time %ld.%06ld %ld\n",
           late ? "late" : "early", empties, (ns_of(&now) - ns_of(&start)) / 1000, r[0], r[1],
           r[2], r[3], e[0], e[1], e[2], e[3], u[0], u[1], u[2], u[3], (long)tv.tv_sec,
           (long)tv.tv_usec, (long)time(NULL));
    return 0;
}
