/*
 * many_clients: in which order are 8 concurrent clients accepted?
 *
 * The parent listens and forks 8 client children.  Child i (1..8) sleeps a
 * random jitter, connects, sends "client <i>\n" and reads until EOF.  The
 * parent serves them one at a time: accept, read the line, close.  After
 * reaping all children it prints the accept order:
 *     accepted: 3 1 4 8 2 7 5 6
 * Race: the accept order (varies natively with DDBX_JITTER=5).
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

#include "common.h" /* the helpers every test program shares */

#define NCLIENTS 8

static void client(int port, int id)
{
    char msg[32], rest[16];
    int fd;

    jitter_init();
    jitter();
    fd = connect_to(port);
    snprintf(msg, sizeof msg, "client %d\n", id);
    write_str(fd, msg);
    if (read_to_eof(fd, rest, sizeof rest) != 0)
        fail("client: unexpected data");
    if (close(fd) < 0)
        die("close");
    exit(0);
}

int main(void)
{
    int port, lfd, i, seen[NCLIENTS + 1] = {0}, order[NCLIENTS];
    pid_t pids[NCLIENTS];

    setvbuf(stdout, NULL, _IOLBF, 0);
    jitter_init();
    lfd = bind_any(&port, 1);
    for (i = 0; i < NCLIENTS; i++) {
        pids[i] = fork_or_die();
        if (pids[i] == 0) {
            if (close(lfd) < 0)
                die("close");
            client(port, i + 1);
        }
    }
    for (i = 0; i < NCLIENTS; i++) {
        char buf[64];
        int fd = accept_one(lfd), id;

        read_line(fd, buf, sizeof buf);
        if (sscanf(buf, "client %d", &id) != 1 || id < 1 || id > NCLIENTS ||
            seen[id])
            fail("server: bad message");
        seen[id] = 1;
        order[i] = id;
        if (close(fd) < 0)
            die("close");
    }
    if (close(lfd) < 0)
        die("close");
    for (i = 0; i < NCLIENTS; i++)
        wait_ok(pids[i]);
    printf("accepted:");
    for (i = 0; i < NCLIENTS; i++)
        printf(" %d", order[i]);
    printf("\n");
    return 0;
}
