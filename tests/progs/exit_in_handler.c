/*
 * exit_in_handler: a server that ends in its SIGTERM handler with _exit(0),
 * called while it is blocked in poll (what rsync's daemon does when killed:
 * its handler cleans up and calls _exit).
 *
 * The root forks the server, which listens on 127.0.0.1 (kernel-chosen port,
 * told to the root through a pipe) and accepts 3 clients (forked by the root,
 * each sends its hello after a random delay), then tells the root the accept
 * order on a 4th connection that the root makes, and waits in poll on the
 * listening socket for ever.  The root reads the order, sends SIGTERM to the
 * server, reaps everyone and prints
 *     accepted: I J K
 *     server: exit 0
 * (the accept order: a race).
 */
#include "common.h"
#include <signal.h>

static void on_term(int sig)
{
    (void)sig;
    _exit(0);
}

static void serve(int lfd)
{
    int i, fd, id, order[3];
    char line[64];
    struct pollfd pfd;

    for (i = 0; i < 3; i++) {
        fd = accept_hello(lfd, 3, &id);
        order[i] = id;
        close_or_die(fd);
    }
    fd = accept_one(lfd);
    snprintf(line, sizeof line, "accepted: %d %d %d\n", order[0], order[1], order[2]);
    write_str(fd, line);
    close_or_die(fd);
    pfd.fd = lfd;
    pfd.events = POLLIN;
    for (;;)
        poll(&pfd, 1, -1);
}

int main(void)
{
    int p[2], lfd, port, i, fd, status;
    pid_t server, clients[3];
    char line[64];

    program_start();
    if (pipe(p) < 0)
        die("pipe");
    server = fork_or_die();
    if (server == 0) {
        signal(SIGTERM, on_term);
        close_or_die(p[0]);
        lfd = bind_any(&port, 4);
        if (write(p[1], &port, sizeof port) != sizeof port)
            die("write");
        close_or_die(p[1]);
        serve(lfd);
    }
    close_or_die(p[1]);
    if (read(p[0], &port, sizeof port) != sizeof port)
        die("read");
    close_or_die(p[0]);
    i = fork_clients(-1, 3, clients);
    if (i) {
        client_start();
        fd = connect_to(port);
        client_hello(fd, i);
        close_or_die(fd);
        exit(0);
    }
    wait_all_ok(clients, 3);
    fd = connect_to(port);
    read_line(fd, line, sizeof line);
    close_or_die(fd);
    if (kill(server, SIGTERM) < 0)
        die("kill");
    if (waitpid(server, &status, 0) != server)
        die("waitpid");
    printf("%sserver: exit %d\n", line, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}
