// link: -l:libcrypto.so.3
/*
 * openssl_rand: random ids drawn with OpenSSL's RAND_bytes (whose generator
 * mixes the CPU's time stamp counter into each draw), beside an accept race.
 *
 * The root listens on 127.0.0.1 (kernel-chosen port) and forks 3 clients; each
 * draws a 4-byte id with RAND_bytes (as ldns's drill draws DNS query ids), and
 * after a random delay sends "<id in hex>\n".  The root accepts them and
 * prints, in accept order,
 *     client K: id XXXXXXXX
 * (K: accept rank).  Natively the ids differ in every run.
 */
#include "common.h"

/* OpenSSL's, declared here so that only the run-time library is needed. */
int RAND_bytes(unsigned char *buf, int num);

int main(void)
{
    int lfd, port, i, fd;
    pid_t pids[3];
    unsigned char id[4];
    char line[64];

    program_start();
    lfd = bind_any(&port, 3);
    i = fork_clients(lfd, 3, pids);
    if (i) {
        if (RAND_bytes(id, sizeof id) != 1)
            fail("RAND_bytes");
        snprintf(line, sizeof line, "%02x%02x%02x%02x\n", id[0], id[1], id[2], id[3]);
        client_start();
        fd = connect_to(port);
        write_str(fd, line);
        close_or_die(fd);
        exit(0);
    }
    for (i = 0; i < 3; i++) {
        fd = accept_one(lfd);
        read_line(fd, line, sizeof line);
        close_or_die(fd);
        printf("client %d: id %s", i + 1, line);
    }
    close_or_die(lfd);
    wait_all_ok(pids, 3);
    return 0;
}
