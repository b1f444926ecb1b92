/*
 * pair_race: which of two children, each talking to the parent through a stream socketpair of
 * its own, the parent's poll() reports first (issue #10, class 3: socketpair channels, as
 * nginx's master and workers have).
 *
 * The parent makes two socketpairs and forks child i (1..2), which closes the parent's end,
 * sends "c<i> m<j>\n" for j = 0..2 (a jitter before each) and exits.  The parent closes the
 * children's ends and polls both until both reached their end, reading once per reported
 * end.  After reaping the children it prints, in the order they happened, one line per read:
 *     c<i>: <data, \n escaped>
 *     c<i>: end
 * Race: the order and grouping of the children's messages.
 */
#include "common.h" /* the helpers every test program shares */

#define NCHILD 2

int main(void)
{
    int sv[NCHILD][2], i, open_count = NCHILD;
    pid_t pids[NCHILD];

    program_start();
    for (i = 0; i < NCHILD; i++) {
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]) < 0)
            die("socketpair");
    }
    for (i = 0; i < NCHILD; i++) {
        pids[i] = fork_or_die();
        if (pids[i] == 0) {
            char msg[32];
            int j;

            jitter_init();
            for (j = 0; j < NCHILD; j++)
                close_or_die(sv[j][0]);
            for (j = 0; j < 3; j++) {
                jitter();
                snprintf(msg, sizeof msg, "c%d m%d\n", i + 1, j);
                write_str(sv[i][1], msg);
            }
            exit(0);
        }
    }
    for (i = 0; i < NCHILD; i++)
        close_or_die(sv[i][1]);
    while (open_count > 0) {
        struct pollfd p[NCHILD];
        int r;

        for (i = 0; i < NCHILD; i++) {
            p[i].fd = sv[i][0];
            p[i].events = POLLIN;
            p[i].revents = 0;
        }
        r = poll(p, NCHILD, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            die("poll");
        for (i = 0; i < NCHILD; i++) {
            char buf[128], text[512];
            ssize_t n;

            if (!p[i].revents)
                continue;
            n = read_retry(sv[i][0], buf, sizeof buf);
            if (n < 0)
                die("read");
            if (n == 0) {
                log_line("c%d: end", i + 1);
                close_or_die(sv[i][0]);
                sv[i][0] = -1;
                open_count--;
                continue;
            }
            escape(buf, (size_t)n, text);
            log_line("c%d: %s", i + 1, text);
        }
    }
    wait_all_ok(pids, NCHILD);
    print_log();
    return 0;
}
