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

static void send_fd(int via, int fd)
{
    char byte = 'f';
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(sizeof(int))];
    } control;
    struct msghdr msg;
    struct cmsghdr *c;

    memset(&msg, 0, sizeof msg);
    memset(&control, 0, sizeof control);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.space;
    msg.msg_controllen = sizeof control.space;
    c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    if (sendmsg(via, &msg, 0) != 1)
        die("sendmsg");
}

static int recv_fd(int via)
{
    char byte;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(sizeof(int))];
    } control;
    struct msghdr msg;
    struct cmsghdr *c;
    int fd;

    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.space;
    msg.msg_controllen = sizeof control.space;
    if (recvmsg(via, &msg, 0) != 1)
        die("recvmsg");
    c = CMSG_FIRSTHDR(&msg);
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

    setvbuf(stdout, NULL, _IOLBF, 0);
    jitter_init();
    lfd = bind_any(&port, 1);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) < 0)
        die("socketpair");
    w = fork_or_die();
    if (w == 0) {
        close(lfd);
        close(pair[0]);
        worker(pair[1]);
    }
    close(pair[1]);
    c = fork_or_die();
    if (c == 0) {
        close(lfd);
        close(pair[0]);
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
