/*
 * reset_unsent: a client's close resets its connection (it leaves bytes unread), while some of
 * what it sent is still held back by Nagle's algorithm: the kernel drops those bytes, so how
 * many the server gets depends on timing (mosquitto_sub, leaving with a broker's message unread,
 * lost its last acknowledgements that way in some replays and not in the record).
 *
 * The root listens, forks the client and accepts it. The client sends 40 one-byte warm-up
 * messages a millisecond apart, which the server reads (its kernel leaves quick-ack mode and
 * delays its ACKs from then on); the server sends 16 bytes the client waits for (FIONREAD)
 * and never reads; the client sends 8 four-byte messages and 2 more bytes, and closes, while
 * the server waits for it to end (reading nothing: nothing makes its kernel ACK early). Each
 * run, the client picks from the CPU's cycle counter (not a recorded outcome: record and
 * replay differ) whether it pauses 60 ms before each message (each gets through before the
 * next) or not (all but the first wait for an ACK that is delayed past the close, and are
 * lost). The server then reads
 * one byte at a time until the end and prints
 *     got 34 of 34 bytes, then a reset
 * (or `got 4 of 34 …`).
 */
#include "common.h"
#include <sys/ioctl.h>

#define WARM_UP 40
#define MESSAGES 8
#define TOTAL (MESSAGES * 4 + 2)

static void client(int port)
{
    int fd = connect_to(port), i, slow = cycle_bit(), unread = 0;

    for (i = 0; i < WARM_UP; i++) {
        write_all(fd, "w", 1);
        usleep(1000);
    }
    /* The server's bytes are there, unread (FIONREAD: nothing reads them, ddbx included). */
    while (unread < 16) {
        if (ioctl(fd, FIONREAD, &unread) < 0)
            die("FIONREAD");
        usleep(1000);
    }
    for (i = 0; i < MESSAGES; i++) {
        if (slow)
            usleep(60000);
        write_all(fd, "ack!", 4);
    }
    if (slow)
        usleep(60000);
    write_all(fd, "\xe0\x00", 2);
    close_or_die(fd);
    exit(0);
}

int main(void)
{
    int port, lfd, fd, got = 0;
    pid_t pid;
    char c;
    ssize_t n;

    program_start();
    lfd = bind_any(&port, 1);
    pid = fork_or_die();
    if (pid == 0)
        client(port);
    fd = accept_one(lfd);
    for (int i = 0; i < WARM_UP; i++)
        if (read_retry(fd, &c, 1) != 1)
            die("warm-up");
    write_all(fd, "sixteen bytes...", 16);
    wait_ok(pid);
    while ((n = read(fd, &c, 1)) == 1)
        got++;
    printf("got %d of %d bytes, then %s\n", got, TOTAL,
           n == 0 ? "the end" : errno == ECONNRESET ? "a reset" : strerror(errno));
    return 0;
}
