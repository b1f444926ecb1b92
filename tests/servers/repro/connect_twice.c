// What hiredis (redis-cli) does to connect: a non-blocking connect (EINPROGRESS), a poll for
// POLLOUT, then connect() AGAIN on the same socket to learn the outcome (0: connected). A
// forked server accepts, reads the request and answers.
//
// ddbx records the client's second call as a second `Connect(fd: 3, err: None, …)` and the
// channel is not matched to the server's accept: the client's sends keep their bytes as if the
// peer were outside (`Send(…, data: Some(…))`), and `ddbx races` says
// "note: unsent_bytes: p1 event N received bytes [0, 5) of channel 1 connector→acceptor, but
// only 0 were sent" (redis.sh: one such note per redis-cli).
//
// Build: gcc -O1 -o connect_twice connect_twice.c
// Show:  ddbx record -o r -- ./connect_twice; ddbx show r p2; ddbx races r
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 8) < 0 ||
        getsockname(l, (struct sockaddr *)&a, &len) < 0) {
        perror("listen");
        return 1;
    }
    char buf[64];
    if (fork() == 0) { // the server
        int c = accept(l, NULL, NULL);
        ssize_t n = recv(c, buf, sizeof buf, 0);
        send(c, "pong\n", 5, 0);
        close(c);
        return n == 5 ? 0 : 1;
    }
    close(l);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    fcntl(s, F_SETFL, O_NONBLOCK);
    if (connect(s, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) {
        perror("connect");
        return 1;
    }
    struct pollfd p = {.fd = s, .events = POLLOUT};
    poll(&p, 1, 5000);
    if (connect(s, (struct sockaddr *)&a, sizeof a) < 0 && errno != EISCONN) { // hiredis
        perror("connect again");
        return 1;
    }
    fcntl(s, F_SETFL, 0);
    send(s, "ping\n", 5, 0);
    ssize_t n = recv(s, buf, sizeof buf, MSG_WAITALL);
    printf("got %zd bytes\n", n);
    int status;
    wait(&status);
    return status;
}
