/*
 * epipe_halt: a send that finds its peer's end closed (EPIPE) is the only thing that orders
 * the peer's close before the sender's next events (vsftpd's session parent writes to a
 * client that has quit).
 *
 * The root makes a socketpair and forks a child, which reads one byte, pauses 0 or 3 ms (from
 * the CPU's cycle counter, not a recorded outcome), closes its end and ends. The root sends the byte, then sends one more byte each millisecond (SIGPIPE ignored)
 * until a send fails with EPIPE, sends itself a byte over a new socketpair, reaps the child
 * and prints how many sends went through before the close:
 *     sends before the close: 3
 * The count depends on when the child ran. In a halting replay stopped after the failed send,
 * the child has made its close.
 */
#include "common.h"
#include <signal.h>

int main(void)
{
    int sv[2], n = 0;
    char c;
    pid_t pid;

    program_start();
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        die("socketpair");
    pid = fork_or_die();
    if (pid == 0) {
        close_or_die(sv[0]);
        if (read_retry(sv[1], &c, 1) != 1)
            die("read");
        usleep(cycle_bit() ? 3000 : 0);
        close_or_die(sv[1]);
        _exit(0);
    }
    close_or_die(sv[1]);
    signal(SIGPIPE, SIG_IGN);
    write_all(sv[0], "x", 1);
    for (;;) {
        usleep(1000);
        if (send(sv[0], "y", 1, 0) < 0) {
            if (errno != EPIPE)
                die("send");
            break;
        }
        n++;
    }
    /* Events of the root's own that need nothing of the child: a halt stopped at them has
     * only the failed send to make the child run to its close. */
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        die("socketpair");
    write_all(sv[0], "z", 1);
    if (read_retry(sv[1], &c, 1) != 1)
        die("read");
    wait_ok(pid);
    printf("sends before the close: %d\n", n);
    return 0;
}
