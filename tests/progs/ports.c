/*
 * ports: what the program is told about its connections' ports, which the kernel chooses anew
 * in every run (issue #10: every outcome a process can observe through a hooked call).
 *
 * The root listens on a TCP socket and binds a UDP socket (127.0.0.1, kernel-chosen ports),
 * and forks 3 clients. Each client sends a datagram from an unbound UDP socket (the send binds
 * it), connects, and tells the server, over the connection, the ports getsockname gives for
 * both sockets: "tcp T udp U". The server takes the 3 datagrams, then accepts the 3
 * connections (in the order they come: the race), and prints for each
 *     datagram from port U
 *     accepted from port A, peer port P, told: tcp T udp U
 * where A is what accept said, P what getpeername says; then "consistent" when every A, P and
 * T of a connection agree and every U told was a datagram's sender, else "inconsistent".
 *
 * `ports exec`: before reading a connection, the server forks a handler that puts it on its
 * standard input and execs `ports handler`, which prints "handler: peer port P" (getpeername
 * of fd 0), the way inetd starts a service.
 */
#include "common.h"

#define N 3

static int port_of(const struct sockaddr_in *a)
{
    return ntohs(a->sin_port);
}

static void client(int tcp_port, int udp_port)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    char line[64];
    int u, t, uport;

    client_start();
    u = socket(AF_INET, SOCK_DGRAM, 0);
    if (u < 0)
        die("socket");
    fill_addr(&a, udp_port);
    if (sendto(u, "hello", 5, 0, (struct sockaddr *)&a, sizeof a) != 5)
        die("sendto");
    if (getsockname(u, (struct sockaddr *)&a, &alen) < 0)
        die("getsockname");
    uport = port_of(&a);
    t = connect_to(tcp_port);
    alen = sizeof a;
    if (getsockname(t, (struct sockaddr *)&a, &alen) < 0)
        die("getsockname");
    snprintf(line, sizeof line, "tcp %d udp %d\n", port_of(&a), uport);
    write_str(t, line);
    close_or_die(t);
    close_or_die(u);
    exit(0);
}

/* `ports handler`: the peer of standard input, as getpeername tells it. */
static int handler(void)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof a;

    if (getpeername(0, (struct sockaddr *)&a, &alen) < 0)
        die("getpeername");
    printf("handler: peer port %d\n", port_of(&a));
    return 0;
}

/* Runs `self handler` on connection fd and waits for it. */
static void run_handler(const char *self, int fd)
{
    pid_t pid = fork_or_die();

    if (pid == 0) {
        if (dup2(fd, 0) < 0)
            die("dup2");
        execl(self, self, "handler", (char *)NULL);
        die("execl");
    }
    wait_ok(pid);
}

int main(int argc, char **argv)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    pid_t pids[N];
    int from[N], udp_port, tcp_port, lfd, u, i, j, ok = 1;
    char buf[64];

    program_start();
    if (argc > 1 && strcmp(argv[1], "handler") == 0)
        return handler();
    lfd = bind_any(&tcp_port, 1);
    u = socket(AF_INET, SOCK_DGRAM, 0);
    if (u < 0)
        die("socket");
    fill_addr(&a, 0);
    if (bind(u, (struct sockaddr *)&a, sizeof a) < 0 || getsockname(u, (struct sockaddr *)&a, &alen) < 0)
        die("bind");
    udp_port = port_of(&a);
    if (fork_clients(lfd, N, pids))
        client(tcp_port, udp_port);
    for (i = 0; i < N; i++) {
        alen = sizeof a;
        if (recvfrom(u, buf, sizeof buf, 0, (struct sockaddr *)&a, &alen) < 0)
            die("recvfrom");
        from[i] = port_of(&a);
        printf("datagram from port %d\n", from[i]);
    }
    for (i = 0; i < N; i++) {
        struct sockaddr_in peer;
        socklen_t plen = sizeof peer;
        int fd, t, up, seen = 0;

        alen = sizeof a;
        fd = accept(lfd, (struct sockaddr *)&a, &alen);
        if (fd < 0 || getpeername(fd, (struct sockaddr *)&peer, &plen) < 0)
            die("accept");
        if (argc > 1 && strcmp(argv[1], "exec") == 0)
            run_handler(argv[0], fd);
        read_line(fd, buf, sizeof buf);
        chomp(buf);
        printf("accepted from port %d, peer port %d, told: %s\n", port_of(&a), port_of(&peer), buf);
        if (sscanf(buf, "tcp %d udp %d", &t, &up) != 2 || t != port_of(&a) || t != port_of(&peer))
            ok = 0;
        for (j = 0; j < N; j++)
            seen |= from[j] == up;
        ok &= seen;
        close_or_die(fd);
    }
    wait_all_ok(pids, N);
    printf("%s\n", ok ? "consistent" : "inconsistent");
    return 0;
}
