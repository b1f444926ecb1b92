/*
 * unix_dgram MODE DIR: a Unix datagram server and 4 forked clients; which datagram comes first
 * is the race.
 *
 * The server's socket is DIR/server. MODE:
 *     named    the server binds first; each client binds its own DIR/cI, sends "cI" to the
 *              server with sendto and waits for the answer "ack I <n>" (n: the server's count
 *              of datagrams so far), which it checks. The server answers each datagram to its
 *              sender's address.
 *     connect  the server binds after a random delay; each client connects its unbound
 *              socket to DIR/server, retrying while the path is missing or refused (a short
 *              random pause between tries), then sends "cI rK" (K: its failed tries). No
 *              answers (an unbound sender has no address).
 * The server takes the 4 datagrams, reaps its clients and prints
 *     order: I J K L                   (connect: "order: c3 r2, c1 r0, …")
 */
#include "common.h"
#include <sys/un.h>

#define N 4

static void unix_addr(struct sockaddr_un *a, const char *dir, const char *name)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    snprintf(a->sun_path, sizeof a->sun_path, "%s/%s", dir, name);
}

static int bound(const char *dir, const char *name)
{
    struct sockaddr_un a;
    int u = socket(AF_UNIX, SOCK_DGRAM, 0);

    if (u < 0)
        die("socket");
    unix_addr(&a, dir, name);
    unlink(a.sun_path);
    if (bind(u, (struct sockaddr *)&a, sizeof a) < 0)
        die("bind");
    return u;
}

static void named_client(const char *dir, int id)
{
    struct sockaddr_un srv;
    char name[16], msg[16], want[32], got[32];
    ssize_t n;
    int u, len;

    client_start();
    snprintf(name, sizeof name, "c%d", id);
    u = bound(dir, name);
    unix_addr(&srv, dir, "server");
    len = snprintf(msg, sizeof msg, "c%d", id);
    if (sendto(u, msg, len, 0, (struct sockaddr *)&srv, sizeof srv) != len)
        die("sendto");
    n = recv(u, got, sizeof got - 1, 0);
    if (n < 0)
        die("recv");
    got[n] = 0;
    snprintf(want, sizeof want, "ack %d ", id);
    if (strncmp(got, want, strlen(want)) != 0)
        fail("not my answer");
    exit(0);
}

static void connect_client(const char *dir, int id)
{
    struct sockaddr_un srv;
    char msg[32];
    int u, len, tries = 0;

    client_start();
    u = socket(AF_UNIX, SOCK_DGRAM, 0);
    if (u < 0)
        die("socket");
    unix_addr(&srv, dir, "server");
    while (connect(u, (struct sockaddr *)&srv, sizeof srv) < 0) {
        if (errno != ENOENT && errno != ECONNREFUSED)
            die("connect");
        tries++;
        usleep(1000 + rand() % 3000);
    }
    len = snprintf(msg, sizeof msg, "c%d r%d", id, tries);
    if (send(u, msg, len, 0) != len)
        die("send");
    exit(0);
}

int main(int argc, char **argv)
{
    const char *mode, *dir;
    char buf[64];
    pid_t pids[N];
    int u = -1, i, id, named;

    program_start();
    if (argc < 3)
        fail("usage: unix_dgram named|connect DIR");
    mode = argv[1];
    dir = argv[2];
    named = strcmp(mode, "named") == 0;
    if (named)
        u = bound(dir, "server");
    else {
        struct sockaddr_un a;

        unix_addr(&a, dir, "server");
        unlink(a.sun_path);
    }
    if ((id = fork_clients(-1, N, pids)) != 0) {
        if (u >= 0)
            close_or_die(u);
        srand(getpid());
        if (named)
            named_client(dir, id);
        connect_client(dir, id);
    }
    if (!named) {
        jitter();
        u = bound(dir, "server");
    }
    printf("order:");
    for (i = 0; i < N; i++) {
        struct sockaddr_un from;
        socklen_t flen = sizeof from;
        ssize_t n = recvfrom(u, buf, sizeof buf - 1, 0, (struct sockaddr *)&from, &flen);

        if (n < 0)
            die("recvfrom");
        buf[n] = 0;
        if (named) {
            char ack[32];
            int len = snprintf(ack, sizeof ack, "ack %s %d", buf + 1, i + 1);

            if (sendto(u, ack, len, 0, (struct sockaddr *)&from, flen) != len)
                die("sendto");
            printf(" %s", buf + 1);
        } else
            printf("%s %s", i ? "," : "", buf);
    }
    printf("\n");
    wait_all_ok(pids, N);
    return 0;
}
