/*
 * udp_race MODE: a UDP server and 4 forked clients; which datagram comes first is the race.
 *
 * The root binds a UDP socket to 127.0.0.1 (kernel-chosen port) and forks 4 clients. Each
 * client waits a random time, sends "cI" from its own UDP socket and waits for the answer
 * "ack I <n>" (n: the server's count of datagrams so far), which it checks; it exits 0 when
 * the answer is its own. The server takes the 4 datagrams, each after a readiness wait, and
 * answers each to its sender's address; then it reaps its clients and prints
 *     order: I J K L
 *     dst: 127.0.0.1 x4              (epoll mode: how many datagrams IP_PKTINFO said came to it)
 *     recvmmsg calls: C              (mmsg mode: how many calls took the 4 datagrams)
 * MODE says how the server waits and receives:
 *     poll   poll, then recvfrom; answers with sendto
 *     epoll  epoll_wait, then recvmsg with IP_PKTINFO (the destination address of each
 *            datagram, as ancillary data); answers with sendmsg
 *     mmsg   select, then recvmmsg of up to 4 with MSG_WAITFORONE (one call may take several
 *            datagrams); answers with sendmmsg, one message each
 *     outside  no clients of its own: prints `port P` first, and takes the 4 datagrams, from
 *            clients outside the session (the test's), as in poll mode
 * The clients use connect + send + recv (poll mode), or sendto + read (the others; they check
 * that the send bound their socket to a port).
 */
#include "common.h"

#define N 4

static void client(int port, int id, int connected)
{
    struct sockaddr_in a;
    char msg[16], want[32], got[32];
    int u, len;
    ssize_t n;

    client_start();
    u = socket(AF_INET, SOCK_DGRAM, 0);
    if (u < 0)
        die("socket");
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    len = snprintf(msg, sizeof msg, "c%d", id);
    if (connected) {
        if (connect(u, (struct sockaddr *)&a, sizeof a) < 0 || send(u, msg, len, 0) != len)
            die("send");
        n = recv(u, got, sizeof got - 1, 0);
    } else {
        socklen_t alen = sizeof a;

        if (sendto(u, msg, len, 0, (struct sockaddr *)&a, sizeof a) != len)
            die("sendto");
        /* The send bound the socket to a port of the kernel's choosing. */
        if (getsockname(u, (struct sockaddr *)&a, &alen) < 0 || a.sin_port == 0)
            fail("not bound after sendto");
        n = read(u, got, sizeof got - 1);
    }
    if (n < 0)
        die("recv");
    got[n] = 0;
    snprintf(want, sizeof want, "ack %d ", id);
    exit(strncmp(got, want, strlen(want)) == 0 ? 0 : 1);
}

/* The id of a client's datagram "cI". */
static int id_of(const char *buf, ssize_t n)
{
    if (n < 2 || buf[0] != 'c')
        fail("not a client's datagram");
    return buf[1] - '0';
}

/* The answer to client `id`, the k-th datagram. */
static int answer(char *out, size_t room, int id, int k)
{
    return snprintf(out, room, "ack %d %d", id, k);
}

static int poll_mode(int u, int *order)
{
    struct sockaddr_in from;
    socklen_t flen;
    struct pollfd p = {.fd = u, .events = POLLIN};
    char buf[64], out[32];
    int k, len;
    ssize_t n;

    for (k = 0; k < N; k++) {
        if (poll(&p, 1, -1) != 1)
            die("poll");
        flen = sizeof from;
        n = recvfrom(u, buf, sizeof buf, 0, (struct sockaddr *)&from, &flen);
        order[k] = id_of(buf, n);
        len = answer(out, sizeof out, order[k], k + 1);
        if (sendto(u, out, len, 0, (struct sockaddr *)&from, flen) != len)
            die("sendto");
    }
    return 0;
}

/* recvmsg with room for an IP_PKTINFO; counts the datagrams sent to 127.0.0.1. */
static ssize_t recv_with_dst(int u, char *buf, size_t room, struct sockaddr_in *from, int *to_lo)
{
    char control[CMSG_SPACE(sizeof(struct in_pktinfo))];
    struct iovec iov = {.iov_base = buf, .iov_len = room};
    struct msghdr m = {
        .msg_name = from,
        .msg_namelen = sizeof *from,
        .msg_iov = &iov,
        .msg_iovlen = 1,
        .msg_control = control,
        .msg_controllen = sizeof control,
    };
    struct cmsghdr *c;
    ssize_t n = recvmsg(u, &m, 0);

    if (n < 0)
        die("recvmsg");
    for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
            struct in_pktinfo pi;

            memcpy(&pi, CMSG_DATA(c), sizeof pi);
            *to_lo += pi.ipi_addr.s_addr == htonl(INADDR_LOOPBACK);
        }
    }
    return n;
}

