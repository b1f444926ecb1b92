/*
 * udp_probe [send]: a datagram socket that carries nothing, beside an accept race.
 *
 * First the root makes a UDP socket and connects it to 127.0.0.1 port 9 (a
 * route probe: what haproxy does with its default resolver's address, and
 * what libraries do to learn a source address), reads its local address and
 * closes it: no datagram moves.  With `send`, the socket is bound to port 0
 * and connected to itself, and one datagram goes through it ("ping", sent and
 * received back), which ddbx records.  Then the root listens on
 * 127.0.0.1 (kernel-chosen port), forks 3 clients that send their hello after
 * a random delay, accepts them and prints
 *     udp: probed            (or `udp: 4 bytes back` with `send`)
 *     accepted: I J K
 * (the accept order: a race).
 */
#include "common.h"

int main(int argc, char **argv)
{
    int send_mode = argc > 1 && strcmp(argv[1], "send") == 0;
    int u, lfd, port, i, fd, id, order[3];
    pid_t pids[3];
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    char buf[16];
    ssize_t n = 0;

    program_start();
    u = socket(AF_INET, SOCK_DGRAM, 0);
    if (u < 0)
        die("socket");
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (send_mode) {
        if (bind(u, (struct sockaddr *)&a, sizeof a) < 0 ||
            getsockname(u, (struct sockaddr *)&a, &len) < 0)
            die("bind");
    } else {
        a.sin_port = htons(9);
    }
    if (connect(u, (struct sockaddr *)&a, sizeof a) < 0)
        die("connect (udp)");
    len = sizeof a;
    if (getsockname(u, (struct sockaddr *)&a, &len) < 0)
        die("getsockname");
    if (send_mode) {
        if (send(u, "ping", 4, 0) != 4)
            die("send (udp)");
        n = recv(u, buf, sizeof buf, 0);
    }
    close_or_die(u);

    lfd = bind_any(&port, 3);
    i = fork_clients(lfd, 3, pids);
    if (i) {
        client_start();
        fd = connect_to(port);
        client_hello(fd, i);
        close_or_die(fd);
        exit(0);
    }
    for (i = 0; i < 3; i++) {
        fd = accept_hello(lfd, 3, &id);
        order[i] = id;
        close_or_die(fd);
    }
    close_or_die(lfd);
    wait_all_ok(pids, 3);
    if (send_mode)
        printf("udp: %zd bytes back\n", n);
    else
        printf("udp: probed\n");
    print_order("accepted:", order, 3);
    return 0;
}
