/*
 * client_a (Figure 1, p1): usage: client_a [DIR]
 *
 * Without DIR it is the whole scenario (what ./run starts): it makes a temp
 * dir, starts client_b and then server_x (posix_spawn, each with its stdout in
 * DIR/NAME.out, taken from client_a's own directory), and becomes the client
 * itself. So under ddbx the actors are numbered as in the paper: p1 client_a,
 * p2 client_b (client_a waits for DIR/client_b.started before starting
 * server_x), p3 server_x, p4 the server_x child that greets the first client
 * accepted. When all are done it prints their outputs in a fixed order
 * (client_a, client_b, server_x sorted, server_y), removes the temp dir and
 * exits 0, or 1 if any of them failed.
 *
 * As the client (with DIR: only that): waits for DIR/server_x.port, connects
 * to server_x and reads its child's greeting; then (as launcher) starts
 * server_y, so that server_y is created after that child; waits for
 * DIR/server_y.port, connects to server_y, and sends "client_a\n" on both
 * (random jitter before each connect and each send).  Then it waits on BOTH
 * sockets at once with select(), and prints which server replied first (if
 * select() reports both readable, server_x counts as first), reads that
 * reply, then reads the other one:
 *     client_a: first reply from server_y
 *     client_a: server_y says: server_y serves client_a
 *     client_a: server_x says: server_x child 2 serves client_a
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <spawn.h>
#include <dirent.h>

#define UNUSED __attribute__((unused))

#include "figure1.h" /* the helpers the four programs share */
#include <sys/select.h>
#include "ddbx.h" /* ddbx_set: publishes x for `ddbx replay --stop-if` (a no-op without ddbx) */


extern char **environ;

/* qsort's comparison of two lines (byte order, as LC_ALL=C sort). */
static int compare_lines(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Opens DIR/NAME.out for writing. */
static int open_out(const char *dir, const char *name)
{
    char path[4096];
    int fd;

    snprintf(path, sizeof path, "%s/%s.out", dir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        die("open output file");
    return fd;
}

static const char *names[2] = { "server_x", "server_y" };

/* The directory of argv[0] (where the other programs are), "." if none. */
static char bin_dir[2048];

/* Starts bin_dir/NAME DIR with its stdout in DIR/NAME.out; returns its pid. */
static pid_t start(const char *dir, const char *name)
{
    char prog[4096], out[4096];
    char *argv[3];
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int err;

    snprintf(prog, sizeof prog, "%s/%s", bin_dir, name);
    snprintf(out, sizeof out, "%s/%s.out", dir, name);
    argv[0] = prog;
    argv[1] = (char *)dir;
    argv[2] = NULL;
    if (posix_spawn_file_actions_init(&fa) != 0 ||
        posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644) != 0)
        fail("posix_spawn_file_actions");
    err = posix_spawn(&pid, prog, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (err != 0) {
        errno = err;
        die(prog);
    }
    return pid;
}

/* The client's work (see the top of the file); `launch`: start server_y on the way. */
static void client(const char *dir, int launch, pid_t *server_y)
{
    char reply[512];
    int fds[2], i, first, r;
    fd_set rfds;

    for (i = 0; i < 2; i++) {
        int port = read_port_file(dir, names[i]);
        jitter();
        fds[i] = connect_to(port);
        if (fds[i] >= FD_SETSIZE)
            fail("fd too large for select");
        if (i == 0) {
            read_line(fds[0], reply, sizeof reply); /* server_x's child greets us */
            if (launch)
                *server_y = start(dir, "server_y");
        }
    }
    for (i = 0; i < 2; i++) {
        jitter();
        write_str(fds[i], "client_a\n");
    }
    for (;;) {
        FD_ZERO(&rfds);
        FD_SET(fds[0], &rfds);
        FD_SET(fds[1], &rfds);
        r = select((fds[0] > fds[1] ? fds[0] : fds[1]) + 1, &rfds, NULL, NULL,
                   NULL);
        if (r > 0)
            break;
        if (r < 0 && errno != EINTR)
            die("select");
    }
    first = FD_ISSET(fds[0], &rfds) ? 0 : 1;
    printf("client_a: first reply from %s\n", names[first]);
    for (i = 0; i < 2; i++) {
        int s = i == 0 ? first : 1 - first;
        read_line(fds[s], reply, sizeof reply);
        chomp(reply);
        printf("client_a: %s says: %s\n", names[s], reply);
        if (s == 1)
            ddbx_set("x", 1); /* the paper's x1: server_y has answered */
        if (close(fds[s]) < 0)
            die("close");
    }
}

/* Copies DIR/NAME.out to stdout (its lines sorted if `sorted`); 0 if it could not be read. */
static int print_output(const char *dir, const char *name, int sorted)
{
    static char text[65536];
    char path[4096], *lines[256];
    size_t n, count = 0, i;
    int fd;

    snprintf(path, sizeof path, "%s/%s.out", dir, name);
    fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    n = read_to_eof(fd, text, sizeof text);
    close(fd);
    if (n >= sizeof text)
        n = sizeof text - 1;
    text[n] = '\0';
    for (char *line = strtok(text, "\n"); line && count < 256; line = strtok(NULL, "\n"))
        lines[count++] = line;
    if (sorted)
        qsort(lines, count, sizeof lines[0], compare_lines);
    for (i = 0; i < count; i++)
        printf("%s\n", lines[i]);
    return 1;
}

/* Removes DIR and what the programs left in it. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4096];

    if (d) {
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* The whole scenario (no DIR): start the others, be the client, print every output. */
static int launch(void)
{
    const char *tmp = getenv("TMPDIR");
    char dir[2048];
    pid_t kids[3];
    int saved, out, i, status = 0;

    snprintf(dir, sizeof dir, "%s/figure1.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        die("mkdtemp");
    kids[0] = start(dir, "client_b");
    wait_started(dir, "client_b"); /* client_b is p2 before server_x is p3 */
    kids[1] = start(dir, "server_x");
    /* client_a's own lines go to DIR/client_a.out, like the others'. */
    saved = dup(1);
    out = open_out(dir, "client_a");
    if (saved < 0 || dup2(out, 1) < 0)
        die("dup");
    close(out);
    client(dir, 1, &kids[2]);
    fflush(stdout);
    if (dup2(saved, 1) < 0)
        die("dup2");
    close(saved);
    for (i = 0; i < 3; i++) {
        int st = wait_raw(kids[i]);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            status = 1;
    }
    print_output(dir, "client_a", 0);
    print_output(dir, "client_b", 0);
    /* server_x's two children both write to server_x.out; the order of their lines depends
     * on timing, not on a race outcome, so it is printed sorted (by child number). */
    print_output(dir, "server_x", 1);
    print_output(dir, "server_y", 0);
    remove_dir(dir);
    return status;
}

int main(int argc, char **argv)
{
    const char *slash = strrchr(argv[0], '/');

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 2)
        fail("usage: client_a [DIR]");
    if (slash)
        snprintf(bin_dir, sizeof bin_dir, "%.*s", (int)(slash - argv[0]), argv[0]);
    else
        snprintf(bin_dir, sizeof bin_dir, ".");
    jitter_init();
    if (argc == 1)
        return launch();
    client(argv[1], 0, NULL);
    return 0;
}
