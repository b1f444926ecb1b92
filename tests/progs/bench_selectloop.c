/*
 * bench_selectloop [CLIENTS [MESSAGES [SIZE]]]: a race-heavy workload for the tracing benchmark
 * (BENCHMARKS.md, ddbx/benches/tracing.rs): many clients to one select loop.
 *
 * The parent listens on loopback TCP and forks CLIENTS (default 16, at most 64) children; each
 * connects and sends MESSAGES (default 200) messages of SIZE (default 32) bytes, then closes.
 * The parent accepts them all, then loops on select() over the open connections and, for the
 * lowest readable one, receives one whole message (looping on short reads) or sees its end of
 * stream, until every connection ended.  It prints "ok <messages>" (the output has no race;
 * the order of receives does).  Exit status 0 on success, 1 on any error.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>

#define MAX_CLIENTS 64
#define MAX_SIZE 1024

static void die(const char *what)
{
    perror(what);
    exit(1);
}

int main(int argc, char **argv)
{
    int clients = argc > 1 ? atoi(argv[1]) : 16;
    long messages = argc > 2 ? atol(argv[2]) : 200;
    size_t size = argc > 3 ? (size_t)atol(argv[3]) : 32;
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    unsigned char buf[MAX_SIZE];
    int conns[MAX_CLIENTS];
    int lfd, i;

    if (clients < 1 || clients > MAX_CLIENTS || messages < 1 || size < 1 || size > MAX_SIZE) {
        fprintf(stderr, "usage: bench_selectloop [CLIENTS(1..64) [MESSAGES [SIZE(1..1024)]]]\n");
        return 1;
    }
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0)
        die("socket");
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, MAX_CLIENTS) < 0)
        die("bind/listen");
    if (getsockname(lfd, (struct sockaddr *)&a, &len) < 0)
        die("getsockname");
    for (i = 0; i < clients; i++) {
        pid_t pid = fork();
        if (pid < 0)
            die("fork");
        if (pid == 0) {
            int fd = socket(AF_INET, SOCK_STREAM, 0);
            close(lfd);
            if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
                die("connect");
            memset(buf, 'a' + i % 26, size);
            for (long m = 0; m < messages; m++) {
                size_t done = 0;
                while (done < size) {
                    ssize_t r = send(fd, buf + done, size - done, 0);
                    if (r <= 0)
                        die("send");
                    done += (size_t)r;
                }
            }
            close(fd);
            return 0;
        }
    }
    for (i = 0; i < clients; i++) {
        conns[i] = accept(lfd, NULL, NULL);
        if (conns[i] < 0 || conns[i] >= FD_SETSIZE)
            die("accept");
    }
    long got = 0;
    int open = clients;
    while (open > 0) {
        fd_set rfds;
        int maxfd = -1;
        FD_ZERO(&rfds);
        for (i = 0; i < clients; i++) {
            if (conns[i] >= 0) {
                FD_SET(conns[i], &rfds);
                if (conns[i] > maxfd)
                    maxfd = conns[i];
            }
        }
        if (select(maxfd + 1, &rfds, NULL, NULL, NULL) < 0)
            die("select");
        for (i = 0; i < clients; i++) {
            if (conns[i] >= 0 && FD_ISSET(conns[i], &rfds))
                break;
        }
        if (i == clients)
            continue;
        size_t done = 0;
        while (done < size) {
            ssize_t r = recv(conns[i], buf + done, size - done, 0);
            if (r < 0)
                die("recv");
            if (r == 0)
                break;
            done += (size_t)r;
        }
        if (done == 0) {
            close(conns[i]);
            conns[i] = -1;
            open--;
        } else if (done == size) {
            got++;
        } else {
            fprintf(stderr, "a message cut short\n");
            return 1;
        }
    }
    for (i = 0; i < clients; i++)
        if (wait(NULL) < 0)
            die("wait");
    printf("ok %ld\n", got);
    return 0;
}
