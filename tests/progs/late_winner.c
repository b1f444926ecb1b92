/*
 * late_winner: a bug that shows only when a message that always loses its race wins it.
 *
 * The parent listens on 127.0.0.1 and forks two clients. Client 1 connects at once; client 2
 * first spends 300 ms starting up (it sleeps), then connects. Each sends "client <i>\n" and
 * waits for "ok\n". The parent accepts both and publishes which came first (probe `first`,
 * see ddbx.h). Its bug: it assumes client 2 is never accepted first; when it is, it prints
 * "bug: client 2 came first" on stderr and exits 3. Otherwise it prints "accepted: 1 2" and
 * exits 0. Natively client 2 loses the accept race every time (it starts 300 ms late);
 * `ddbx explore` makes it win by holding client 1's connect until the parent's accept has
 * taken client 2.
 */
#include "common.h" /* the helpers every test program shares */
#include "ddbx.h"

int main(void)
{
    int port, lfd, i, order[2];
    pid_t pids[2];

    program_start();
    lfd = bind_any(&port, 2);
    i = fork_clients(lfd, 2, pids);
    if (i > 0) {
        int fd;

        client_start();
        if (i == 2)
            usleep(300 * 1000); /* the slow start: this client loses the race natively */
        fd = connect_to(port);
        client_hello(fd, i);
        close_or_die(fd);
        exit(0);
    }
    for (i = 0; i < 2; i++)
        close_or_die(accept_hello(lfd, 2, &order[i]));
    close_or_die(lfd);
    wait_all_ok(pids, 2);
    ddbx_set("first", order[0]);
    if (order[0] == 2) {
        fprintf(stderr, "bug: client 2 came first\n");
        return 3;
    }
    print_order("accepted:", order, 2);
    return 0;
}
