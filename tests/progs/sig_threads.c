// link: -pthread
/*
 * sig_threads: sig_computing in a process with threads. A SIGTERM whose handler clears a
 * loop's flag lands in the main thread's computation between two polls while a second thread
 * makes events of its own (Node's and memcached's main loops, ended by a script's `kill`
 * while their helper threads run).
 *
 * The root forks a child on a socketpair. The child starts a helper thread, which polls its
 * own end of a second pair every 2 ms until the main thread is done, then the child installs
 * its handler, says so, and loops while the flag is set: a poll of its end of the first pair
 * (1 ms, nothing comes), then about 10 ms of computation; it stops and joins the helper,
 * sends the root how many polls it made, and ends. The root waits for the word, pauses 30 or
 * 300 ms (from the CPU's cycle counter: record and replay differ), sends SIGTERM, reads the
 * count and prints
 *     polls before the SIGTERM: 3
 */
#include "common.h"
#include <pthread.h>
#include <signal.h>

static volatile int helper_running = 1;

static void *helper(void *arg)
{
    struct pollfd pfd = {.fd = *(int *)arg, .events = POLLIN};

    while (helper_running)
        if (poll(&pfd, 1, 2) < 0 && errno != EINTR)
            die("helper poll");
    return NULL;
}

static int polls(int fd)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    pthread_t t;
    int pair[2];
    int n = 0;

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) < 0)
        die("socketpair");
    if (pthread_create(&t, NULL, helper, &pair[0]) != 0)
        die("pthread_create");
    while (term_running) {
        if (poll(&pfd, 1, 1) < 0 && errno != EINTR)
            die("poll");
        n++;
        for (volatile long i = 0; i < 10000000 && term_running; i++)
            ;
    }
    helper_running = 0;
    if (pthread_join(t, NULL) != 0)
        die("pthread_join");
    return n;
}

int main(void)
{
    program_start();
    term_after_pause(polls, "polls");
    return 0;
}
