/*
 * dns_id: a DNS query built with libc's res_mkquery, sent over UDP to a forked server that
 * answers it; the query id comes from a clock read inside libc that no hook sees.
 *
 * The root binds a UDP socket to 127.0.0.1 (kernel-chosen port) and forks a client, which
 * builds an A query for `host.test` with res_mkquery, sends it from a connected UDP socket and
 * reads the answer: it exits 0 when the answer carries its query's id (as a resolver checks),
 * else 2. The server (the root) answers the query it receives with a copy whose QR bit is set,
 * reaps the client and prints
 *     id: N            (the query id, which differs from run to run)
 *     answered: yes    (the client matched the answer to its query)
 */
#include "common.h"
#include <arpa/nameser.h>
#include <resolv.h>

static void client(int port)
{
    unsigned char query[512], answer[512];
    struct sockaddr_in a;
    int u, n;
    ssize_t got;

    client_start();
    n = res_mkquery(QUERY, "host.test", C_IN, T_A, NULL, 0, NULL, query, sizeof query);
    if (n < 12)
        fail("res_mkquery");
    u = socket(AF_INET, SOCK_DGRAM, 0);
    if (u < 0)
        die("socket");
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (connect(u, (struct sockaddr *)&a, sizeof a) < 0 || send(u, query, n, 0) != n)
        die("send");
    got = recv(u, answer, sizeof answer, 0);
    if (got < 12)
        die("recv");
    exit(memcmp(answer, query, 2) == 0 ? 0 : 2);
}

int main(void)
{
    unsigned char q[512];
    struct sockaddr_in a, from;
    socklen_t len = sizeof a, flen = sizeof from;
    int u, status;
    pid_t pid;
    ssize_t n;

    program_start();
    u = socket(AF_INET, SOCK_DGRAM, 0);
    if (u < 0)
        die("socket");
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(u, (struct sockaddr *)&a, sizeof a) < 0 || getsockname(u, (struct sockaddr *)&a, &len) < 0)
        die("bind");
    pid = fork_or_die();
    if (pid == 0)
        client(ntohs(a.sin_port));
    n = recvfrom(u, q, sizeof q, 0, (struct sockaddr *)&from, &flen);
    if (n < 12)
        die("recvfrom");
    q[2] |= 0x80;
    if (sendto(u, q, n, 0, (struct sockaddr *)&from, flen) != n)
        die("sendto");
    if (waitpid(pid, &status, 0) != pid)
        die("waitpid");
    printf("id: %d\n", q[0] << 8 | q[1]);
    printf("answered: %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "yes" : "no");
    return 0;
}
