/*
 * client_b (Figure 1, p2): usage: client_b DIR
 *
 * Creates DIR/client_b.started (the launcher, client_a, waits for it), waits
 * for DIR/server_x.port, connects to server_x, reads its child's greeting,
 * sends "client_b\n" (random jitter before the connect and before the send),
 * reads the reply and prints
 *     client_b: server_x says: server_x child <k> serves client_b
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

int main(int argc, char **argv)
{
    char reply[512];
    int port, fd;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 2)
        fail("usage: client_b DIR");
    mark_started(argv[1], "client_b");
    jitter_init();
    port = read_port_file(argv[1], "server_x");
    jitter();
    fd = connect_to(port);
    read_line(fd, reply, sizeof reply); /* server_x's child greets its client */
    jitter();
    write_str(fd, "client_b\n");
    read_line(fd, reply, sizeof reply);
    chomp(reply);
    if (close(fd) < 0)
        die("close");
    printf("client_b: server_x says: %s\n", reply);
    return 0;
}
