/*
 * server_y (Figure 1, p6, or p5 when it starts before server_x's second
 * child): usage: server_y DIR
 *
 * Listens on 127.0.0.1 (kernel-chosen port), publishes the port in
 * DIR/server_y.port, accepts 1 connection, reads the client's name, prints
 *     server_y: serving <name>
 * sleeps a random jitter (DDBX_JITTER ms at most), replies
 *     server_y serves <name>\n
 * and exits.
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
    char name[256], reply[512];
    int port, lfd, fd;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 2)
        fail("usage: server_y DIR");
    jitter_init();
    lfd = bind_any(&port, 1);
    write_port_file(argv[1], "server_y", port);
    fd = accept_one(lfd);
    if (close(lfd) < 0)
        die("close");
    read_line(fd, name, sizeof name);
    chomp(name);
    printf("server_y: serving %s\n", name);
    jitter();
    snprintf(reply, sizeof reply, "server_y serves %s\n", name);
    write_str(fd, reply);
    if (close(fd) < 0)
        die("close");
    return 0;
}
