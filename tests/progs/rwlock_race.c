// link: -pthread
/*
 * rwlock_race: readers and writers of one table under a pthread read-write lock.
 *
 * Two writer threads, each 30 times, take the lock for writing and append their number (1 or
 * 2) to a shared log; two reader threads, each 30 times, take it for reading and note how long
 * the log was (what they saw), then try once for reading and once for writing without waiting
 * (pthread_rwlock_tryrdlock, pthread_rwlock_trywrlock) and note whether the lock was free
 * (EBUSY when a writer, or any other holder for the try-write, had it). All start together at
 * a barrier, with a little computation and a sched_yield between rounds (and some with a
 * writer's lock held). The main thread joins
 * them and prints the writers' log, what each reader saw, and how many of its tries found the
 * lock busy. Which thread gets the lock when is a race: natively the output differs from run
 * to run; a replay must print the record's.
 */
#include "common.h"
#include <pthread.h>
#include <sched.h>

#define ROUNDS 30

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t start;
static int log_buf[2 * ROUNDS];
static int log_len;
static int seen[2][ROUNDS];
static int busy[2];

static void pause_a_little(int me)
{
    volatile unsigned spin = 0;

    for (unsigned i = 0; i < 1500u * (unsigned)me; i++)
        spin += i;
    sched_yield();
}

/* Computation with the lock held (a writer's: the readers' tries then find it busy). */
static void hold_a_little(void)
{
    volatile unsigned spin = 0;

    for (unsigned i = 0; i < 20000u; i++)
        spin += i;
}

static void *writer(void *arg)
{
    int me = (int)(long)arg;

    pthread_barrier_wait(&start);
    for (int r = 0; r < ROUNDS; r++) {
        if (pthread_rwlock_wrlock(&lock) != 0)
            fail("wrlock");
        log_buf[log_len++] = me;
        hold_a_little();
        pthread_rwlock_unlock(&lock);
        pause_a_little(me);
    }
    return NULL;
}

static void *reader(void *arg)
{
    int me = (int)(long)arg;

    pthread_barrier_wait(&start);
    for (int r = 0; r < ROUNDS; r++) {
        int e;

        if (pthread_rwlock_rdlock(&lock) != 0)
            fail("rdlock");
        seen[me][r] = log_len;
        pthread_rwlock_unlock(&lock);
        e = pthread_rwlock_tryrdlock(&lock);
        if (e == 0)
            pthread_rwlock_unlock(&lock);
        else if (e == EBUSY)
            busy[me]++;
        else
            fail("tryrdlock");
        e = pthread_rwlock_trywrlock(&lock);
        if (e == 0)
            pthread_rwlock_unlock(&lock);
        else if (e == EBUSY)
            busy[me]++;
        else
            fail("trywrlock");
        pause_a_little(me + 1);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[4];

    program_start();
    if (pthread_barrier_init(&start, NULL, 4) != 0)
        fail("barrier");
    for (long i = 0; i < 2; i++) {
        if (pthread_create(&t[i], NULL, writer, (void *)(i + 1)) != 0)
            fail("pthread_create");
        if (pthread_create(&t[2 + i], NULL, reader, (void *)i) != 0)
            fail("pthread_create");
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    printf("log:");
    for (int i = 0; i < log_len; i++)
        printf(" %d", log_buf[i]);
    printf("\n");
    for (int r = 0; r < 2; r++) {
        printf("reader %d saw:", r + 1);
        for (int i = 0; i < ROUNDS; i++)
            printf(" %d", seen[r][i]);
        printf(" (busy %d)\n", busy[r]);
    }
    return 0;
}
