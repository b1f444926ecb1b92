// link: -pthread
/*
 * sem_race: which thread's sem_trywait finds a post, and how often each found none.
 *
 * The main thread starts 3 workers; each tries to take an unnamed semaphore with sem_trywait
 * until one succeeds, yielding between tries. The main thread posts 3 times, after a random
 * pause before each. After joining them it prints, in the order they got a post (a mutex
 * keeps the order),
 *     w2 after 1234 tries
 *     w1 after 1790 tries
 *     w3 after 2211 tries
 * (the order and the counts differ from run to run: which trywait found the count at zero
 * is a race, as Python's lock acquisitions are).
 */
#include "common.h" /* the helpers every test program shares */
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>

#define WORKERS 3

static sem_t sem;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long tries[WORKERS];
static int order[WORKERS];
static int got;

static void *worker(void *arg)
{
    long w = (long)arg;
    while (sem_trywait(&sem) != 0) {
        if (errno != EAGAIN)
            die("sem_trywait");
        tries[w]++;
        sched_yield();
    }
    pthread_mutex_lock(&lock);
    order[got++] = (int)w;
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(void)
{
    pthread_t threads[WORKERS];
    srand(getpid());
    if (sem_init(&sem, 0, 0) != 0)
        die("sem_init");
    for (long w = 0; w < WORKERS; w++)
        if (pthread_create(&threads[w], NULL, worker, (void *)w) != 0)
            die("pthread_create");
    for (int i = 0; i < WORKERS; i++) {
        usleep(500 + rand() % 1500);
        sem_post(&sem);
    }
    for (int w = 0; w < WORKERS; w++)
        pthread_join(threads[w], NULL);
    for (int i = 0; i < WORKERS; i++)
        printf("w%d after %ld tries\n", order[i] + 1, tries[order[i]]);
    sem_destroy(&sem);
    return 0;
}
