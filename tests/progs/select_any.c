/*
 * select_any: which connection does select() report readable, and how are
 * the messages of three concurrent senders interleaved and split?
 *
 * The parent listens and forks 3 children.  Child i (1..3) connects, then
 * sends "c<i> m0\n", "c<i> m1\n", "c<i> m2\n" (random jitter before the
 * connect and before each send) and closes.  The parent accepts the 3
 * connections (conn1..conn3, numbered in accept order), then loops on
 * select() over the open ones, doing one read (4096-byte buffer) on each
 * readable connection, until all three reached EOF.  After reaping the
 * children it prints, in the order they happened, one line per read:
 *     read from conn2: c3 m0\nc3 m1\n
 *     eof on conn2
 * Race: accept order, readiness order, and how bytes are split into reads.
 *
 * poll_any.c is this program with poll() instead of select() (it defines
 * WAIT_WITH_POLL and includes this file).
 */
#include "common.h" /* the helpers every test program shares */

#ifdef WAIT_WITH_POLL
#define WAIT_READABLE wait_poll
#else
#define WAIT_READABLE wait_select
#endif

#define NCLIENTS 3

int main(void)
{
    int conn[NCLIENTS];
    pid_t pids[NCLIENTS];

    program_start();
    accept_numbered_clients(conn, pids, NCLIENTS);
    read_any_until_eof(conn, NCLIENTS, WAIT_READABLE);
    wait_all_ok(pids, NCLIENTS);
    print_log();
    return 0;
}
