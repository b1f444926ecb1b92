// link: -pthread
/*
 * thread_fds: which numbers fds get when two threads make them at once, and the events that
 * name them.
 *
 * The main thread starts a second thread; then each, 5 times, waits a random time and makes an
 * fd: the main thread a UDP socket bound to 127.0.0.1, on which it sends itself one datagram
 * and receives it (events, which name the socket's number), the second thread an fd of the
 * kind its argument says, which no event names:
 *     eventfd (the default), timerfd, signalfd, inotify, memfd
 * The kernel gives the lowest free number, so which thread's fd got which number is a race.
 * After joining the thread, the main thread prints
 *     sockets: 3 5 6 8 10
 *     made: 4 7 9 11 12
 * (the numbers: they differ from run to run).
 */
#include "common.h" /* the helpers every test program shares */
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>

#define N 5

static const char *kind = "eventfd";
static int made[N];

static int make(void)
{
    sigset_t mask;

    if (strcmp(kind, "timerfd") == 0)
        return timerfd_create(CLOCK_MONOTONIC, 0);
    if (strcmp(kind, "signalfd") == 0) {
        sigemptyset(&mask);
        sigaddset(&mask, SIGUSR2);
        return signalfd(-1, &mask, 0);
    }
    if (strcmp(kind, "inotify") == 0)
        return inotify_init1(0);
    if (strcmp(kind, "memfd") == 0)
        return memfd_create("ddbx-test", 0);
    return eventfd(0, 0);
}

static void *maker(void *arg)
{
    int i;

    (void)arg;
    for (i = 0; i < N; i++) {
        jitter();
        made[i] = make();
        if (made[i] < 0)
            die("make");
    }
    return NULL;
}

int main(int argc, char **argv)
{
    struct sockaddr_in a;
    socklen_t len;
    pthread_t th;
    int i, s[N];
    char b;

    if (argc > 1)
        kind = argv[1];
    program_start();
    if (pthread_create(&th, NULL, maker, NULL) != 0)
        fail("pthread_create");
    for (i = 0; i < N; i++) {
        jitter();
        s[i] = socket(AF_INET, SOCK_DGRAM, 0);
        if (s[i] < 0)
            die("socket");
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        len = sizeof a;
        if (bind(s[i], (struct sockaddr *)&a, sizeof a) < 0 ||
            getsockname(s[i], (struct sockaddr *)&a, &len) < 0)
            die("bind");
        if (sendto(s[i], "x", 1, 0, (struct sockaddr *)&a, len) != 1 || recv(s[i], &b, 1, 0) != 1)
            die("send to itself");
    }
    if (pthread_join(th, NULL) != 0)
        fail("pthread_join");
    print_order("sockets:", s, N);
    print_order("made:", made, N);
    return 0;
}
