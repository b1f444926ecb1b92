/*
 * self_pipe_fork: an event loop that wakes itself through a self-pipe and forks
 * a handler per connection, which inherits the pipe (dnsmasq's event pipe and
 * TCP children).
 *
 * The root makes a pipe, listens on 127.0.0.1 (kernel-chosen port) and forks 3
 * clients, which send their hello ("client <id>\n") after a random delay.  Then,
 * 3 times: it writes a byte into its own pipe, polls the pipe's read end (ready:
 * the byte it wrote), reads the byte, accepts a client and forks a handler
 * child (which holds both ends of the pipe too) that reads the client's hello,
 * answers "ok\n" and exits with the client's id as its status; the root closes
 * its copy of the connection and reaps the handler.  At the end it prints
 *     accepted: I J K
 * (the accept order: a race).  The self-pipe's writes are not events (where a
 * signal lands is not recorded, and neither are the writes a process makes
 * into its own pipe), so the analysis sees bytes ready that no recorded send
 * made; they are not the end of the pipe.
 */
#include "common.h"

int main(void)
{
    int p[2], lfd, port, i, fd, id, status, order[3];
    pid_t clients[3], handler;
    struct pollfd pfd;
    char c;

    program_start();
    if (pipe(p) < 0)
        die("pipe");
    lfd = bind_any(&port, 3);
    i = fork_clients(lfd, 3, clients);
    if (i) {
        close_or_die(p[0]);
        close_or_die(p[1]);
        client_start();
        fd = connect_to(port);
        client_hello(fd, i);
        close_or_die(fd);
        exit(0);
    }
    for (i = 0; i < 3; i++) {
        write_str(p[1], "e");
        pfd.fd = p[0];
        pfd.events = POLLIN;
        if (poll(&pfd, 1, -1) != 1 || !(pfd.revents & POLLIN))
            fail("poll on the self-pipe");
        if (read(p[0], &c, 1) != 1)
            die("read from the self-pipe");
        fd = accept_one(lfd);
        handler = fork_or_die();
        if (handler == 0) {
            close_or_die(lfd);
            id = read_client_id(fd, 3);
            write_str(fd, "ok\n");
            close_or_die(fd);
            exit(id);
        }
        close_or_die(fd);
        if (waitpid(handler, &status, 0) != handler)
            die("waitpid");
        if (!WIFEXITED(status))
            fail("a handler did not exit");
        order[i] = WEXITSTATUS(status);
    }
    close_or_die(lfd);
    wait_all_ok(clients, 3);
    print_order("accepted:", order, 3);
    return 0;
}
