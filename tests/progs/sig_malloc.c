// link: -rdynamic
/*
 * sig_malloc [N]: a SIGCHLD handler (reaping with waitpid(-1, WNOHANG), telling a self-pipe,
 * reading the clock and its pid, as shells and event loops do) interrupts a program that
 * spends its time in malloc and free, while it forks N children that end at once.
 *
 * The program brings its own malloc, free, calloc and realloc (exported with -rdynamic, so
 * that every library's allocations go through them, the preload's included) and counts the
 * allocations made while its signal handler runs: the handler itself makes none, so any is
 * ddbx's, and ddbx allocating from the program's heap inside a signal handler that interrupted
 * the program's malloc corrupts that heap (bash aborted in sysmalloc). Prints
 *     reaped N, allocations in the handler: 0
 */
#include "common.h"
#include <signal.h>
#include <sys/wait.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static volatile sig_atomic_t in_handler, in_handler_allocs, reaped;
static int self_pipe[2];

void *malloc(size_t n)
{
    if (in_handler)
        in_handler_allocs++;
    return __libc_malloc(n);
}

void free(void *p)
{
    if (in_handler && p)
        in_handler_allocs++;
    __libc_free(p);
}

void *calloc(size_t n, size_t size)
{
    if (in_handler)
        in_handler_allocs++;
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    if (in_handler)
        in_handler_allocs++;
    return __libc_realloc(p, n);
}

static void on_chld(int sig)
{
    int saved = errno;
    struct timespec now;
    char byte = (char)sig;

    in_handler = 1;
    while (waitpid(-1, NULL, WNOHANG) > 0)
        reaped++;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (getpid() > 0 && write(self_pipe[1], &byte, 1) < 0 && errno != EAGAIN)
        _exit(3);
    in_handler = 0;
    errno = saved;
}

/* Frees and allocates one of 64 blocks of a pseudo-random size. */
static void churn(void **keep, unsigned *k)
{
    unsigned slot;

    *k = *k * 1103515245u + 12345u;
    slot = (*k >> 8) % 64;
    free(keep[slot]);
    keep[slot] = malloc(16 + (*k >> 16) % 2000);
}

int main(int argc, char **argv)
{
    int i, j, n = argc > 1 ? atoi(argv[1]) : 200;
    struct sigaction sa;
    void *keep[64] = {0};
    unsigned k = 1;
    char drain[64];

    program_start();
    if (pipe2(self_pipe, O_NONBLOCK) < 0)
        die("pipe2");
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_chld;
    sa.sa_flags = SA_RESTART;
    if (sigaction(SIGCHLD, &sa, NULL) < 0)
        die("sigaction");
    for (i = 0; i < n; i++) {
        pid_t p = fork();
        if (p < 0)
            die("fork");
        if (p == 0)
            _exit(0);
        for (j = 0; j < 2000; j++)
            churn(keep, &k);
    }
    while (reaped < n)
        churn(keep, &k);
    while (read(self_pipe[0], drain, sizeof drain) > 0)
        ;
    for (i = 0; i < 64; i++)
        free(keep[i]);
    printf("reaped %d, allocations in the handler: %d\n", (int)reaped, (int)in_handler_allocs);
    return 0;
}
