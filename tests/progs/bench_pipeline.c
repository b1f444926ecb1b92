/*
 * bench_pipeline [MESSAGES [STAGES [SIZE]]]: a race-light pipeline for the tracing benchmark
 * (BENCHMARKS.md, ddbx/benches/tracing.rs).
 *
 * The first process forks STAGES-1 children (default 4 stages in all) chained over loopback
 * TCP: stage 0 sends MESSAGES (default 20000) messages of SIZE (default 64) bytes to stage 1,
 * every middle stage receives each message whole (looping on short reads), adds 1 to every
 * byte and forwards it, and the last stage sums what it gets and prints "ok <sum>".  Blocking
 * send()/recv(); no readiness calls; no race in the output.  Exit status 0 on success, 1 on
 * any error (message on stderr).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>

#define MAX_STAGES 16
#define MAX_SIZE 4096

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static void send_all(int fd, const unsigned char *buf, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = send(fd, buf + done, n - done, 0);
        if (r <= 0)
            die("send");
        done += (size_t)r;
    }
}

static int recv_all(int fd, unsigned char *buf, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = recv(fd, buf + done, n - done, 0);
        if (r < 0)
            die("recv");
        if (r == 0)
            return 0;
        done += (size_t)r;
    }
    return 1;
}

int main(int argc, char **argv)
{
    long messages = argc > 1 ? atol(argv[1]) : 20000;
    int stages = argc > 2 ? atoi(argv[2]) : 4;
    size_t size = argc > 3 ? (size_t)atol(argv[3]) : 64;
    int listeners[MAX_STAGES];
    unsigned short ports[MAX_STAGES];
    unsigned char buf[MAX_SIZE];
    int stage, one = 1;

    if (stages < 2 || stages > MAX_STAGES || size == 0 || size > MAX_SIZE || messages < 1) {
        fprintf(stderr, "usage: bench_pipeline [MESSAGES [STAGES(2..16) [SIZE(1..4096)]]]\n");
        return 1;
    }
    /* Every stage but the first listens; all listen before anyone forks. */
    for (stage = 1; stage < stages; stage++) {
        struct sockaddr_in a;
        socklen_t len = sizeof a;
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
            die("socket");
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 1) < 0)
            die("bind/listen");
        if (getsockname(fd, (struct sockaddr *)&a, &len) < 0)
            die("getsockname");
        listeners[stage] = fd;
        ports[stage] = a.sin_port;
    }
    for (stage = 1; stage < stages; stage++) {
        pid_t pid = fork();
        if (pid < 0)
            die("fork");
        if (pid == 0)
            break;
    }
    if (stage == stages)
        stage = 0;

    int in = -1, out = -1;
    if (stage > 0) {
        in = accept(listeners[stage], NULL, NULL);
        if (in < 0)
            die("accept");
    }
    if (stage < stages - 1) {
        struct sockaddr_in a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = ports[stage + 1];
        out = socket(AF_INET, SOCK_STREAM, 0);
        if (out < 0 || connect(out, (struct sockaddr *)&a, sizeof a) < 0)
            die("connect");
        setsockopt(out, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    unsigned long sum = 0;
    for (long m = 0; m < messages; m++) {
        if (stage == 0) {
            memset(buf, (int)(m & 0xff), size);
        } else if (!recv_all(in, buf, size)) {
            fprintf(stderr, "stage %d: early end of stream\n", stage);
            return 1;
        }
        if (out >= 0) {
            for (size_t i = 0; i < size; i++)
                buf[i]++;
            send_all(out, buf, size);
        } else {
            for (size_t i = 0; i < size; i++)
                sum += buf[i];
        }
    }
    if (out >= 0)
        close(out);
    if (stage == 0) {
        for (int s = 1; s < stages; s++)
            if (wait(NULL) < 0)
                die("wait");
    }
    if (stage == stages - 1)
        printf("ok %lu\n", sum);
    return 0;
}
