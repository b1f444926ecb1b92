/*
 * randprog SEED: a random message-passing program, generated from SEED.
 *
 * The program's structure (number of actors, channels, rounds, how many
 * messages each actor sends on each channel in each round, which receive-
 * from-any call it uses, which probes it publishes where) depends only on
 * SEED; only timing (DDBX_JITTER) varies between runs, and with it the order
 * in which the actors accept their peers and receive their messages.  It is
 * the test program of the halting property test (ddbx/tests/halting_property.rs).
 *
 * k = 2..5 actors (or `randprog SEED ACTORS`: that many, up to 64, with sparser extra
 * channels, as a load for benchmarks).  The root (actor 0) creates one listening TCP socket per
 * actor on 127.0.0.1 (kernel-chosen port), then forks actors 1..k-1 in order
 * (no exec).  The channels are a random connected set of pairs i<j.  Each
 * actor first connects to every higher-numbered peer it has a channel with
 * (in increasing order) and sends a 16-byte handshake with its id, then
 * accepts its lower-numbered peers (it knows how many) and reads their
 * handshakes to tell them apart.  Then R = 1..3 rounds: each actor sends
 * 0..2 messages of 16 bytes on each of its channels (jitter before each
 * send), then receives exactly the messages sent to it in this round, one at
 * a time: poll(), select() or epoll_wait() (chosen per actor by SEED) over the
 * channels that still owe messages in this round, then one
 * recv(MSG_WAITALL) of 16 bytes from the first reported one.  FIFO channels
 * keep the rounds apart.  Probes (ddbx.h): ddbx_set("x", v) and
 * ddbx_set("y", round) before sends and after receives, where SEED says
 * (sometimes x is the sender's actor number, so its value depends on the
 * race).  No send ever blocks (a round sends at most 32 bytes per channel),
 * and every actor sends all of a round before receiving, so the program
 * cannot deadlock.
 *
 * Drawn last from SEED (not with ACTORS): some actors are forked through a relay, a
 * process that only forks the actor and waits for it (no socket event: issue #10 class 7's
 * "intermediate processes that only fork", which a halting replay must hold at its cut too).
 *
 * How an actor connects, accepts and ends also comes from SEED (drawn after everything
 * above, so that a seed's rounds are what they were before these were added): a connect is
 * blocking, or non-blocking (EINPROGRESS, poll for POLLOUT, getsockopt(SO_ERROR), as client
 * libraries do); an accept may first wait for the listening socket to be readable with the
 * actor's mux; and after the rounds an actor ends its channels in one of three ways: it
 * shuts down its sending side of every channel (SHUT_WR) and then waits with its mux for the
 * end of each peer's stream (a 0-byte read; with epoll, sometimes registered with
 * EPOLLRDHUP), then closes; or it closes them at once; or (not the root) it exits without
 * closing them.  Peers see these ends as readiness and 0-byte reads (issue #10, classes 3
 * and 7).
 *
 * `randprog SEED log`: the same program, and then (drawn last) a log that the actors share,
 * a regular file opened with O_APPEND by the root before the forks and unlinked at once:
 * after each round's sends some actors append a line to it (not an event: a write into a
 * file that several processes write takes a turn), and after each round's receives some
 * read all of it (through their own open of /proc/self/fd/N) and publish how many lines
 * they saw as probe z, which depends on the race between the writers and the reader (a
 * read of a shared file needs the writes it saw: a halted state that has the read has
 * them).
 *
 * At the end every actor exits 0; the root reaps the
 * children and prints one line per actor with the senders of its messages in
 * the order it received them, actors numbered 1..k (1: the root, i+1: the
 * root's i-th child):
 *     actor 1 got: 3 2 3
 *     actor 2 got: 1
 * (These are not ddbx's ids: ddbx numbers the children in the order it sees
 * them start, which depends on timing; `ddbx show` of the root maps its Fork
 * events to ids.)  alarm(20) in every process is a safety net.
 */
#include "common.h" /* the helpers every test program shares */
#include <sys/mman.h>
#include "ddbx.h"

