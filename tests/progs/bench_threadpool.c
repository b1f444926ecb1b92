// link: -pthread
/*
 * bench_threadpool: a thread-per-connection server under load, for the threads benchmark
 * (tests/bench/threadpool.sh). The main thread listens and forks NCLIENTS client processes;
 * NCLIENTS threads each accept one connection on the shared listening socket and answer
 * ROUNDS requests of 64 bytes with 64 bytes; each client sends a request and waits for its
 * answer ROUNDS times.
 *
 *     bench_threadpool NCLIENTS ROUNDS
 *
 * Prints "bench: <us> us" on stderr: the server's time from before its first thread to after
 * its last join, read with the clock system call (which ddbx neither hooks nor replays), and
 * "served <n>" on stdout.
 */
#include "common.h" /* the helpers every test program shares */
#include <pthread.h>

#define SIZE 64

static int listen_fd, rounds;
static pthread_mutex_t served_lock = PTHREAD_MUTEX_INITIALIZER;
static long served;

static long long now_us(void)
{
    struct timespec t;

    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static void *serve(void *arg)
{
    char buf[SIZE];
    int fd = accept_one(listen_fd), i;

    (void)arg;
    for (i = 0; i < rounds; i++) {
        if (recv_waitall(fd, buf, SIZE) != SIZE)
            fail("short read");
        write_all(fd, buf, SIZE);
    }
    close_or_die(fd);
    pthread_mutex_lock(&served_lock);
    served += rounds;
    pthread_mutex_unlock(&served_lock);
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 4, port, i, id;
    pthread_t th[64];
    pid_t pids[64];
    long long start;
    char buf[SIZE];

    rounds = argc > 2 ? atoi(argv[2]) : 10000;
    if (n < 1 || n > 64 || rounds < 1)
        fail("usage: bench_threadpool NCLIENTS(1-64) ROUNDS");
    program_start();
    listen_fd = bind_any(&port, 1);
    id = fork_clients(listen_fd, n, pids);
    if (id) {
        int fd = connect_to(port);

        memset(buf, 'a' + id, SIZE);
        for (i = 0; i < rounds; i++) {
            write_all(fd, buf, SIZE);
            if (recv_waitall(fd, buf, SIZE) != SIZE)
            fail("short read");
        }
        close_or_die(fd);
        exit(0);
    }
    start = now_us();
    for (i = 0; i < n; i++)
        if (pthread_create(&th[i], NULL, serve, NULL) != 0)
            fail("pthread_create");
    for (i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    fprintf(stderr, "bench: %lld us\n", now_us() - start);
    wait_all_ok(pids, n);
    printf("served %ld\n", served);
    return 0;
}
