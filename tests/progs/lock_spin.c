// link: -pthread
/*
 * lock_spin: how many times a thread takes a mutex is decided by a flag in memory.
 *
 * A second thread takes and lets go of a mutex over and over until the main thread, after a
 * random pause, sets a flag (an atomic store: no lock, no call); the main thread then joins
 * it, takes the mutex itself, and prints
 *     spins: 8123        (how many times the second thread took it: differs run to run)
 *     done: main took the mutex after the spinner ended
 * Replay cannot make the spinner take the mutex as often as in the record (the flag is
 * memory, the paper's limit): its count differs, and replay must still end, giving up the
 * recorded order of the mutex where it cannot be followed, with "done" printed.
 */
#include "common.h" /* the helpers every test program shares */
#include <pthread.h>
#include <stdatomic.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stop;
static long spins;

static void *spinner(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        pthread_mutex_lock(&lock);
        spins++;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t t;
    srand(getpid());
    if (pthread_create(&t, NULL, spinner, NULL) != 0)
        die("pthread_create");
    usleep(2000 + rand() % 3000);
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    pthread_mutex_lock(&lock);
    printf("spins: %ld\n", spins);
    printf("done: main took the mutex after the spinner ended\n");
    pthread_mutex_unlock(&lock);
    return 0;
}
