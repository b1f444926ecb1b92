/*
 * server_x (Figure 1, p3): usage: server_x DIR
 *
 * Listens on 127.0.0.1 (kernel-chosen port), publishes the port in
 * DIR/server_x.port, then accepts 2 connections.  For each accepted
 * connection k (k = 1, 2 in accept order) it fork()s a child and
 * closes its own copy of the accepted socket right after the fork: only the
 * child uses the connection, and waits until the child has started (it
 * creates DIR/server_x.child<k>.started) before the next accept.  Child k
 * greets its client
 *     server_x child <k> ready\n
 * (so that the client knows the child exists), reads the client's name, prints
 *     server_x child <k>: serving <name>
 * sleeps a random jitter (DDBX_JITTER ms at most) and replies
 *     server_x child <k> serves <name>\n
 * server_x waits for both children, then exits.
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
#include "ddbx.h" /* ddbx_set: publishes x for `ddbx replay --stop-if` (a no-op without ddbx) */

/* Connections accepted so far: a plain global, which `ddbx replay --stop-if
 * 'server_x.count >= 2'` reads from this process's memory by symbol name. */
long count;

static void serve(const char *dir, int fd, int k)
{
    char name[256], reply[512];

    snprintf(name, sizeof name, "server_x.child%d", k);
    mark_started(dir, name);
    jitter_init();
    snprintf(reply, sizeof reply, "server_x child %d ready\n", k);
    write_str(fd, reply); /* the greeting: the client knows its server_x child exists */
    read_line(fd, name, sizeof name);
    chomp(name);
    ddbx_set("x", 1); /* the paper's x4 (for the child serving client_a): a request arrived */
    printf("server_x child %d: serving %s\n", k, name);
    jitter();
    snprintf(reply, sizeof reply, "server_x child %d serves %s\n", k, name);
    write_str(fd, reply);
    if (close(fd) < 0)
        die("close");
    exit(0);
}

int main(int argc, char **argv)
{
    int port, lfd, k;
    pid_t kids[2];
    char started[64];

    setvbuf(stdout, NULL, _IOLBF, 0); /* nothing buffered is duplicated by fork */
    if (argc != 2)
        fail("usage: server_x DIR");
    jitter_init();
    lfd = bind_any(&port, 1);
    write_port_file(argv[1], "server_x", port);
    for (k = 1; k <= 2; k++) {
        int fd = accept_one(lfd);

        count++;

        kids[k - 1] = fork_or_die();
        if (kids[k - 1] == 0) {
            if (close(lfd) < 0)
                die("close");
            serve(argv[1], fd, k);
        }
        /* Under ddbx a process is numbered when it starts: let child k start before child
         * k + 1 can, so that the first child is p4 as in the paper. */
        snprintf(started, sizeof started, "server_x.child%d", k);
        wait_started(argv[1], started);
        if (close(fd) < 0) /* the paper requires it: the child owns it now */
            die("close");
    }
    if (close(lfd) < 0)
        die("close");
    wait_ok(kids[0]);
    wait_ok(kids[1]);
    return 0;
}
