/*
 * peak_rss OUT COMMAND [ARGS...]: runs COMMAND as its child, waits for it, writes the child's
 * peak resident set size in KiB (wait4's ru_maxrss) to the file OUT, and exits as the child
 * did (128 + the signal if it was killed). For ddbx/tests/load.rs, which asserts ddbx's peak.
 *
 * Why a program of its own: Linux keeps the largest RSS a process had across exec, and a
 * child forked (or vforked) straight from the test process starts with the test process's
 * RSS, which holds whole histories by then. Forked from this small program, the command's
 * figure is its own (and that of what it reaped: ddbx reaps the small programs it runs).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    struct rusage usage;
    int status;
    pid_t pid;
    FILE *out;

    if (argc < 3) {
        fprintf(stderr, "usage: peak_rss OUT COMMAND [ARGS...]\n");
        return 2;
    }
    pid = fork();
    if (pid < 0) {
        perror("peak_rss: fork");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror("peak_rss: exec");
        _exit(127);
    }
    while (wait4(pid, &status, 0, &usage) < 0)
        if (errno != EINTR) {
            perror("peak_rss: wait4");
            return 2;
        }
    out = fopen(argv[1], "w");
    if (!out || fprintf(out, "%ld\n", usage.ru_maxrss) < 0 || fclose(out) != 0) {
        perror("peak_rss: writing the result");
        return 2;
    }
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