#define MAXA 64       /* actors with `randprog SEED ACTORS` */
#define MAXA_RANDOM 5 /* actors of a program made from SEED alone */
#define MAXR 3
#define MSG 16
#define MAXOPS (2 * (MAXA - 1)) /* sends (or receives) of one actor in one round */
#define OPS_RANDOM (2 * (MAXA_RANDOM - 1)) /* probe slots per actor and round, SEED alone */
#define MAXGOT (MAXR * MAXOPS)

enum mux { MUX_POLL, MUX_SELECT, MUX_EPOLL };
enum probe { PR_NONE, PR_X, PR_Y, PR_X_SENDER };
enum ending { END_SHUT, END_CLOSE, END_EXIT };

/* The program, as generated from SEED (identical in every process: it is made before
 * the first fork). */
static int nact, nrounds, nops;
static int chan[MAXA][MAXA];          /* symmetric: a channel between a and b */
static int cnt[MAXR][MAXA][MAXA];     /* messages a sends to b in round r */
static int mux[MAXA];
static int send_probe[MAXA][MAXR][MAXOPS + 1]; /* before send i; [nsends]: after the sends */
static int send_val[MAXA][MAXR][MAXOPS + 1];
static int recv_probe[MAXA][MAXR][MAXOPS];     /* after receive i */
static int recv_val[MAXA][MAXR][MAXOPS];
static int ending[MAXA];      /* how the actor ends its channels */
static int relay[MAXA];       /* forked by a relay process that only forks it and waits */
static int rdhup[MAXA];       /* epoll: EPOLLRDHUP too while waiting for the ends */
static int nb_connect[MAXA];  /* non-blocking connects */
static int listen_wait[MAXA]; /* a readiness wait on the listening socket before each accept */
static int log_writes[MAXA];  /* `log`: a line into the log after each round's sends */
static int log_reads[MAXA];   /* `log`: z = the log's lines after each round's receives */
static int logfd = -1;        /* the log, O_APPEND (`log` only) */

/* What each actor received, in order (shared with the root, which prints it). */
struct got {
    int n[MAXA];
    int from[MAXA][MAXGOT];
};
static struct got *got;

static int lfd[MAXA], lport[MAXA];
static int peer[MAXA]; /* this actor's fd for each peer, -1 if none */

static unsigned long long rng_state;

