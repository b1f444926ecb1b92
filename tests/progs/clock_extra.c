/*
 * clock_extra: clock reads the record did not log, or logged a different number of times
 * (issue #10, class 4). Each of main, an atexit handler (which runs before ddbx writes the
 * exit: after the last event), and a destructor (which runs after it: ddbx is off by then)
 * reads CLOCK_MONOTONIC in a loop until 1 ms has passed by a clock ddbx does not hook (the
 * clock_gettime system call itself): how many reads that takes differs between the record and
 * each replay. Every hooked read must not go backwards; the program prints "ok" (the same in
 * every run) or what went wrong, and sends one byte to a forked peer in between, so that the
 * reads sit between events. With a file name argument, main's loops last 0.2 ms and 2 ms in
 * turns, run after run (the file counts the runs): a replay then surely reads the clock more
 * often, or less often, than its record.
 */
#include "common.h"
#include <sys/syscall.h>

static long long raw_ns(void)
{
    struct timespec t;

    if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t) < 0)
        die("clock_gettime (system call)");
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static long long spin_ns = 1000000LL;

/* Reads the hooked clock until spin_ns of the unhooked one have passed; 1 if it went back. */
static int spin(const char *where)
{
    long long until = raw_ns() + spin_ns, last = 0;
    struct timespec t;

    while (raw_ns() < until) {
        if (clock_gettime(CLOCK_MONOTONIC, &t) < 0)
            die("clock_gettime");
        long long ns = (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
        if (ns < last) {
            printf("%s: the clock went back by %lld ns\n", where, last - ns);
            return 1;
        }
        last = ns;
    }
    return 0;
}

/* Counts this run in the file `path`: 0.2 ms loops in even runs, 2 ms in odd ones. */
static void alternate(const char *path)
{
    FILE *f = fopen(path, "a+");
    long runs = 0;
    char line[32];

    if (!f)
        die(path);
    while (fgets(line, sizeof line, f))
        runs++;
    fprintf(f, "run\n");
    fclose(f);
    spin_ns = runs % 2 ? 2000000LL : 200000LL;
}

static void at_exit_handler(void)
{
    if (spin("atexit"))
        _exit(3);
}

__attribute__((destructor)) static void destructor(void)
{
    if (spin("destructor"))
        _exit(4);
}

int main(int argc, char **argv)
{
    int sv[2];
    char c;
    pid_t pid;

    program_start();
    if (argc > 1)
        alternate(argv[1]);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        die("socketpair");
    pid = fork_or_die();
    if (pid == 0) {
        close_or_die(sv[0]);
        if (read_retry(sv[1], &c, 1) != 1)
            fail("peer: no byte");
        _exit(0);
    }
    close_or_die(sv[1]);
    if (spin("main, before the send"))
        return 1;
    write_all(sv[0], "x", 1);
    if (spin("main, after the send"))
        return 1;
    wait_ok(pid);
    atexit(at_exit_handler);
    printf("ok\n");
    return 0;
}
