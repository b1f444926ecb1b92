/*
 * ipv6_race: accept race and receive-from-any over TCP on ::1 (IPv6 loopback).
 *
 * The parent listens on [::1]:0 (kernel-chosen port) and forks 3 client
 * children.  If the machine has no IPv6 loopback (socket() or bind() fails
 * with EAFNOSUPPORT / EADDRNOTAVAIL / EPROTONOSUPPORT) it prints
 *     ipv6 unavailable
 * and exits 0 before forking.  Each child sleeps a
 * random jitter, connects, sends "client <i>\n", waits for "ok\n", then sends
 * 3 messages "c<i> m<j>\n" with jitter in between and closes.  The parent
 * accepts 3 times (reading each client's first line and replying "ok\n"),
 * then reads from whichever connection poll() reports readable until all
 * three reached EOF.  It reaps the children and prints
 *     accepted: 2 1 3
 *     read from conn1: c2 m0\n
 *     ...
 *     eof on conn3
 * (connK = the K-th accepted connection).
 * Race: the accept order, which connection poll() reports, how the
 * messages are split into reads (varies natively with DDBX_JITTER=5).
 */
#include "common.h" /* the helpers every test program shares */

#define NCLIENTS 3

static void fill_v6(struct sockaddr_in6 *a, int port)
{
    memset(a, 0, sizeof *a);
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_loopback;
    a->sin6_port = htons((unsigned short)port);
}

int main(void)
{
    struct sockaddr_in6 a;
    socklen_t alen = sizeof a;
    int lfd, i, port, conn[NCLIENTS], order[NCLIENTS];
    pid_t pids[NCLIENTS];

    program_start();
    fill_v6(&a, 0);
    lfd = listen_at(AF_INET6, (struct sockaddr *)&a, sizeof a);
    if (lfd < 0 &&
        (errno == EAFNOSUPPORT || errno == EPROTONOSUPPORT || errno == EADDRNOTAVAIL)) {
        printf("ipv6 unavailable\n");
        return 0;
    }
    if (lfd < 0)
        die("socket/bind");
    if (getsockname(lfd, (struct sockaddr *)&a, &alen) < 0)
        die("getsockname");
    port = ntohs(a.sin6_port);
    i = fork_clients(lfd, NCLIENTS, pids);
    if (i > 0) {
        client_start();
        fill_v6(&a, port);
        numbered_client(connect_at(AF_INET6, (struct sockaddr *)&a, sizeof a), i, 1);
    }
    for (i = 0; i < NCLIENTS; i++)
        conn[i] = accept_hello(lfd, NCLIENTS, &order[i]);
    close_or_die(lfd);
    read_any_until_eof(conn, NCLIENTS, wait_poll);
    wait_all_ok(pids, NCLIENTS);
    print_order("accepted:", order, NCLIENTS);
    print_log();
    return 0;
}