/* splitmix64: the generator of the program's structure. */
static unsigned long long rng_next(void)
{
    unsigned long long z = (rng_state += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int rng_below(int n)
{
    return (int)(rng_next() % (unsigned long long)n);
}

/* A probe slot: none most of the time, else x = small value or y = round. */
static void gen_probe(int *kind, int *val, int after_recv)
{
    int d = rng_below(12);

    *val = rng_below(5);
    if (d < 6)
        *kind = PR_NONE;
    else if (d < 9)
        *kind = PR_X;
    else if (d < 11)
        *kind = PR_Y;
    else
        *kind = after_recv ? PR_X_SENDER : PR_X;
}

/* actors > 0: that many actors, sparser extra channels (a load for benchmarks); else the
 * number of actors comes from SEED too (the property test's programs); with_log: who writes
 * and who reads the shared log, drawn after everything else. */
static void generate(unsigned long long seed, int actors, int with_log)
{
    int a, b, r, i;

    rng_state = seed * 0x2545f4914f6cdd1dULL + 1;
    nact = actors > 0 ? actors : 2 + rng_below(MAXA_RANDOM - 1);
    nops = actors > 0 ? 2 * (actors - 1) : OPS_RANDOM;
    nrounds = 1 + rng_below(MAXR);
    /* A random spanning tree (connected), plus random extra channels. */
    for (b = 1; b < nact; b++) {
        a = rng_below(b);
        chan[a][b] = chan[b][a] = 1;
    }
    for (a = 0; a < nact; a++) {
        for (b = a + 1; b < nact; b++) {
            if (!chan[a][b] && rng_below(actors > 0 ? 16 : 3) == 0)
                chan[a][b] = chan[b][a] = 1;
        }
    }
    for (r = 0; r < nrounds; r++) {
        for (a = 0; a < nact; a++) {
            for (b = 0; b < nact; b++) {
                if (chan[a][b])
                    cnt[r][a][b] = rng_below(3);
            }
        }
    }
    for (a = 0; a < nact; a++) {
        mux[a] = rng_below(3);
        for (r = 0; r < nrounds; r++) {
            for (i = 0; i <= nops; i++)
                gen_probe(&send_probe[a][r][i], &send_val[a][r][i], 0);
            for (i = 0; i < nops; i++)
                gen_probe(&recv_probe[a][r][i], &recv_val[a][r][i], 1);
        }
    }
    for (a = 0; a < nact; a++) {
        /* The root waits for its children before it exits: it cannot leave its ends open. */
        ending[a] = rng_below(a == 0 ? 2 : 3);
        rdhup[a] = rng_below(2);
        nb_connect[a] = rng_below(2);
        listen_wait[a] = rng_below(2);
    }
    /* Drawn last, so that a seed's actors are what they were before relays were added. */
    for (a = 1; a < nact && actors == 0; a++)
        relay[a] = rng_below(3) == 0;
    for (a = 0; a < nact && with_log; a++) {
        log_writes[a] = rng_below(3) != 0;
        log_reads[a] = rng_below(2);
    }
}

/* `log`: the shared log, made before the forks and unlinked at once (nothing is left
 * behind when a halted run is killed). */
static void make_log(void)
{
    char path[] = "/tmp/randprog-log-XXXXXX";
    int fd = mkstemp(path);

    if (fd < 0)
        die("mkstemp");
    if ((logfd = open(path, O_WRONLY | O_APPEND)) < 0)
        die("open");
    if (unlink(path) < 0)
        die("unlink");
    /* fd stays open (as the file's read end for /proc/self/fd). */
    if (dup2(fd, logfd + 1) < 0)
        die("dup2");
    close(fd);
}

static void append_to_log(int me, int r)
{
    char line[32];
    int n = snprintf(line, sizeof line, "actor %d round %d\n", me + 1, r + 1);

    if (write(logfd, line, (size_t)n) != n)
        die("write");
}

/* The lines in the log now, read through an open file of this process's own. */
static int lines_in_log(void)
{
    char path[64], buf[4096];
    int fd, lines = 0, i;
    ssize_t n;

    snprintf(path, sizeof path, "/proc/self/fd/%d", logfd + 1);
    if ((fd = open(path, O_RDONLY)) < 0)
        die("open");
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        for (i = 0; i < n; i++)
            lines += buf[i] == '\n';
    }
    if (n < 0)
        die("read");
    close(fd);
    return lines;
}

static void probe(int kind, int val, int round, int sender)
{
    switch (kind) {
    case PR_X:
        ddbx_set("x", val);
        break;
    case PR_Y:
        ddbx_set("y", round + 1);
        break;
    case PR_X_SENDER:
        ddbx_set("x", sender + 1);
        break;
    default:
        break;
    }
}

static void send_msg(int fd, const char *text)
{
    char buf[MSG];

    if (strlen(text) >= MSG)
        fail("message too long");
    memset(buf, 0, sizeof buf);
    memcpy(buf, text, strlen(text));
    write_all(fd, buf, sizeof buf);
}

/* One 16-byte message into buf (at least MSG bytes; NUL-terminated inside). */
static void recv_msg(int fd, char *buf)
{
    if (recv_waitall(fd, buf, MSG) != MSG)
        fail("short message");
    buf[MSG - 1] = '\0';
}

/* The peer (actor number) whose channel is ready: waits with this actor's mux over the
 * peers that still owe messages (owed[b] > 0). */
static int wait_ready(int me, const int *owed, int epfd)
{
    int fds[MAXA], ready[MAXA], b;

    for (b = 0; b < nact; b++)
        fds[b] = owed[b] > 0 ? peer[b] : -1;
    for (;;) {
        if (mux[me] == MUX_EPOLL) {
            struct epoll_event evs[MAXA];
            int r = wait_epoll(epfd, evs, MAXA), k;

            for (k = 0; k < r; k++) {
                for (b = 0; b < nact; b++) {
                    if (owed[b] > 0 && peer[b] == evs[k].data.fd)
                        return b;
                }
            }
        } else if ((mux[me] == MUX_POLL ? wait_poll : wait_select)(fds, nact, ready)) {
            for (b = 0; b < nact; b++) {
                if (ready[b])
                    return b;
            }
        }
    }
}

static void epoll_watch(int epfd, int op, int fd, uint32_t events)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof ev);
    ev.events = events;
    ev.data.fd = fd;
    if (epoll_ctl(epfd, op, fd, &ev) < 0)
        die("epoll_ctl");
}

