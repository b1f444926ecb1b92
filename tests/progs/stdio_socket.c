/*
 * stdio_socket: clients that talk over their socket with stdio (fdopen, fprintf, fgets).
 *
 * The parent listens and forks 3 clients. Each sleeps a random jitter, connects, wraps its
 * socket in a stream with fdopen(fd, "r+"), writes "client I\n" with fprintf + fflush,
 * reads the reply line with fgets and exits with the number in it. The parent accepts the
 * 3 connections in turn, reads each request with plain read() and answers the K-th one
 * "K\n"; after reaping the clients it prints
 *     client 1: 2
 *     client 2: 1
 *     client 3: 3
 * (client 1 was accepted second).
 * Race: the accept order (varies natively with DDBX_JITTER=5). glibc's stdio reads and
 * writes the socket with internal calls, which only the preload's fdopen stream records.
 */
#include "common.h" /* the helpers every test program shares */

#define CLIENTS 3

static void client(int port, int me)
{
    char reply[64];
    FILE *f;

    client_start();
    f = fdopen(connect_to(port), "r+");
    if (f == NULL)
        die("fdopen");
    if (fprintf(f, "client %d\n", me) < 0 || fflush(f) != 0)
        die("fprintf");
    if (fgets(reply, sizeof reply, f) == NULL)
        fail("client: no reply");
    if (fclose(f) != 0)
        die("fclose");
    exit(atoi(reply));
}

int main(void)
{
    pid_t pids[CLIENTS];
    int port, lfd, i;

    program_start();
    lfd = bind_any(&port, CLIENTS);
    i = fork_clients(lfd, CLIENTS, pids);
    if (i > 0)
        client(port, i);
    for (i = 1; i <= CLIENTS; i++) {
        char line[64], reply[16];
        int fd = accept_one(lfd);

        read_line(fd, line, sizeof line);
        snprintf(reply, sizeof reply, "%d\n", i);
        write_str(fd, reply);
        close_or_die(fd);
    }
    close_or_die(lfd);
    for (i = 0; i < CLIENTS; i++)
        printf("client %d: %d\n", i + 1, wait_status(pids[i]));
    return 0;
}
