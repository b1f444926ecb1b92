// link: -pthread
/*
 * thread_pool: a server whose socket I/O is done by several threads, as thread-pool servers
 * do it. The server forks NCLIENTS client processes first; each connects (after a jitter),
 * sends "client <i>\n", waits for "ok\n" and exits.
 *
 * thread_pool pool: the main thread accepts the NCLIENTS connections and queues each (a
 * pthread mutex and condition variable); NTHREADS worker threads take connections from the
 * queue, read the client's line, note "worker <w> served client <i>" under a log mutex,
 * reply "ok\n" and close. The main thread then joins the workers, reaps the clients and
 * prints the notes in the order they were made. Which client comes first (the accept
 * order), and which worker serves which, differ from run to run.
 *
 * thread_pool accepters: NTHREADS threads each accept NCLIENTS / NTHREADS connections on
 * the one listening socket themselves (blocking accepts, all at once), read the client's
 * line, note "thread <t> got client <i>" and reply. Which thread accepts which client is
 * the race.
 *
 * thread_pool poller: one thread polls the NCLIENTS connections the main thread accepted
 * and hands each ready one to a second thread, which reads the line and replies (poll
 * ready sets, receives and sends from two threads on the same connections).
 *
 * thread_pool opener: while the main thread accepts the NCLIENTS connections (and keeps them
 * open), a second thread opens /dev/null twice (after a jitter each time) and closes both, 10
 * times, with no
 * lock between the two; the main thread notes "client <i> on fd <n>" and prints the
 * opener's fds at the end. The numbers the kernel gives depend on which thread came first:
 * they differ from run to run.
 */
#include "common.h" /* the helpers every test program shares */
#include <pthread.h>

#define NCLIENTS 6
#define NTHREADS 3

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_ready = PTHREAD_COND_INITIALIZER;
static int queue[NCLIENTS + NTHREADS];
static int queue_head, queue_tail;

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static int listen_fd;

static void push(int fd)
{
    pthread_mutex_lock(&queue_lock);
    queue[queue_tail++] = fd;
    pthread_cond_signal(&queue_ready);
    pthread_mutex_unlock(&queue_lock);
}

static int pop(void)
{
    int fd;

    pthread_mutex_lock(&queue_lock);
    while (queue_head == queue_tail)
        pthread_cond_wait(&queue_ready, &queue_lock);
    fd = queue[queue_head++];
    pthread_mutex_unlock(&queue_lock);
    return fd;
}

/* Reads the client's hello on fd, notes who served it, replies and closes. */
static void serve(int fd, const char *who, long w)
{
    int id = read_client_id(fd, NCLIENTS);

    pthread_mutex_lock(&log_lock);
    log_line("%s %ld %s client %d", who, w, strcmp(who, "worker") == 0 ? "served" : "got", id);
    pthread_mutex_unlock(&log_lock);
    write_str(fd, "ok\n");
    close_or_die(fd);
}

static void *worker(void *arg)
{
    long w = (long)arg;
    int fd;

    while ((fd = pop()) >= 0) {
        jitter();
        serve(fd, "worker", w);
    }
    return NULL;
}

static void *accepter(void *arg)
{
    long t = (long)arg;
    int i;

    for (i = 0; i < NCLIENTS / NTHREADS; i++)
        serve(accept_one(listen_fd), "thread", t);
    return NULL;
}

static void *reader(void *arg)
{
    int fd;

    (void)arg;
    while ((fd = pop()) >= 0)
        serve(fd, "reader", 2);
    return NULL;
}

/* The poller: waits for each accepted connection to be readable and hands it on. */
static void poll_and_hand_on(const int *conns)
{
    struct pollfd p[NCLIENTS];
    int i, left = NCLIENTS;

    for (i = 0; i < NCLIENTS; i++) {
        p[i].fd = conns[i];
        p[i].events = POLLIN;
    }
    while (left > 0) {
        if (poll(p, NCLIENTS, -1) < 0)
            die("poll");
        for (i = 0; i < NCLIENTS; i++) {
            if (p[i].fd >= 0 && (p[i].revents & POLLIN)) {
                push(p[i].fd);
                p[i].fd = -1;
                left--;
            }
        }
    }
}

#define OPENS 20
static int opened[OPENS]; /* each pair open at once, then closed */

static void *opener(void *arg)
{
    int i;

    (void)arg;
    for (i = 0; i < OPENS; i++) {
        jitter();
        opened[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (opened[i] < 0)
            die("open");
        if (i % 2) {
            close_or_die(opened[i - 1]);
            close_or_die(opened[i]);
        }
    }
    return NULL;
}

static void start(pthread_t *th, int n, void *(*f)(void *))
{
    long i;

    for (i = 0; i < n; i++)
        if (pthread_create(&th[i], NULL, f, (void *)(i + 1)) != 0)
            fail("pthread_create");
}

static void join(pthread_t *th, int n)
{
    int i;

    for (i = 0; i < n; i++)
        if (pthread_join(th[i], NULL) != 0)
            fail("pthread_join");
}

int main(int argc, char **argv)
{
    pthread_t th[NTHREADS];
    pid_t pids[NCLIENTS];
    int port, i, id, conns[NCLIENTS];
    const char *mode = argc > 1 ? argv[1] : "pool";

    program_start();
    listen_fd = bind_any(&port, 1);
    id = fork_clients(listen_fd, NCLIENTS, pids);
    if (id) {
        int fd;

        client_start();
        fd = connect_to(port);
        client_hello(fd, id);
        close_or_die(fd);
        exit(0);
    }
    if (strcmp(mode, "pool") == 0) {
        start(th, NTHREADS, worker);
        for (i = 0; i < NCLIENTS; i++)
            push(accept_one(listen_fd));
        for (i = 0; i < NTHREADS; i++)
            push(-1);
        join(th, NTHREADS);
    } else if (strcmp(mode, "accepters") == 0) {
        start(th, NTHREADS, accepter);
        join(th, NTHREADS);
    } else if (strcmp(mode, "poller") == 0) {
        start(th, 1, reader);
        for (i = 0; i < NCLIENTS; i++)
            conns[i] = accept_one(listen_fd);
        poll_and_hand_on(conns);
        push(-1);
        join(th, 1);
    } else if (strcmp(mode, "opener") == 0) {
        start(th, 1, opener);
        for (i = 0; i < NCLIENTS; i++) {
            conns[i] = accept_one(listen_fd);
            id = read_client_id(conns[i], NCLIENTS);
            pthread_mutex_lock(&log_lock);
            log_line("client %d on fd %d", id, conns[i]);
            pthread_mutex_unlock(&log_lock);
            write_str(conns[i], "ok\n");
        }
        join(th, 1);
        for (i = 0; i < NCLIENTS; i++)
            close_or_die(conns[i]);
        print_order("opener's fds:", opened, OPENS);
    } else {
        fail("usage: thread_pool pool|accepters|poller|opener");
    }
    close_or_die(listen_fd);
    wait_all_ok(pids, NCLIENTS);
    print_log();
    return 0;
}
