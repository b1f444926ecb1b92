/*
 * fd_passing: a connection handed to another process over a Unix socket.
 *
 * The parent listens on TCP and makes a Unix socketpair, then forks a worker
 * (which keeps one end of the pair) and a client.  The client connects and
 * does 20 writes of 10 bytes (random jitter between them with DDBX_JITTER),
 * then closes.  The parent accepts the connection, passes it to the worker
 * with sendmsg(SCM_RIGHTS), and closes its own copy.  The worker receives the
 * descriptor with recvmsg, reads it with a 4096-byte buffer until EOF (with
 * jitter before each read), and prints the size of every read, then the total:
 *     read 30
 *     read 10
 *     ...
 *     total 200
 * Race: the read sizes on the passed descriptor (vary natively with
 * DDBX_JITTER=2).  A replay that did not know the passed descriptor as a
 * connection would let them come out as they please.
 */
#include "common.h" /* the helpers every test program shares */

/* The message that carries the descriptor: one byte, and room for one SCM_RIGHTS descriptor. */
struct fd_message {
    char byte;
    struct iovec iov;
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(sizeof(int))];
    } control;
    struct msghdr msg;
};

static void fd_message_init(struct fd_message *m)
{
    memset(m, 0, sizeof *m);
    m->byte = 'f';
    m->iov.iov_base = &m->byte;
    m->iov.iov_len = 1;
    m->msg.msg_iov = &m->iov;
    m->msg.msg_iovlen = 1;
    m->msg.msg_control = m->control.space;
    m->msg.msg_controllen = sizeof m->control.space;
}

static void send_fd(int via, int fd)
{
    struct fd_message m;
    struct cmsghdr *c;

    fd_message_init(&m);
    c = CMSG_FIRSTHDR(&m.msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    if (sendmsg(via, &m.msg, 0) != 1)
        die("sendmsg");
}

static int recv_fd(int via)
{
    struct fd_message m;
    struct cmsghdr *c;
    int fd;

    fd_message_init(&m);
    if (recvmsg(via, &m.msg, 0) != 1)
        die("recvmsg");
    c = CMSG_FIRSTHDR(&m.msg);
    if (c == NULL || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
        fail("no descriptor came with the message");
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

static void worker(int via)
{
    size_t sizes[MAXREADS];
    int fd, nreads;

    jitter_init();
    fd = recv_fd(via);
    nreads = read_chunks(fd, sizes);
    report_chunks(sizes, nreads);
    exit(0);
}

int main(void)
{
    int port, lfd, fd, pair[2];
    pid_t w, c;

    program_start();
    lfd = bind_any(&port, 1);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) < 0)
        die("socketpair");
    if (fork_clients(lfd, 1, &w)) {
        close_or_die(pair[0]);
        worker(pair[1]);
    }
    close_or_die(pair[1]);
    if (fork_clients(lfd, 1, &c)) {
        close_or_die(pair[0]);
        chunk_client(port);
    }
    fd = accept_one(lfd);
    send_fd(pair[0], fd);
    if (close(fd) < 0 || close(lfd) < 0)
        die("close");
    wait_ok(c);
    wait_ok(w);
    return 0;
}
