/*
 * pipe_race [shared]: which of two children, each writing to the parent through a pipe of its
 * own, the parent's poll() reports first (issue #10, class 6: pipes as channels).  With
 * `shared`, both children write into one pipe: how their messages interleave and group.
 *
 * The parent makes two pipes (one with `shared`) and forks child i (1..2), which closes the
 * read ends, writes "c<i> m<j>\n" for j = 0..2 (a jitter before each) and exits.  The parent
 * closes the write ends and polls the read ends until each reached its end, reading once per
 * reported end.  After reaping the children it prints, in the order they happened, one line
 * per read:
 *     p<k>: <data, \n escaped>
 *     p<k>: end
 * (k: the pipe, 1..2).  Race: the order and grouping of the children's messages.
 */
#include "common.h" /* the helpers every test program shares */

#define NCHILD 2

int main(int argc, char **argv)
{
    int pipes[NCHILD][2], i, npipes, open_count;
    pid_t pids[NCHILD];

    program_start();
    npipes = (argc > 1 && strcmp(argv[1], "shared") == 0) ? 1 : NCHILD;
    open_count = npipes;
    for (i = 0; i < npipes; i++) {
        if (pipe(pipes[i]) < 0)
            die("pipe");
    }
    for (i = 0; i < NCHILD; i++) {
        pids[i] = fork_or_die();
        if (pids[i] == 0) {
            char msg[32];
            int j, out = pipes[npipes == 1 ? 0 : i][1];

            jitter_init();
            for (j = 0; j < npipes; j++)
                close_or_die(pipes[j][0]);
            for (j = 0; j < 3; j++) {
                jitter();
                snprintf(msg, sizeof msg, "c%d m%d\n", i + 1, j);
                write_str(out, msg);
            }
            exit(0);
        }
    }
    for (i = 0; i < npipes; i++)
        close_or_die(pipes[i][1]);
    while (open_count > 0) {
        struct pollfd p[NCHILD];
        int r;

        for (i = 0; i < npipes; i++) {
            p[i].fd = pipes[i][0];
            p[i].events = POLLIN;
            p[i].revents = 0;
        }
        r = poll(p, (nfds_t)npipes, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            die("poll");
        for (i = 0; i < npipes; i++) {
            char buf[128], text[512];
            ssize_t n;

            if (!p[i].revents)
                continue;
            n = read_retry(pipes[i][0], buf, sizeof buf);
            if (n < 0)
                die("read");
            if (n == 0) {
                log_line("p%d: end", i + 1);
                close_or_die(pipes[i][0]);
                pipes[i][0] = -1;
                open_count--;
                continue;
            }
            escape(buf, (size_t)n, text);
            log_line("p%d: %s", i + 1, text);
        }
    }
    wait_all_ok(pids, NCHILD);
    print_log();
    return 0;
}
