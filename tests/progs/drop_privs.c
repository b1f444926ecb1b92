/*
 * drop_privs: a server that binds as root, then drops to an unprivileged user before it
 * serves, as nginx, mosquitto and postgres do (issue #10, class 8).
 *
 *     drop_privs [N [exec]]
 *
 * The parent listens on 127.0.0.1 (kernel-chosen port) as root, then calls setgroups(0),
 * setgid(65534) and setuid(65534) (nobody). Only then does it fork N client children
 * (default 3): each sleeps a random jitter, connects, sends "client <i>\n" and waits for
 * "ok\n". The parent accepts N times and replies "ok\n" to each. With `exec`, the parent first
 * re-executes itself as nobody (`drop_privs N served FD`, the listening socket kept open across
 * the exec), so the new image must load the preload and join the session as that user.
 * After reaping all children the parent prints
 *     uid 65534 accepted: 2 3 1
 * Race: the accept order (varies natively with DDBX_JITTER=5). Must be started as root.
 */
#include "common.h"
#include <grp.h>

#define MAX_CLIENTS 64
#define NOBODY 65534

/* Gives up root for good: supplementary groups, then the group, then the user. */
static void drop_to_nobody(void)
{
    if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
        die("drop privileges");
    if (getuid() != NOBODY || geteuid() != NOBODY || setuid(0) == 0)
        fail("drop_privs: still privileged after setuid");
}

/* Forks the clients, accepts them on lfd, prints the order. */
static int serve(int lfd, int port, int n)
{
    int order[MAX_CLIENTS], i, fd;
    pid_t pids[MAX_CLIENTS];

    i = fork_clients(lfd, n, pids);
    if (i > 0) {
        client_start();
        fd = connect_to(port);
        client_hello(fd, i);
        close_or_die(fd);
        exit(0);
    }
    for (i = 0; i < n; i++)
        close_or_die(accept_hello(lfd, n, &order[i]));
    close_or_die(lfd);
    wait_all_ok(pids, n);
    printf("uid %d ", (int)getuid());
    print_order("accepted:", order, n);
    return 0;
}

int main(int argc, char **argv)
{
    int n = 3, port, lfd;
    char nbuf[16], fdbuf[16];
    struct sockaddr_in a;
    socklen_t len = sizeof a;

    if (argc > 1) {
        n = atoi(argv[1]);
        if (n < 1 || n > MAX_CLIENTS)
            fail("usage: drop_privs [N (1..64) [exec]]");
    }
    program_start();
    if (argc > 3 && strcmp(argv[2], "served") == 0) {
        /* The re-executed image: already nobody, the listening socket inherited. */
        lfd = atoi(argv[3]);
        if (getsockname(lfd, (struct sockaddr *)&a, &len) < 0)
            die("getsockname");
        return serve(lfd, ntohs(a.sin_port), n);
    }
    if (geteuid() != 0)
        fail("drop_privs: must be started as root");
    lfd = bind_any(&port, 1);
    drop_to_nobody();
    if (argc > 2 && strcmp(argv[2], "exec") == 0) {
        snprintf(nbuf, sizeof nbuf, "%d", n);
        snprintf(fdbuf, sizeof fdbuf, "%d", lfd);
        execl("/proc/self/exe", argv[0], nbuf, "served", fdbuf, (char *)NULL);
        die("execl");
    }
    return serve(lfd, port, n);
}
