/*
 * race_three: one select() over three senders: which of them does it report?
 *
 * The parent makes three listening sockets (one per child, so that no accept
 * has a choice: no accept race) and forks 3 children.  Child i (1..3)
 * connects to listener i, sleeps a random jitter and sends the 3 bytes
 * "c<i>\n", then waits for EOF and exits.  The parent accepts the 3
 * connections (in child order), does ONE select() over the three, reads the
 * message of every reported connection (recv MSG_WAITALL, 3 bytes), then
 * reads the others with blocking recv in child order, closes everything and
 * reaps the children.  It prints
 *     reported: c2 c3
 *     order: c2 c3 c1
 * Race (exactly one, paper 004's <r, M> with |M| = 3): which connections the
 * select reports.  It is the receiver's first (locally-first) race and no
 * other race affects it (unaffected).
 */
#include "common.h" /* the helpers every test program shares */

#define N 3
#define MSG 3

static void child(int port, int id)
{
    char msg[MSG + 1], buf[16];
    int fd;

    jitter_init();
    fd = connect_to(port);
    jitter();
    snprintf(msg, sizeof msg, "c%d\n", id);
    write_all(fd, msg, MSG);
    while (read(fd, buf, sizeof buf) > 0)
        ;
    exit(0);
}

static void recv_msg(int fd, char *buf)
{
    if (recv_waitall(fd, buf, MSG) != MSG)
        fail("short message");
    buf[MSG - 1] = '\0';
}

int main(void)
{
    int lfd[N], port[N], conn[N], ready[N], i;
    pid_t pids[N];
    char got[N][MSG + 1], order[64] = "", reported[64] = "";

    program_start();
    for (i = 0; i < N; i++)
        lfd[i] = bind_any(&port[i], 1);
    i = fork_clients(-1, N, pids); /* -1: the children keep the listeners open */
    if (i > 0)
        child(port[i - 1], i);
    for (i = 0; i < N; i++)
        conn[i] = accept_one(lfd[i]);
    while (!wait_select(conn, N, ready))
        ;
    for (i = 0; i < N; i++) {
        if (!ready[i])
            continue;
        recv_msg(conn[i], got[i]);
        strcat(reported, " ");
        strcat(reported, got[i]);
        strcat(order, " ");
        strcat(order, got[i]);
    }
    for (i = 0; i < N; i++) {
        if (ready[i])
            continue;
        recv_msg(conn[i], got[i]);
        strcat(order, " ");
        strcat(order, got[i]);
    }
    for (i = 0; i < N; i++) {
        if (close(conn[i]) < 0 || close(lfd[i]) < 0)
            die("close");
    }
    wait_all_ok(pids, N);
    printf("reported:%s\n", reported);
    printf("order:%s\n", order);
    return 0;
}
