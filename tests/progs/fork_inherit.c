/*
 * fork_inherit: sockets inherited across fork(), used by a process other
 * than the one that created them, with the creator's copy closed.
 *
 *   parent (server) --fork--> client child --fork--> grandchild
 *          |
 *          +--fork--> handler child
 *
 * The parent listens and forks a client child.  The client child connects
 * and forks a grandchild, then closes its own copy of the connected socket
 * right away and waits for the grandchild.  The grandchild sends
 * "from grandchild\n" on the inherited socket, reads the reply until EOF
 * and exits with the number of bytes it received; the client child exits
 * with the same status.  The parent accepts, forks a handler child and
 * closes its own copy of the accepted socket right after the fork.  The
 * handler reads the line, replies "hi grandchild\n" and exits with the
 * length of the line it received.  The parent reaps both and prints
 *     handler exit status 16
 *     client exit status 14
 * No race in the output: it is always the same (jitter only moves timing).
 */
#include "common.h" /* the helpers every test program shares */

static const char MSG[] = "from grandchild\n";
static const char REPLY[] = "hi grandchild\n";

static void grandchild(int fd)
{
    char buf[256];
    size_t n;

    jitter_init();
    jitter();
    write_str(fd, MSG);
    n = read_to_eof(fd, buf, sizeof buf);
    close_or_die(fd);
    exit(n > 255 ? 255 : (int)n);
}

static void client_child(int port)
{
    int fd;
    pid_t g;

    client_start();
    fd = connect_to(port);
    g = fork_or_die();
    if (g == 0)
        grandchild(fd);
    close_or_die(fd); /* only the grandchild uses the connection */
    exit(wait_status(g));
}

static void handler(int fd)
{
    char buf[256];
    size_t n;

    jitter_init();
    n = read_line(fd, buf, sizeof buf);
    jitter();
    write_str(fd, REPLY);
    close_or_die(fd);
    exit(n > 255 ? 255 : (int)n);
}

int main(void)
{
    int fd, hst, cst;
    pid_t c, h;

    program_start();
    fd = accept_child(client_child, &c);
    h = fork_or_die();
    if (h == 0)
        handler(fd);
    close_or_die(fd); /* only the handler uses the connection */
    hst = wait_status(h);
    cst = wait_status(c);
    printf("handler exit status %d\n", hst);
    printf("client exit status %d\n", cst);
    if (hst != (int)strlen(MSG) || cst != (int)strlen(REPLY))
        fail("unexpected exit status");
    return 0;
}
