/*
 * stuck_wait: a session that never ends by itself, for a record stopped from outside while a
 * process blocks in a call that is not an event.
 *
 * The root listens on 127.0.0.1 and forks a child; the child forks a grandchild, then blocks
 * in pause() (no event: as a process blocks in waitpid or a sleep); the grandchild connects to
 * the root and blocks reading a reply that never comes; the root accepts, writes
 * "stuck_wait: ready" to stderr and blocks reading the connection. Nothing ends until someone
 * kills the session (a test SIGTERMs ddbx once it sees "ready"). The child's history then ends
 * with its fork, after which it was killed in pause(), and replay must still reach that end
 * and stop.
 */
#include "common.h" /* the helpers every test program shares */

int main(void)
{
    char c;
    int port, lfd, fd;
    pid_t child, grandchild;

    program_start();
    lfd = bind_any(&port, 1);
    if (fork_clients(lfd, 1, &child)) {
        grandchild = fork_or_die();
        if (grandchild == 0) {
            fd = connect_to(port);
            if (read(fd, &c, 1) >= 0)
                return 0;
            die("read");
        }
        pause();
        return 0;
    }
    fd = accept_last(lfd);
    fprintf(stderr, "stuck_wait: ready\n");
    if (read(fd, &c, 1) >= 0)
        return 0;
    die("read");
}
