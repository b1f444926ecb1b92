/*
 * abs_sleep: a loop that sleeps until absolute times of the monotonic clock while it waits
 * for something ddbx does not replay (issue #10, class 4).
 *
 *   abs_sleep FILE
 *
 * Removes FILE, forks a child that pauses 100 ms (nanosleep, relative) and creates it. The
 * parent, until FILE exists: reads CLOCK_MONOTONIC, adds 5 ms, and sleeps until then with
 * clock_nanosleep(TIMER_ABSTIME) — what Python's time.sleep does (gunicorn's arbiter waits
 * for its workers so). Then it reaps the child and prints "done". How many times the loop
 * ran (about 20) is in the clock reads of the history, not in the output.
 *
 * In replay the clock the program reads is the record's: a deadline computed from it is in
 * the real clock's past unless the LD moves it, and every sleep is over at once (the loop
 * then spins until the child is done, thousands of times).
 */
#include "common.h"
#include <time.h>

int main(int argc, char **argv)
{
    struct timespec t, pause = {0, 100 * 1000 * 1000};
    pid_t child;
    int status;

    if (argc != 2)
        fail("usage: abs_sleep FILE");
    program_start();
    if (unlink(argv[1]) < 0 && errno != ENOENT)
        die("unlink");
    child = fork();
    if (child < 0)
        die("fork");
    if (child == 0) {
        int fd;

        nanosleep(&pause, NULL);
        fd = open(argv[1], O_CREAT | O_WRONLY, 0600);
        if (fd < 0)
            die("open");
        close(fd);
        _exit(0);
    }
    while (access(argv[1], F_OK) != 0) {
        if (clock_gettime(CLOCK_MONOTONIC, &t) < 0)
            die("clock_gettime");
        t.tv_nsec += 5 * 1000 * 1000;
        if (t.tv_nsec >= 1000 * 1000 * 1000) {
            t.tv_sec++;
            t.tv_nsec -= 1000 * 1000 * 1000;
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
            ;
    }
    if (waitpid(child, &status, 0) != child)
        die("waitpid");
    printf("done\n");
    return 0;
}