static int epoll_mode(int u, int *order)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 77}, got;
    struct sockaddr_in from;
    char buf[64], out[32];
    int k, len, ep = epoll_create1(0), to_lo = 0;
    ssize_t n;

    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, u, &ev) < 0)
        die("epoll");
    for (k = 0; k < N; k++) {
        if (epoll_wait(ep, &got, 1, -1) != 1 || got.data.u64 != 77)
            die("epoll_wait");
        n = recv_with_dst(u, buf, sizeof buf, &from, &to_lo);
        order[k] = id_of(buf, n);
        len = answer(out, sizeof out, order[k], k + 1);
        struct iovec iov = {.iov_base = out, .iov_len = len};
        struct msghdr m = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &iov, .msg_iovlen = 1};
        if (sendmsg(u, &m, 0) != len)
            die("sendmsg");
    }
    return to_lo;
}

static int mmsg_mode(int u, int *order)
{
    struct mmsghdr ms[N], outs[N];
    struct iovec iovs[N], out_iovs[N];
    struct sockaddr_in froms[N];
    char bufs[N][64], outb[N][32];
    int k = 0, i, got, ready[1], calls = 0;

    while (k < N) {
        if (wait_select(&u, 1, ready) < 1)
            die("select");
        memset(ms, 0, sizeof ms);
        for (i = 0; i < N; i++) {
            iovs[i] = (struct iovec){.iov_base = bufs[i], .iov_len = sizeof bufs[i]};
            ms[i].msg_hdr = (struct msghdr){.msg_name = &froms[i], .msg_namelen = sizeof froms[i], .msg_iov = &iovs[i], .msg_iovlen = 1};
        }
        got = recvmmsg(u, ms, N - k, MSG_WAITFORONE, NULL);
        if (got < 1)
            die("recvmmsg");
        memset(outs, 0, sizeof outs);
        for (i = 0; i < got; i++) {
            order[k + i] = id_of(bufs[i], ms[i].msg_len);
            out_iovs[i] = (struct iovec){.iov_base = outb[i], .iov_len = answer(outb[i], sizeof outb[i], order[k + i], k + i + 1)};
            outs[i].msg_hdr = (struct msghdr){.msg_name = &froms[i], .msg_namelen = sizeof froms[i], .msg_iov = &out_iovs[i], .msg_iovlen = 1};
        }
        if (sendmmsg(u, outs, got, 0) != got)
            die("sendmmsg");
        k += got;
        calls++;
    }
    return calls;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "poll";
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int u, id, order[N], one = 1, dst;
    pid_t pids[N];

    program_start();
    u = socket(AF_INET, SOCK_DGRAM, 0);
    if (u < 0)
        die("socket");
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(u, (struct sockaddr *)&a, sizeof a) < 0 || getsockname(u, (struct sockaddr *)&a, &len) < 0)
        die("bind");
    if (setsockopt(u, IPPROTO_IP, IP_PKTINFO, &one, sizeof one) < 0)
        die("IP_PKTINFO");
    if (strcmp(mode, "outside") == 0) {
        printf("port %d\n", ntohs(a.sin_port));
        poll_mode(u, order);
        print_order("order", order, N);
        return 0;
    }
    id = fork_clients(u, N, pids);
    if (id)
        client(ntohs(a.sin_port), id, strcmp(mode, "poll") == 0);
    if (strcmp(mode, "epoll") == 0)
        dst = epoll_mode(u, order);
    else if (strcmp(mode, "mmsg") == 0)
        dst = mmsg_mode(u, order);
    else
        dst = poll_mode(u, order);
    wait_all_ok(pids, N);
    print_order("order", order, N);
    if (strcmp(mode, "epoll") == 0)
        printf("dst: 127.0.0.1 x%d\n", dst);
    if (strcmp(mode, "mmsg") == 0)
        printf("recvmmsg calls: %d\n", dst);
    return 0;
}
