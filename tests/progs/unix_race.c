/*
 * unix_race: accept race and receive-from-any over a Unix stream socket.
 *
 * The parent creates a fresh directory (mkdtemp, /tmp/ddbx-unix_race.XXXXXX),
 * listens on DIR/sock and forks 3 client children.  Each child sleeps a
 * random jitter, connects, sends "client <i>\n", waits for "ok\n", then sends
 * 3 messages "c<i> m<j>\n" with jitter in between and closes.  The parent
 * accepts 3 times (reading each client's first line and replying "ok\n"),
 * then reads from whichever connection select() reports readable until all
 * three reached EOF.  It removes the socket and the directory, reaps the
 * children and prints
 *     accepted: 2 1 3
 *     read from conn1: c2 m0\n
 *     ...
 *     eof on conn3
 * (connK = the K-th accepted connection).
 * Race: the accept order, which connection select() reports, how the
 * messages are split into reads (varies natively with DDBX_JITTER=5).
 */
#include "common.h" /* the helpers every test program shares */
#include <sys/un.h>

#define NCLIENTS 3

static void fill_unix(struct sockaddr_un *a, const char *path)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof a->sun_path)
        fail("socket path too long");
    strcpy(a->sun_path, path);
}

int main(void)
{
    char dir[] = "/tmp/ddbx-unix_race.XXXXXX";
    char path[sizeof dir + 8];
    struct sockaddr_un a;
    int lfd, i, conn[NCLIENTS], order[NCLIENTS];
    pid_t pids[NCLIENTS];

    program_start();
    if (!mkdtemp(dir))
        die("mkdtemp");
    snprintf(path, sizeof path, "%s/sock", dir);
    fill_unix(&a, path);
    lfd = listen_at(AF_UNIX, (struct sockaddr *)&a, sizeof a);
    if (lfd < 0)
        die("socket/bind");
    i = fork_clients(lfd, NCLIENTS, pids);
    if (i > 0) {
        client_start();
        numbered_client(connect_at(AF_UNIX, (struct sockaddr *)&a, sizeof a), i, 1);
    }
    for (i = 0; i < NCLIENTS; i++)
        conn[i] = accept_hello(lfd, NCLIENTS, &order[i]);
    close_or_die(lfd);
    if (unlink(path) < 0 || rmdir(dir) < 0)
        die("unlink/rmdir");
    read_any_until_eof(conn, NCLIENTS, wait_select);
    wait_all_ok(pids, NCLIENTS);
    print_order("accepted:", order, NCLIENTS);
    print_log();
    return 0;
}
