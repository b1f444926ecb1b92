/*
 * bench_pids [N]: calls getpid() N times (default 1,000,000), then opens and closes /dev/null
 * and /proc/<its pid>/stat N/10 times each, and prints "done"; on stderr, each loop's cost per
 * call in ns, timed with the clock_gettime system call itself (which ddbx does not hook). For
 * BENCHMARKS.md: what ddbx's pid hooks cost natively, under `ddbx record` (getpid and open go
 * through the hooks and are passed on) and under `ddbx replay` (the record's pid shown; a
 * `/proc/<pid>` path turned into this run's).
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

/* Opens and closes `path` n times; ns per open and close. */
static double opens(const char *path, long n)
{
    long long start = raw_ns();
    long i;

    for (i = 0; i < n; i++) {
        int fd = open(path, O_RDONLY);
        if (fd < 0)
            die("open");
        close_or_die(fd);
    }
    return (double)(raw_ns() - start) / (double)n;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000000, i;
    long long start, sum = 0;
    char proc[64];

    program_start();
    start = raw_ns();
    for (i = 0; i < n; i++)
        sum += getpid() & 1;
    fprintf(stderr, "%.1f ns per getpid\n", (double)(raw_ns() - start) / (double)n);
    fprintf(stderr, "%.1f ns per open+close of /dev/null\n", opens("/dev/null", n / 10));
    snprintf(proc, sizeof proc, "/proc/%d/stat", (int)getpid());
    fprintf(stderr, "%.1f ns per open+close of /proc/PID/stat\n", opens(proc, n / 10));
    printf("done%s\n", sum < 0 ? "?" : "");
    return 0;
}