static void epoll_set(int epfd, int op, int fd)
{
    epoll_watch(epfd, op, fd, EPOLLIN);
}

/* Waits with this actor's mux until the listening socket fd is readable (a connection). */
static void wait_listening(int me, int fd, int epfd)
{
    int fds[1] = {fd}, ready[1];

    if (mux[me] == MUX_EPOLL) {
        struct epoll_event ev;

        epoll_set(epfd, EPOLL_CTL_ADD, fd);
        while (wait_epoll(epfd, &ev, 1) != 1 || ev.data.fd != fd)
            ;
        epoll_set(epfd, EPOLL_CTL_DEL, fd);
        return;
    }
    while (!(mux[me] == MUX_POLL ? wait_poll : wait_select)(fds, 1, ready) || !ready[0])
        ;
}

/* A connection to port on 127.0.0.1: blocking, or (nb_connect) non-blocking and learnt as
 * client libraries do: poll for POLLOUT, then getsockopt(SO_ERROR). */
static int connect_peer(int me, int port)
{
    struct sockaddr_in a;
    struct pollfd p;
    int fd, err = 0;
    socklen_t len = sizeof err;

    if (!nb_connect[me])
        return connect_to(port);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        die("socket");
    set_nonblock(fd);
    fill_addr(&a, port);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS)
        die("connect");
    p.fd = fd;
    p.events = POLLOUT;
    while (poll(&p, 1, -1) < 0) {
        if (errno != EINTR)
            die("poll");
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err != 0)
        fail("non-blocking connect failed");
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
        die("fcntl");
    return fd;
}

/* The end of the rounds (see the top of the file): shuts down, closes or leaves the
 * channels; with END_SHUT, waits for the end of every peer's stream first. */
static void end_channels(int me, int epfd)
{
    int open[MAXA], left = 0, b;
    char c;

    if (ending[me] == END_SHUT) {
        for (b = 0; b < nact; b++) {
            open[b] = peer[b] >= 0;
            left += open[b];
            if (open[b] && shutdown(peer[b], SHUT_WR) < 0)
                die("shutdown");
            if (open[b] && epfd >= 0)
                epoll_watch(epfd, EPOLL_CTL_ADD, peer[b], EPOLLIN | (rdhup[me] ? EPOLLRDHUP : 0));
        }
        while (left > 0) {
            b = wait_ready(me, open, epfd);
            if (read_retry(peer[b], &c, 1) != 0)
                fail("data after the rounds");
            if (epfd >= 0)
                epoll_set(epfd, EPOLL_CTL_DEL, peer[b]);
            open[b] = 0;
            left--;
        }
    }
    if (ending[me] == END_EXIT)
        return;
    for (b = 0; b < nact; b++) {
        if (peer[b] >= 0 && close(peer[b]) < 0)
            die("close");
    }
}

