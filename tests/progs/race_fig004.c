/*
 * race_fig004: Figure 1 of Park & Jun's "Scalable race visualization for
 * debugging message-passing programs" (paper 004) as a socket program: three
 * locally-first message races <w, W>, <x, X>, <y, Y>, of which only <x, X>
 * is unaffected (x happened before w, and before the send of y2 in Y).
 *
 * The root P0 makes five listening sockets, one per channel, so that no
 * accept has a choice (no accept races), and forks P1, P2, P3.  Channels
 * (connector - acceptor): P1-P2, P3-P2, P0-P1, P0-P3, P1-P3.  Messages are 2
 * bytes, read with recv(MSG_WAITALL); jitter before each send.
 *   P1: sends x1 to P2 and y3 to P3, reads "a" from P2, then ONE select over
 *       {P0, P2}: race w between w1 (from P0) and w2 (from P2, sent after x).
 *   P2: ONE select over {P1, P3}: race x between x1 and x2; reads both, then
 *       sends "a" and w2 to P1 and y2 to P3.
 *   P3: sends x2 to P2, then ONE select over {P0, P2, P1}: race y between y1,
 *       y2 and y3.
 *   P0: sends w1 to P1 and y1 to P3.
 * After each select a process reads the reported messages, then the others
 * with blocking recv in a fixed order.  Each child exits with a bit mask of
 * what its select reported; P0 reaps them and prints
 *     w: w2
 *     x: x1 x2
 *     y: y1 y3
 * (the names of the messages each select reported).
 */
#include "common.h" /* the helpers every test program shares */

#define MSG 2

/* Listening sockets and their ports, indexed by channel. */
enum { C12, C32, C01, C03, C13, NCHAN };
static int lfd[NCHAN], port[NCHAN];

static void send_msg(int fd, const char *m)
{
    jitter();
    write_all(fd, m, MSG);
}

static void recv_msg(int fd, const char *want)
{
    char buf[MSG + 1];
    size_t n = recv_waitall(fd, buf, MSG);

    buf[n] = '\0';
    if (n != MSG || memcmp(buf, want, MSG) != 0) {
        fprintf(stderr, "[pid %d] expected %s, got '%s'\n", (int)getpid(),
                want, buf);
        exit(1);
    }
}

/* One select over fds[0..n-1]; reads the reported messages, then the others
 * in order; returns the bit mask of the reported ones. */
static int race(const int *fds, const char *const *msgs, int n)
{
    int ready[3], i, mask = 0;

    while (!wait_select(fds, n, ready))
        ;
    for (i = 0; i < n; i++) {
        if (ready[i]) {
            recv_msg(fds[i], msgs[i]);
            mask |= 1 << i;
        }
    }
    for (i = 0; i < n; i++) {
        if (!(mask & (1 << i)))
            recv_msg(fds[i], msgs[i]);
    }
    return mask;
}

static void close_all(const int *fds, int n)
{
    int i;

    for (i = 0; i < n; i++)
        close_or_die(fds[i]);
}

static void p1(void)
{
    int c12 = connect_to(port[C12]);
    int c13 = connect_to(port[C13]);
    int a01 = accept_one(lfd[C01]);
    int fds[2], mask;
    static const char *const msgs[2] = {"w1", "w2"};

    send_msg(c12, "x1");
    send_msg(c13, "y3");
    recv_msg(c12, "a.");
    fds[0] = a01;
    fds[1] = c12;
    mask = race(fds, msgs, 2);
    fds[0] = c12;
    fds[1] = c13;
    close_all(fds, 2);
    close(a01);
    exit(mask);
}

static void p2(void)
{
    int a12 = accept_one(lfd[C12]);
    int a32 = accept_one(lfd[C32]);
    int fds[2] = {a12, a32}, mask;
    static const char *const msgs[2] = {"x1", "x2"};

    mask = race(fds, msgs, 2);
    send_msg(a12, "a.");
    send_msg(a32, "y2");
    send_msg(a12, "w2");
    close_all(fds, 2);
    exit(mask);
}

static void p3(void)
{
    int c32 = connect_to(port[C32]);
    int a13 = accept_one(lfd[C13]);
    int a03 = accept_one(lfd[C03]);
    int fds[3] = {a03, c32, a13}, mask;
    static const char *const msgs[3] = {"y1", "y2", "y3"};

    send_msg(c32, "x2");
    mask = race(fds, msgs, 3);
    close_all(fds, 3);
    exit(mask);
}

static void print_mask(const char *race_name, int mask, const char *const *msgs, int n)
{
    int i;

    printf("%s:", race_name);
    for (i = 0; i < n; i++) {
        if (mask & (1 << i))
            printf(" %s", msgs[i]);
    }
    printf("\n");
}

int main(void)
{
    static const char *const w[2] = {"w1", "w2"}, *const x[2] = {"x1", "x2"},
                             *const y[3] = {"y1", "y2", "y3"};
    pid_t pid[3];
    int i, c01, c03, status[3];
    void (*body[3])(void) = {p1, p2, p3};

    setvbuf(stdout, NULL, _IOLBF, 0);
    for (i = 0; i < NCHAN; i++)
        lfd[i] = bind_any(&port[i], 1);
    i = fork_clients(-1, 3, pid); /* -1: the children keep the listeners open */
    if (i > 0) {
        jitter_init();
        body[i - 1]();
    }
    jitter_init();
    c01 = connect_to(port[C01]);
    c03 = connect_to(port[C03]);
    send_msg(c01, "w1");
    send_msg(c03, "y1");
    for (i = 0; i < 3; i++)
        status[i] = wait_status(pid[i]);
    if (close(c01) < 0 || close(c03) < 0)
        die("close");
    print_mask("w", status[0], w, 2);
    print_mask("x", status[1], x, 2);
    print_mask("y", status[2], y, 3);
    return 0;
}
