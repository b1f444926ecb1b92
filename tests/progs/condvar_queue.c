// link: -pthread
/*
 * condvar_queue: a work queue under a mutex and two condition variables, one producer and
 * several consumers.
 *
 * condvar_queue [CONSUMERS [ITEMS]] (default 3 consumers, 60 items): the main thread starts
 * the consumers, then produces items 1..ITEMS into a queue of 4 places (waiting on `not_full`
 * when it is full, signalling `not_empty` after each push), then marks the end and broadcasts.
 * Each consumer waits on `not_empty`, takes an item, signals `not_full`, and keeps the item's
 * number; with a little computation after each item. The main thread joins them and prints
 * one line per consumer: `consumer K: items…`. Which consumer a signal wakes, and so who gets
 * which item, is a race: natively the lines differ between runs; a replay prints the
 * record's.
 *
 * condvar_queue timed: the consumers wait with pthread_cond_timedwait (50 µs deadlines) and
 * count their time-outs; the count is printed after each consumer's items.
 */
#include "common.h"
#include <pthread.h>
#include <time.h>

#define SLOTS 4

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static int queue[SLOTS];
static int head, count, done;
static int items = 60;
static int timed;
static int taken[16][1000];
static int ntaken[16];
static int timeouts[16];

static void *consumer(void *arg)
{
    int me = (int)(long)arg;
    volatile unsigned spin = 0;

    for (;;) {
        pthread_mutex_lock(&lock);
        while (count == 0 && !done) {
            if (timed) {
                struct timespec t;
                clock_gettime(CLOCK_REALTIME, &t);
                t.tv_nsec += 50000;
                if (t.tv_nsec >= 1000000000) {
                    t.tv_sec++;
                    t.tv_nsec -= 1000000000;
                }
                if (pthread_cond_timedwait(&not_empty, &lock, &t) == ETIMEDOUT)
                    timeouts[me]++;
            } else {
                pthread_cond_wait(&not_empty, &lock);
            }
        }
        if (count == 0 && done) {
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        int item = queue[head];
        head = (head + 1) % SLOTS;
        count--;
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&lock);
        taken[me][ntaken[me]++] = item;
        for (unsigned i = 0; i < 20000u; i++)
            spin += i;
    }
}

int main(int argc, char **argv)
{
    int a = 1;
    int consumers = 3;

    program_start();
    if (argc > a && strcmp(argv[a], "timed") == 0) {
        timed = 1;
        a++;
    }
    if (argc > a)
        consumers = atoi(argv[a++]);
    if (argc > a)
        items = atoi(argv[a++]);
    if (consumers < 1 || consumers > 15 || items < 1 || items > 1000)
        fail("usage: condvar_queue [timed] [CONSUMERS [ITEMS]]");
    pthread_t t[16];
    for (int i = 1; i <= consumers; i++)
        if (pthread_create(&t[i], NULL, consumer, (void *)(long)i) != 0)
            fail("pthread_create");
    for (int item = 1; item <= items; item++) {
        pthread_mutex_lock(&lock);
        while (count == SLOTS)
            pthread_cond_wait(&not_full, &lock);
        queue[(head + count) % SLOTS] = item;
        count++;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&lock);
    }
    pthread_mutex_lock(&lock);
    done = 1;
    pthread_cond_broadcast(&not_empty);
    pthread_mutex_unlock(&lock);
    for (int i = 1; i <= consumers; i++)
        pthread_join(t[i], NULL);
    for (int i = 1; i <= consumers; i++) {
        printf("consumer %d:", i);
        for (int k = 0; k < ntaken[i]; k++)
            printf(" %d", taken[i][k]);
        if (timed)
            printf(" (%d time-outs)", timeouts[i]);
        printf("\n");
    }
    return 0;
}
