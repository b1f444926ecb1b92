/*
 * clone_fork: clients made by the raw clone system call, as a fork (what vsftpd
 * does for each FTP session: syscall(__NR_clone, flags | SIGCHLD, NULL), which
 * bypasses libc's fork and its fork handlers).
 *
 * The root listens on 127.0.0.1 (kernel-chosen port) and makes 3 clients with
 * syscall(SYS_clone, SIGCHLD, 0); each sends its hello after a random delay.
 * The root accepts them, reaps them and prints
 *     accepted: I J K
 * (the accept order: a race).
 */
#include "common.h"
#include <sys/syscall.h>

int main(void)
{
    int lfd, port, i, fd, id, order[3];
    pid_t pids[3];

    program_start();
    lfd = bind_any(&port, 3);
    for (i = 0; i < 3; i++) {
        pids[i] = (pid_t)syscall(SYS_clone, SIGCHLD, 0);
        if (pids[i] < 0)
            die("clone");
        if (pids[i] == 0) {
            close_or_die(lfd);
            client_start();
            fd = connect_to(port);
            client_hello(fd, i + 1);
            close_or_die(fd);
            exit(0);
        }
    }
    for (i = 0; i < 3; i++) {
        fd = accept_hello(lfd, 3, &id);
        order[i] = id;
        close_or_die(fd);
    }
    close_or_die(lfd);
    wait_all_ok(pids, 3);
    print_order("accepted:", order, 3);
    return 0;
}
