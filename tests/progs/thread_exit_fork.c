// link: -pthread
/*
 * thread_exit_fork: threads that end with pthread_exit, and a fork from a process with
 * threads (only the forking thread lives on in the child).
 *
 * The main thread starts 3 threads that each increment a counter under a mutex 100 times;
 * the 2nd and 3rd end with pthread_exit, the 1st returns. While they run it forks: the child
 * (its only thread a copy of the main thread) starts one thread of its own, both increment
 * the child's copy of the counter 100 times each, and the child prints `child: N` (N >= 200)
 * and exits. The parent joins its threads, reaps the child and prints `parent: 300`. No race
 * in the output: under ddbx the child is an actor with a lock history of its own, whose
 * threads are numbered afresh (p2.t1, p2.t2), and no thread ends in an abort (the preload
 * must not stand in a pthread_exit's unwind).
 *
 * The fork holds the counter's mutex (pthread_atfork: taken before, let go of after, in both
 * processes), as a program that forks while threads run must: otherwise a worker holding it at
 * the fork leaves the child a mutex nobody will unlock, and the child hangs (natively too).
 */
#include "common.h"
#include <pthread.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int counter;

static void take(void)
{
    pthread_mutex_lock(&lock);
}

static void let_go(void)
{
    pthread_mutex_unlock(&lock);
}

static void *worker(void *arg)
{
    for (int i = 0; i < 100; i++) {
        pthread_mutex_lock(&lock);
        counter++;
        pthread_mutex_unlock(&lock);
    }
    if (arg != NULL)
        pthread_exit(NULL);
    return NULL;
}

int main(void)
{
    pthread_t t[3];

    program_start();
    if (pthread_atfork(take, let_go, let_go) != 0)
        fail("pthread_atfork");
    for (long i = 0; i < 3; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
            fail("pthread_create");
    pid_t child = fork();
    if (child < 0)
        die("fork");
    if (child == 0) {
        pthread_t c;
        if (pthread_create(&c, NULL, worker, NULL) != 0)
            fail("pthread_create");
        worker(NULL);
        pthread_join(c, NULL);
        printf("child: %s\n", counter >= 200 ? ">= 200" : "too few");
        exit(0);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    if (waitpid(child, NULL, 0) != child)
        die("waitpid");
    printf("parent: %d\n", counter);
    return 0;
}
