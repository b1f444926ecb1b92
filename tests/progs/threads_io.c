// link: -pthread
/*
 * threads_io: socket I/O from a second thread (which ddbx refuses to record),
 * and a second thread that does no socket I/O (which ddbx records fine).
 *
 * threads_io (no argument): the main thread listens on 127.0.0.1 (kernel-
 * chosen port) and starts a second thread that connects, sends "hello\n" and
 * closes; the main thread accepts, reads to EOF, joins the thread and prints
 *     got: hello\n
 * Under `ddbx record` this must be stopped with exit code 103 (socket I/O
 * from a second thread).
 *
 * threads_io quiet-thread: the second thread only computes (a sum); the
 * socket peer is a forked child (connects, sends "hello\n", closes).  The
 * parent accepts, reads to EOF, joins the thread, reaps the child and prints
 *     thread computed 500000500000
 *     got: hello\n
 * No race in the output: this checks that threads without socket I/O are
 * recorded and replayed.
 *
 * threads_io helper-loop: before the main thread does any socket I/O, a helper
 * thread runs a private event loop of its own, as Node's helper threads do with
 * libuv: makes a non-blocking pipe, polls it (nothing ready), writes a byte into
 * it, polls it (ready), reads the byte back, closes it and ends.  The main
 * thread then forks 3 clients that send their hello; it accepts them and prints
 *     helper loop: 1 byte
 *     accepted: I J K
 * (the accept order: a race).  The helper's pipe is its own (reported as not
 * recorded); the main thread's sockets are recorded and replayed.
 */
#include "common.h" /* the helpers every test program shares */
#include <pthread.h>

static int port;
static long long sum;

static void *io_thread(void *arg)
{
    int fd;

    (void)arg;
    jitter();
    fd = connect_to(port);
    write_str(fd, "hello\n");
    close_or_die(fd);
    return NULL;
}

static ssize_t helper_bytes;

static void *helper_loop(void *arg)
{
    int p[2];
    struct pollfd pfd;
    char c = 'x';

    (void)arg;
    if (pipe2(p, O_NONBLOCK) < 0)
        die("pipe2");
    pfd.fd = p[0];
    pfd.events = POLLIN;
    if (poll(&pfd, 1, 0) != 0)
        fail("helper: an empty pipe is ready");
    write_str(p[1], "x");
    if (poll(&pfd, 1, -1) != 1)
        fail("helper: poll");
    helper_bytes = read(p[0], &c, 1);
    close_or_die(p[0]);
    close_or_die(p[1]);
    return NULL;
}

/* helper-loop mode (see the top). */
static int run_helper_loop(void)
{
    int lfd, port, i, id, order[3];
    int conns[3];
    pid_t pids[3];
    pthread_t th;
    int e = pthread_create(&th, NULL, helper_loop, NULL);

    if (e == 0)
        e = pthread_join(th, NULL);
    if (e != 0) {
        errno = e;
        die("pthread");
    }
    lfd = bind_any(&port, 3);
    i = fork_clients(lfd, 3, pids);
    if (i) {
        client_start();
        e = connect_to(port);
        client_hello(e, i);
        close_or_die(e);
        exit(0);
    }
    for (i = 0; i < 3; i++) {
        conns[i] = accept_hello(lfd, 3, &id);
        order[i] = id;
    }
    for (i = 0; i < 3; i++)
        close_or_die(conns[i]);
    close_or_die(lfd);
    wait_all_ok(pids, 3);
    printf("helper loop: %zd byte\n", helper_bytes);
    print_order("accepted:", order, 3);
    return 0;
}

static void *quiet_thread(void *arg)
{
    long long i;

    (void)arg;
    for (i = 1; i <= 1000000; i++)
        sum += i;
    return NULL;
}

int main(int argc, char **argv)
{
    int quiet = argc > 1 && strcmp(argv[1], "quiet-thread") == 0;
    int lfd, fd, e;
    pid_t child = -1;
    pthread_t th;
    char buf[256], esc[256 * 4 + 1];
    size_t n;

    if (argc > 1 && strcmp(argv[1], "helper-loop") == 0) {
        program_start();
        return run_helper_loop();
    }
    if (argc > 1 && !quiet)
        fail("usage: threads_io [quiet-thread | helper-loop]");
    program_start();
    lfd = bind_any(&port, 1);
    e = pthread_create(&th, NULL, quiet ? quiet_thread : io_thread, NULL);
    if (e != 0) {
        errno = e;
        die("pthread_create");
    }
    if (quiet) {
        child = fork_or_die();
        if (child == 0) {
            jitter_init();
            close_or_die(lfd);
            io_thread(NULL);
            exit(0);
        }
    }
    fd = accept_one(lfd);
    n = read_to_eof(fd, buf, sizeof buf);
    if (close(fd) < 0 || close(lfd) < 0)
        die("close");
    e = pthread_join(th, NULL);
    if (e != 0) {
        errno = e;
        die("pthread_join");
    }
    if (quiet) {
        wait_ok(child);
        printf("thread computed %lld\n", sum);
    }
    escape(buf, n < sizeof buf ? n : sizeof buf - 1, esc);
    printf("got: %s\n", esc);
    return 0;
}
