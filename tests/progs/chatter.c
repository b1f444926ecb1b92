/*
 * chatter [CLIENTS [ROUNDS [stream]]]: a server, its children and their children, talking over
 * TCP until they are done or killed (issue #11: faults and kills as tests).
 *
 * The root listens on 127.0.0.1 and forks CLIENTS (default 2) children; each child forks one
 * grandchild, and child and grandchild each connect and send ROUNDS (default 300) messages of
 * 16 bytes ("c<id> <n>", TCP_NODELAY). In echo mode each message waits for its echo; with
 * "stream" the clients send without waiting (then shut down their side and wait for the
 * server's answer to the end of their stream) and the server reads up to 4 KiB at a time. The
 * server accepts every connection first, then loops on poll(); every 100 messages (echo) or
 * 1600 bytes (stream) it writes "chatter: N messages" to stderr, which a test awaits before it
 * kills something. It tolerates any of its peers dying (a connection that fails or ends is
 * closed), and a client whose server is gone exits 1, so that every kill ends the program.
 * The root reaps its children and prints "chatter: N messages from C connections".
 */
#include "common.h" /* the helpers every test program shares */

#define MSG 16
#define MAXCONN 64
#define PROGRESS 100

static int stream_mode;

/* One client: connects and sends `rounds` messages (each echoed back unless streaming). */
static void chat(int port, int id, int rounds)
{
    char msg[MSG], back[MSG];
    int fd = connect_to(port), j;

    nodelay(fd);
    for (j = 0; j < rounds; j++) {
        memset(msg, '.', MSG);
        snprintf(msg, MSG, "c%d %d", id, j);
        write_all(fd, msg, MSG);
        if (!stream_mode && (recv_all(fd, back, MSG) != MSG || memcmp(msg, back, MSG) != 0))
            fail("client: the server went away");
    }
    if (stream_mode) {
        /* Stay until the server has read everything: it answers the end of the stream. */
        if (shutdown(fd, SHUT_WR) < 0)
            die("shutdown");
        if (recv_all(fd, back, MSG) != MSG)
            fail("client: the server went away");
    }
    close_or_die(fd);
}

/* A child: forks a grandchild, both chat, the child reaps the grandchild. */
static void child(int port, int n, int rounds)
{
    pid_t grandchild = fork_or_die();

    if (grandchild == 0) {
        chat(port, 2 * n, rounds);
        exit(0);
    }
    chat(port, 2 * n - 1, rounds);
    waitpid(grandchild, NULL, 0);
    exit(0);
}

/* Serves connection `fd` once it is readable: its number of whole messages (0: it ended). */
static int serve(int fd)
{
    char buf[4096];
    ssize_t n;
    size_t got = 0;

    if (stream_mode) {
        n = recv(fd, buf, sizeof buf, 0);
        if (n == 0) {
            memset(buf, '.', MSG);
            send(fd, buf, MSG, MSG_NOSIGNAL);
        }
        return n > 0 ? (int)n : 0;
    }
    while (got < MSG) {
        n = recv(fd, buf + got, MSG - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        got += (size_t)n;
    }
    return send(fd, buf, MSG, MSG_NOSIGNAL) == MSG ? MSG : 0;
}

int main(int argc, char **argv)
{
    int clients = argc > 1 ? atoi(argv[1]) : 2, rounds = argc > 2 ? atoi(argv[2]) : 300;
    int port, lfd, n, i, open, nconn;
    long bytes = 0, shown = 0;
    struct pollfd p[MAXCONN];
    pid_t pids[MAXCONN];

    stream_mode = argc > 3 && strcmp(argv[3], "stream") == 0;
    if (clients < 1 || 2 * clients > MAXCONN)
        fail("usage: chatter [CLIENTS (1..32) [ROUNDS [stream]]]");
    program_start();
    lfd = bind_any(&port, 1);
    n = fork_clients(lfd, clients, pids);
    if (n)
        child(port, n, rounds);
    nconn = 2 * clients;
    for (i = 0; i < nconn; i++) {
        p[i].fd = accept_one(lfd);
        p[i].events = POLLIN;
    }
    close_or_die(lfd);
    for (open = nconn; open > 0;) {
        if (poll(p, (nfds_t)nconn, -1) < 0) {
            if (errno == EINTR)
                continue;
            die("poll");
        }
        for (i = 0; i < nconn; i++) {
            int got;

            if (p[i].fd < 0 || p[i].revents == 0)
                continue;
            got = serve(p[i].fd);
            if (got == 0) {
                close_or_die(p[i].fd);
                p[i].fd = -1;
                open--;
                continue;
            }
            bytes += got;
            while (bytes / MSG >= shown + PROGRESS) {
                shown += PROGRESS;
                fprintf(stderr, "chatter: %ld messages\n", shown);
            }
        }
    }
    while (wait(NULL) > 0)
        ;
    printf("chatter: %ld messages from %d connections\n", bytes / MSG, nconn);
    return 0;
}
