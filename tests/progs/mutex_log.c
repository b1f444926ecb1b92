// link: -pthread
/*
 * mutex_log: threads that take turns on one mutex (paper 000's shared object).
 *
 * mutex_log [THREADS [ROUNDS]] (default 4 threads, 50 rounds): each thread, ROUNDS times,
 * (all started together, at a barrier) locks one mutex, appends its number (1..THREADS) to a shared log and unlocks, with a little
 * computation and a sched_yield between rounds. The main thread joins them and prints the
 * log, 50 numbers a line. Which thread gets the mutex when is a race: natively the log
 * differs from run to run; a replay must print the record's.
 *
 * mutex_log bench THREADS ROUNDS: the contended mutex benchmark: each thread increments a
 * shared counter under the mutex ROUNDS times (no yield); prints the total, and on stderr
 * `bench: N us`, the time from before the first thread is made to after the last is joined,
 * read with the clock_gettime system call (not hooked, so the same natively and under ddbx). With 0 threads
 * the main thread does the ROUNDS itself and no thread is ever made (what a single-threaded
 * program's locks cost under ddbx).
 */
#include "common.h"
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int *log_buf;
static int log_len;
static long counter;
static int rounds = 50;
static int bench;
static pthread_barrier_t start;

/* CLOCK_MONOTONIC in ns, read with the system call itself (which ddbx does not hook or replay). */
static long long raw_ns(void)
{
    struct timespec t;

    if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t) < 0)
        die("clock_gettime (system call)");
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void *worker(void *arg)
{
    int me = (int)(long)arg;
    volatile unsigned spin = 0;

    pthread_barrier_wait(&start);
    for (int r = 0; r < rounds; r++) {
        pthread_mutex_lock(&lock);
        if (bench)
            counter++;
        else
            log_buf[log_len++] = me;
        pthread_mutex_unlock(&lock);
        if (!bench) {
            for (unsigned i = 0; i < 2000u * (unsigned)me; i++)
                spin += i;
            sched_yield();
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int a = 1;
    int threads = 4;

    program_start();
    if (argc > a && strcmp(argv[a], "bench") == 0) {
        bench = 1;
        a++;
    }
    if (argc > a)
        threads = atoi(argv[a++]);
    if (argc > a)
        rounds = atoi(argv[a++]);
    if (threads < (bench ? 0 : 1) || threads > 64 || rounds < 1)
        fail("usage: mutex_log [bench] [THREADS [ROUNDS]]");
    log_buf = calloc((size_t)threads * (size_t)rounds, sizeof *log_buf);
    long long began = raw_ns();
    if (threads == 0) {
        /* The single-threaded benchmark: the main thread alone, no thread ever made. */
        for (int r = 0; r < rounds; r++) {
            pthread_mutex_lock(&lock);
            counter++;
            pthread_mutex_unlock(&lock);
        }
        printf("total %ld\n", counter);
        fprintf(stderr, "bench: %lld us\n", (raw_ns() - began) / 1000);
        return 0;
    }
    pthread_t t[64];
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(long)(i + 1)) != 0)
            fail("pthread_create");
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    if (bench) {
        printf("total %ld\n", counter);
        fprintf(stderr, "bench: %lld us\n", (raw_ns() - began) / 1000);
        return 0;
    }
    for (int i = 0; i < log_len; i++)
        printf("%d%s", log_buf[i], (i + 1) % 50 == 0 || i + 1 == log_len ? "\n" : " ");
    return 0;
}
