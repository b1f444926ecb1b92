// link: -pthread
/*
 * trylock_busy: threads that try a mutex instead of waiting for it.
 *
 * trylock_busy [THREADS [ROUNDS]] (default 3 threads, 40 rounds): the main thread holds the
 * mutex while the threads start (they meet it at a barrier) and lets go only once a thread's
 * trylock has found it held (a flag that thread sets), so at least one EBUSY comes whatever
 * the scheduler does (a fixed computation instead let a loaded machine run the threads only
 * after it, and no trylock met the mutex held). Each thread, ROUNDS times,
 * calls pthread_mutex_trylock until it gets the mutex (counting each EBUSY), holds it for a
 * little computation, and unlocks; between rounds it computes a little more. Then it takes
 * one round with pthread_mutex_timedlock (an already-passed deadline: ETIMEDOUT while another
 * holds the mutex, counted) and, if that failed, pthread_mutex_lock. The main thread joins
 * them and prints, per thread, its EBUSY count, the rounds in which it met EBUSY (a `.` for a
 * round without, a `b` for one with) and its ETIMEDOUT. How many times a trylock found the
 * mutex held is a race: natively the counts differ between runs; a replay prints the record's.
 */
#include "common.h"
#include <pthread.h>
#include <sched.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int rounds = 40;
static long busy[16];
static char pattern[16][1001];
static int timedout[16];
static pthread_barrier_t start;
static int any_busy; /* a trylock found the mutex held (atomic) */

static void *worker(void *arg)
{
    int me = (int)(long)arg;
    volatile unsigned spin = 0;

    pthread_barrier_wait(&start);
    for (int r = 0; r < rounds; r++) {
        int met = 0;
        while (pthread_mutex_trylock(&lock) == EBUSY) {
            busy[me]++;
            met = 1;
            __atomic_store_n(&any_busy, 1, __ATOMIC_RELEASE);
            sched_yield();
        }
        for (unsigned i = 0; i < 5000u; i++)
            spin += i;
        pthread_mutex_unlock(&lock);
        pattern[me][r] = met ? 'b' : '.';
        for (unsigned i = 0; i < 3000u * (unsigned)me; i++)
            spin += i;
    }
    struct timespec past = {0, 0};
    if (pthread_mutex_timedlock(&lock, &past) == ETIMEDOUT) {
        timedout[me] = 1;
        pthread_mutex_lock(&lock);
    }
    for (unsigned i = 0; i < 5000u; i++)
        spin += i;
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = 3;

    program_start();
    if (argc > 1)
        threads = atoi(argv[1]);
    if (argc > 2)
        rounds = atoi(argv[2]);
    if (threads < 1 || threads > 15 || rounds < 1 || rounds > 1000)
        fail("usage: trylock_busy [THREADS [ROUNDS]]");
    pthread_t t[16];
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    pthread_mutex_lock(&lock);
    for (int i = 1; i <= threads; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(long)i) != 0)
            fail("pthread_create");
    pthread_barrier_wait(&start);
    while (!__atomic_load_n(&any_busy, __ATOMIC_ACQUIRE))
        sched_yield();
    pthread_mutex_unlock(&lock);
    for (int i = 1; i <= threads; i++)
        pthread_join(t[i], NULL);
    for (int i = 1; i <= threads; i++)
        printf("thread %d: %ld EBUSY %s%s\n", i, busy[i], pattern[i],
               timedout[i] ? " ETIMEDOUT" : "");
    return 0;
}
