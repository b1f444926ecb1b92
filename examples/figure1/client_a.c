/*
 * client_a (Figure 1, p1): usage: client_a DIR
 *
 * Waits for DIR/server_x.port and DIR/server_y.port, connects to server_x
 * and to server_y and sends "client_a\n" on both (random jitter before each
 * connect and each send).  Then it waits on BOTH sockets at once with
 * select(), and prints which server replied first (if select() reports both
 * readable, server_x counts as first), reads that reply, then reads the
 * other one:
 *     client_a: first reply from server_y
 *     client_a: server_y says: server_y serves client_a
 *     client_a: server_x says: server_x child 2 serves client_a
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>

#define UNUSED __attribute__((unused))

#include "figure1.h" /* the helpers the four programs share */
#include <sys/select.h>
#include "ddbx.h" /* ddbx_set: publishes x for `ddbx replay --stop-if` (a no-op without ddbx) */

int main(int argc, char **argv)
{
    static const char *names[2] = { "server_x", "server_y" };
    char reply[512];
    int fds[2], i, first, r;
    fd_set rfds;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 2)
        fail("usage: client_a DIR");
    jitter_init();
    for (i = 0; i < 2; i++) {
        int port = read_port_file(argv[1], names[i]);
        jitter();
        fds[i] = connect_to(port);
        if (fds[i] >= FD_SETSIZE)
            fail("fd too large for select");
    }
    for (i = 0; i < 2; i++) {
        jitter();
        write_str(fds[i], "client_a\n");
    }
    for (;;) {
        FD_ZERO(&rfds);
        FD_SET(fds[0], &rfds);
        FD_SET(fds[1], &rfds);
        r = select((fds[0] > fds[1] ? fds[0] : fds[1]) + 1, &rfds, NULL, NULL,
                   NULL);
        if (r > 0)
            break;
        if (r < 0 && errno != EINTR)
            die("select");
    }
    first = FD_ISSET(fds[0], &rfds) ? 0 : 1;
    printf("client_a: first reply from %s\n", names[first]);
    for (i = 0; i < 2; i++) {
        int s = i == 0 ? first : 1 - first;
        read_line(fds[s], reply, sizeof reply);
        chomp(reply);
        printf("client_a: %s says: %s\n", names[s], reply);
        if (s == 1)
            ddbx_set("x", 1); /* the paper's x1: server_y has answered */
        if (close(fds[s]) < 0)
            die("close");
    }
    return 0;
}
