/*
 * sendto_peer PORT: a client of an outside server that names the server's
 * address on every send of its connected TCP socket, as ldns (drill) does:
 * connects to 127.0.0.1:PORT, sends "hello " with sendto(address) and "there\n"
 * with sendmsg(msg_name = address), reads the server's one-line reply and
 * prints
 *     reply: <line>
 * TCP ignores the address of a send on a connected socket.  No race: the
 * server (not under ddbx) is played in replay.
 */
#include "common.h"

int main(int argc, char **argv)
{
    struct sockaddr_in a;
    struct msghdr msg;
    struct iovec iov;
    char part2[] = "there\n", line[128];
    int fd;

    if (argc != 2)
        fail("usage: sendto_peer PORT");
    program_start();
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)atoi(argv[1]));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
        die("connect");
    if (sendto(fd, "hello ", 6, 0, (struct sockaddr *)&a, sizeof a) != 6)
        die("sendto");
    memset(&msg, 0, sizeof msg);
    iov.iov_base = part2;
    iov.iov_len = strlen(part2);
    msg.msg_name = &a;
    msg.msg_namelen = sizeof a;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (sendmsg(fd, &msg, 0) != (ssize_t)iov.iov_len)
        die("sendmsg");
    read_line(fd, line, sizeof line);
    close_or_die(fd);
    printf("reply: %s", line);
    return 0;
}
