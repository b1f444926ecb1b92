// link: -pthread -fno-pie -no-pie
/*
 * thread_values: clock reads and random bytes of worker threads.
 *
 * The main thread starts 4 workers; each, 3 times, takes a mutex, reads CLOCK_REALTIME,
 * gettimeofday and 4 random bytes (getrandom), and lets go; the main thread reads the clock
 * between starting them. After joining them it prints what each got:
 *     w1: 1764154321.123456789 1764154321123456 9f3a22c1
 *     …
 *     main: 1764154321.123001234
 * (times and bytes differ in every run). Built without -fPIE and taking malloc's address, as
 * Debian's python3 is: the program then has a `malloc` symbol of its own, a PLT entry that
 * leads to glibc's, which is not another allocator (its threads' lock order is recorded).
 */
#include "common.h" /* the helpers every test program shares */
#include <pthread.h>
#include <sys/random.h>
#include <sys/time.h>

#define WORKERS 4
#define ROUNDS 3

/* Set in main: taking malloc's address in non-PIE code makes its canonical PLT entry. */
void *(*volatile allocate)(size_t);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct timespec when[WORKERS][ROUNDS];
static struct timeval day[WORKERS][ROUNDS];
static unsigned random_word[WORKERS][ROUNDS];

static void *worker(void *arg)
{
    long w = (long)arg;
    for (int r = 0; r < ROUNDS; r++) {
        pthread_mutex_lock(&lock);
        clock_gettime(CLOCK_REALTIME, &when[w][r]);
        gettimeofday(&day[w][r], NULL);
        if (getrandom(&random_word[w][r], sizeof random_word[w][r], 0) != 4)
            die("getrandom");
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[WORKERS];
    struct timespec main_time = {0, 0};
    allocate = malloc;
    char *scratch = allocate(16);
    if (!scratch)
        die("malloc");
    free(scratch);
    for (long w = 0; w < WORKERS; w++) {
        if (pthread_create(&threads[w], NULL, worker, (void *)w) != 0)
            die("pthread_create");
        clock_gettime(CLOCK_REALTIME, &main_time);
    }
    for (int w = 0; w < WORKERS; w++)
        pthread_join(threads[w], NULL);
    for (int w = 0; w < WORKERS; w++) {
        printf("w%d:", w + 1);
        for (int r = 0; r < ROUNDS; r++)
            printf(" %lld.%09ld %lld%06ld %08x", (long long)when[w][r].tv_sec,
                   when[w][r].tv_nsec, (long long)day[w][r].tv_sec, (long)day[w][r].tv_usec,
                   random_word[w][r]);
        printf("\n");
    }
    printf("main: %lld.%09ld\n", (long long)main_time.tv_sec, main_time.tv_nsec);
    return 0;
}
