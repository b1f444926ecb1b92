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

    if (argc > 1 && !quiet)
        fail("usage: threads_io [quiet-thread]");
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