static void actor(int me)
{
    char buf[64]; /* a message (MSG bytes) or the text of one */
    int a, b, r, lower = 0, epfd = -1;

    for (b = 0; b < nact; b++)
        peer[b] = -1;
    for (a = 0; a < nact; a++) {
        if (a != me && close(lfd[a]) < 0)
            die("close");
    }
    /* Connect to the higher peers, then accept the lower ones. */
    for (b = me + 1; b < nact; b++) {
        if (!chan[me][b])
            continue;
        jitter();
        peer[b] = connect_peer(me, lport[b]);
        snprintf(buf, sizeof buf, "hello %d", me);
        send_msg(peer[b], buf);
    }
    for (b = 0; b < me; b++)
        lower += chan[me][b];
    if (mux[me] == MUX_EPOLL && (epfd = epoll_create1(0)) < 0)
        die("epoll_create1");
    while (lower-- > 0) {
        int fd, who;

        if (listen_wait[me])
            wait_listening(me, lfd[me], epfd);
        fd = accept_one(lfd[me]);

        recv_msg(fd, buf);
        if (sscanf(buf, "hello %d", &who) != 1 || who < 0 || who >= me ||
            !chan[me][who] || peer[who] >= 0)
            fail("bad handshake");
        peer[who] = fd;
    }
    if (close(lfd[me]) < 0)
        die("close");

    for (r = 0; r < nrounds; r++) {
        int owed[MAXA], total = 0, i = 0, m;

        for (b = 0; b < nact; b++) {
            for (m = 0; m < cnt[r][me][b]; m++, i++) {
                probe(send_probe[me][r][i], send_val[me][r][i], r, -1);
                jitter();
                snprintf(buf, sizeof buf, "r%d from %d", r, me);
                send_msg(peer[b], buf);
            }
        }
        probe(send_probe[me][r][i], send_val[me][r][i], r, -1);
        if (logfd >= 0 && log_writes[me])
            append_to_log(me, r);
        for (b = 0; b < nact; b++) {
            owed[b] = chan[me][b] ? cnt[r][b][me] : 0;
            total += owed[b];
            if (owed[b] > 0 && epfd >= 0)
                epoll_set(epfd, EPOLL_CTL_ADD, peer[b]);
        }
        for (i = 0; i < total; i++) {
            int rr, from;

            b = wait_ready(me, owed, epfd);
            recv_msg(peer[b], buf);
            if (sscanf(buf, "r%d from %d", &rr, &from) != 2 || rr != r || from != b)
                fail("unexpected message");
            got->from[me][got->n[me]++] = b + 1;
            if (--owed[b] == 0 && epfd >= 0)
                epoll_set(epfd, EPOLL_CTL_DEL, peer[b]);
            probe(recv_probe[me][r][i], recv_val[me][r][i], r, b);
        }
        if (logfd >= 0 && log_reads[me])
            ddbx_set("z", lines_in_log());
    }
    end_channels(me, epfd);
    if (epfd >= 0 && close(epfd) < 0)
        die("close");
}

int main(int argc, char **argv)
{
    pid_t pids[MAXA];
    char *end;
    unsigned long long seed;
    int a, i, actors = 0, with_log = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 2 && argc != 3)
        fail("usage: randprog SEED [ACTORS | log]");
    seed = strtoull(argv[1], &end, 10);
    if (*end != '\0' || end == argv[1])
        fail("usage: randprog SEED (a number) [ACTORS | log]");
    if (argc == 3 && strcmp(argv[2], "log") == 0) {
        with_log = 1;
    } else if (argc == 3) {
        actors = (int)strtol(argv[2], &end, 10);
        if (*end != '\0' || actors < 2 || actors > MAXA)
            fail("usage: randprog SEED [ACTORS (2 to 64)]");
    }
    alarm(20);
    generate(seed, actors, with_log);
    if (with_log)
        make_log();
    got = mmap(NULL, sizeof *got, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (got == MAP_FAILED)
        die("mmap");
    memset(got, 0, sizeof *got);
    for (a = 0; a < nact; a++)
        lfd[a] = bind_any(&lport[a], 1);
    for (a = 1; a < nact; a++) {
        pids[a] = fork_or_die();
        if (pids[a] == 0 && relay[a]) {
            /* A process with no socket event: it forks the actor, waits for it, exits. */
            pid_t p = fork_or_die();

            if (p != 0) {
                wait_ok(p);
                _exit(0);
            }
        }
        if (pids[a] == 0) {
            alarm(20);
            jitter_init();
            actor(a);
            exit(0);
        }
    }
    jitter_init();
    actor(0);
    for (a = 1; a < nact; a++)
        wait_ok(pids[a]);
    for (a = 0; a < nact; a++) {
        printf("actor %d got:", a + 1);
        for (i = 0; i < got->n[a]; i++)
            printf(" %d", got->from[a][i]);
        printf("\n");
    }
    return 0;
}
