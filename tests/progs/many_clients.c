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
#include "common.h" /* the helpers every test program shares */

#define NCLIENTS 8

static void client(int port, int id)
{
    char msg[32];
    int fd;

    client_start();
    fd = connect_to(port);
    snprintf(msg, sizeof msg, "client %d\n", id);
    send_line_and_exit(fd, msg);
}

int main(void)
{
    int port, lfd, i, seen[NCLIENTS + 1] = {0}, order[NCLIENTS];
    pid_t pids[NCLIENTS];

    program_start();
    lfd = bind_any(&port, 1);
    i = fork_clients(lfd, NCLIENTS, pids);
    if (i > 0)
        client(port, i);
    /* One at a time: accept, read the line, close (no reply: the client reads until EOF). */
    for (i = 0; i < NCLIENTS; i++) {
        int fd = accept_one(lfd), id = read_client_id(fd, NCLIENTS);

        if (seen[id])
            fail("server: a client came twice");
        seen[id] = 1;
        order[i] = id;
        close_or_die(fd);
    }
    close_or_die(lfd);
    wait_all_ok(pids, NCLIENTS);
    print_order("accepted:", order, NCLIENTS);
    return 0;
}
