/*
 * bench_clock [N]: reads CLOCK_MONOTONIC N times (default 1,000,000) in a tight loop and prints
 * "done"; on stderr, the loop's cost per read in ns, timed with the clock_gettime system call
 * itself (which ddbx does not hook). For BENCHMARKS.md: the cost of a clock read natively, under
 * `ddbx record` (a value line per read) and under `ddbx replay` (the recorded value handed back).
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

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000000, i;
    struct timespec t;
    long long start, sum = 0;

    program_start();
    start = raw_ns();
    for (i = 0; i < n; i++) {
        if (clock_gettime(CLOCK_MONOTONIC, &t) < 0)
            die("clock_gettime");
        sum += t.tv_nsec & 1;
    }
    fprintf(stderr, "%.1f ns per clock_gettime\n", (double)(raw_ns() - start) / (double)n);
    printf("done%s\n", sum < 0 ? "?" : "");
    return 0;
}
