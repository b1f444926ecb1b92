/*
 * bench_append LOG [WRITERS [LINES]]: WRITERS forked processes (default 1) each append LINES
 * (default 100000) lines of 64 bytes to LOG, opened with O_APPEND, with write(2): the cost of
 * a write into a file whose writes take turns (tests/bench/appends.sh). The parent prints, on
 * stderr, `bench: N ns per write`: the writers' wall time from the first fork to the last
 * reap, read with the clock system call (which ddbx neither hooks nor replays), divided by
 * all the lines written.
 */
#include "common.h"

static long now_ns(void)
{
    struct timespec t;

    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

int main(int argc, char **argv)
{
    static const char line[] = "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopq\n";
    int writers = argc > 2 ? atoi(argv[2]) : 1, lines = argc > 3 ? atoi(argv[3]) : 100000;
    pid_t pids[64];
    long start;
    int fd;

    if (argc < 2 || writers < 1 || writers > 64 || lines < 1) {
        fprintf(stderr, "usage: bench_append LOG [WRITERS (1-64) [LINES]]\n");
        return 2;
    }
    if ((fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644)) < 0)
        die("open");
    start = now_ns();
    for (int i = 0; i < writers; i++) {
        if ((pids[i] = fork()) < 0)
            die("fork");
        if (pids[i] == 0) {
            for (int j = 0; j < lines; j++)
                if (write(fd, line, sizeof line - 1) != (ssize_t)(sizeof line - 1))
                    die("write");
            _exit(0);
        }
    }
    wait_all_ok(pids, writers);
    fprintf(stderr, "bench: %ld ns per write\n", (now_ns() - start) / ((long)writers * lines));
    printf("ok\n");
    return 0;
}
