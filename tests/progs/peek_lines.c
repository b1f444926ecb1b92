/*
 * peek_lines [fionread]: a server that looks at what is waiting before it reads.
 *
 * The parent listens and forks 3 clients. Each connects and sends 4 lines "c<id> line <j>\n",
 * every line in two writes with a jitter before each, waiting for the server's "ok\n" after
 * each line (a command and its reply, as in FTP), then closes. The parent accepts the 3
 * connections and polls them until all have ended.
 *
 * Default (vsftpd's way of reading a command line): for a readable connection, a receive with
 * MSG_PEEK of up to 64 bytes (recv, recvfrom and recvmsg in turns), then, if the peeked bytes
 * hold a newline, a read() of exactly the line; else a read() of every peeked byte, kept until
 * the rest of the line comes. Between the two, ioctl(FIONREAD) must say at least the peeked
 * bytes are waiting (else exit 1). A peek of 0 bytes is the end: the connection is closed. It logs
 *     c2 line 0 (peeked 7+9)
 * (the sizes of the peeks that made up the line, in order), answers "ok\n", and logs "c2 end"
 * at the end.
 *
 * With "fionread" (libevent's evbuffer_read): for a readable connection, ioctl(FIONREAD), then
 * a read() of exactly that many bytes (1 when it says 0, to see the end): it logs
 *     c2 fionread 9 read 9
 * (answering "ok\n" when the bytes read end a line) and "c2 end".
 *
 * After reaping the children the parent prints the log. Race: the order of the lines across
 * clients and how the pieces of each line were seen (vary natively with DDBX_JITTER=3).
 */
#include "common.h" /* the helpers every test program shares */

#include <sys/ioctl.h>

#define CLIENTS 3
#define LINES 4

/* Client `id`: its lines, each in two writes, then close. */
static void client(int port, int id)
{
    int fd = connect_to(port), j;
    char line[64];

    nodelay(fd);
    client_hello(fd, id);
    for (j = 0; j < LINES; j++) {
        size_t len = (size_t)snprintf(line, sizeof line, "c%d line %d\n", id, j);

        jitter();
        write_all(fd, line, len / 2);
        jitter();
        write_all(fd, line + len / 2, len - len / 2);
        read_line(fd, line, sizeof line); /* "ok" */
    }
    close_or_die(fd);
    exit(0);
}

/* A peek of up to `cap` bytes of fd into buf, with the receive call `turn` names (recv,
 * recvfrom, recvmsg in turns). */
static ssize_t peek(int fd, char *buf, size_t cap, int turn)
{
    switch (turn % 3) {
    case 0:
        return recv(fd, buf, cap, MSG_PEEK);
    case 1:
        return recvfrom(fd, buf, cap, MSG_PEEK, NULL, NULL);
    default: {
        struct iovec iov = {buf, cap};
        struct msghdr m;

        memset(&m, 0, sizeof m);
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        return recvmsg(fd, &m, MSG_PEEK);
    }
    }
}

/* What the server keeps of one connection. */
struct conn {
    int fd, id;
    char sizes[128]; /* the peek sizes of the line under way, "7+9" */
    char text[128];  /* the bytes of the line under way read so far */
};

/* Peeks at conn, then reads a line or what there is; returns 0 at the end of the stream. */
static int peek_then_read(struct conn *c, int *turn)
{
    char buf[64], *nl;
    ssize_t k = peek(c->fd, buf, sizeof buf, (*turn)++), r;
    size_t take, used = strlen(c->sizes), have = strlen(c->text);
    int waiting = 0;

    if (k < 0)
        die("recv MSG_PEEK");
    if (k == 0)
        return 0;
    if (ioctl(c->fd, FIONREAD, &waiting) < 0)
        die("ioctl FIONREAD");
    if (waiting < k)
        fail("FIONREAD says fewer bytes are waiting than were peeked");
    snprintf(c->sizes + used, sizeof c->sizes - used, "%s%zd", used ? "+" : "", k);
    nl = memchr(buf, '\n', (size_t)k);
    take = nl ? (size_t)(nl - buf) + 1 : (size_t)k;
    r = read(c->fd, buf, take);
    if (r != (ssize_t)take || have + take >= sizeof c->text)
        fail("a read got other than the peeked bytes");
    memcpy(c->text + have, buf, take);
    c->text[have + take] = '\0';
    if (nl) {
        c->text[have + take - 1] = '\0';
        log_line("%s (peeked %s)", c->text, c->sizes);
        write_str(c->fd, "ok\n");
        c->sizes[0] = '\0';
        c->text[0] = '\0';
    }
    return 1;
}

/* Reads what FIONREAD says is waiting; returns 0 at the end of the stream. */
static int fionread_then_read(struct conn *c)
{
    char buf[256];
    int waiting = 0;
    ssize_t r;

    if (ioctl(c->fd, FIONREAD, &waiting) < 0)
        die("ioctl FIONREAD");
    if (waiting > (int)sizeof buf)
        waiting = (int)sizeof buf;
    r = read(c->fd, buf, waiting > 0 ? (size_t)waiting : 1);
    if (r < 0)
        die("read");
    if (r == 0)
        return 0;
    log_line("c%d fionread %d read %zd", c->id, waiting, r);
    if (memchr(buf, '\n', (size_t)r))
        write_str(c->fd, "ok\n");
    return 1;
}

int main(int argc, char **argv)
{
    int fionread = argc > 1 && strcmp(argv[1], "fionread") == 0;
    int port, lfd = bind_any(&port, 1), i, open = CLIENTS, turn = 0;
    struct conn conns[CLIENTS];
    pid_t pids[CLIENTS];

    program_start();
    i = fork_clients(lfd, CLIENTS, pids);
    if (i > 0)
        client(port, i);
    for (i = 0; i < CLIENTS; i++) {
        conns[i].fd = accept_hello(lfd, CLIENTS, &conns[i].id);
        conns[i].sizes[0] = '\0';
        conns[i].text[0] = '\0';
    }
    while (open > 0) {
        struct pollfd p[CLIENTS];

        for (i = 0; i < CLIENTS; i++) {
            p[i].fd = conns[i].fd;
            p[i].events = POLLIN;
        }
        if (poll(p, CLIENTS, -1) < 0)
            die("poll");
        for (i = 0; i < CLIENTS; i++) {
            if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP)))
                continue;
            if (fionread ? fionread_then_read(&conns[i]) : peek_then_read(&conns[i], &turn))
                continue;
            log_line("c%d end", conns[i].id);
            close_or_die(conns[i].fd);
            conns[i].fd = -1;
            open--;
        }
    }
    wait_all_ok(pids, CLIENTS);
    print_log();
    return 0;
}
