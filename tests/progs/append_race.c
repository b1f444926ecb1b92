/*
 * append_race LOG [stdout|stdio|locked|fopen|killed]: four children each write three lines into LOG,
 * which each opens for itself with O_APPEND (the log that every session process of a server
 * appends to); with `locked`, each line under a write lock on LOG (fcntl F_SETLKW, as vsftpd
 * locks its log); with `fopen`, LOG opened with fopen(LOG, "a") and each line written with
 * fprintf and fflush (as rsync writes its log); with `killed`, each child then waits in
 * pause() until the parent, once LOG holds all 12 lines, ends it with SIGTERM (a server
 * killed at the end of a script, after its last logged line); with `stdout`, into the parent's standard output redirected to LOG, one open file shared by
 * all (`./script >LOG`), with write(2); with `stdio`, the same with printf and fflush. The
 * children do not talk to each other: which one's line the file takes
 * first is a race (DDBX_JITTER). The parent reaps them, then prints LOG's lines.
 */
#include "common.h"

#define CHILDREN 4
#define LINES 3

/* Child `id`: its lines, written with write(2) into `fd` (or LOG opened with O_APPEND), or
 * with stdio into stdout. */
static void writer(int id, const char *log, int fd, int stdio, int locked, int killed)
{
    struct flock fl = {.l_whence = SEEK_SET};
    char line[64];
    FILE *f = NULL;
    int n;

    jitter_init();
    if (fd < 0 && stdio && !(f = fopen(log, "a")))
        die("fopen");
    if (f)
        fd = fileno(f);
    if (fd < 0 && (fd = open(log, O_WRONLY | O_APPEND)) < 0)
        die("open");
    for (int j = 1; j <= LINES; j++) {
        jitter();
        fl.l_type = F_WRLCK;
        if (locked && fcntl(fd, F_SETLKW, &fl) < 0)
            die("fcntl");
        if (locked)
            jitter();
        n = snprintf(line, sizeof line, "child %d line %d\n", id, j);
        if (stdio) {
            if (fputs(line, f ? f : stdout) == EOF || fflush(f ? f : stdout) == EOF)
                die("fputs");
        } else if (write(fd, line, (size_t)n) != n) {
            die("write");
        }
        fl.l_type = F_UNLCK;
        if (locked && fcntl(fd, F_SETLK, &fl) < 0)
            die("fcntl");
    }
    while (killed)
        pause();
    _exit(0);
}

/* Waits until LOG holds `lines` lines (the children's writes are not events the parent could
 * wait for), reading it with read(2). */
static void wait_for_lines(const char *log, int lines)
{
    char buf[4096];
    int fd, n, seen;

    for (;;) {
        if ((fd = open(log, O_RDONLY)) < 0)
            die("open");
        seen = 0;
        while ((n = (int)read(fd, buf, sizeof buf)) > 0)
            for (int i = 0; i < n; i++)
                seen += buf[i] == '\n';
        close_or_die(fd);
        if (seen >= lines)
            return;
        usleep(1000);
    }
}

int main(int argc, char **argv)
{
    pid_t pids[CHILDREN];
    int shared, stdio, locked, fopened, killed, fd, out = -1;
    char line[64];
    FILE *f;

    program_start();
    if (argc < 2) {
        fprintf(stderr, "usage: append_race LOG [stdout|stdio|locked|fopen|killed]\n");
        return 2;
    }
    fopened = argc > 2 && strcmp(argv[2], "fopen") == 0;
    stdio = fopened || (argc > 2 && strcmp(argv[2], "stdio") == 0);
    locked = argc > 2 && strcmp(argv[2], "locked") == 0;
    killed = argc > 2 && strcmp(argv[2], "killed") == 0;
    shared = (stdio && !fopened) || (argc > 2 && strcmp(argv[2], "stdout") == 0);
    if ((fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
        die("open");
    fflush(stdout);
    if (shared && ((out = dup(1)) < 0 || dup2(fd, 1) < 0))
        die("dup");
    close_or_die(fd);
    for (int i = 0; i < CHILDREN; i++) {
        if ((pids[i] = fork()) < 0)
            die("fork");
        if (pids[i] == 0)
            writer(i + 1, argv[1], shared ? 1 : -1, stdio, locked, killed);
    }
    if (killed) {
        wait_for_lines(argv[1], CHILDREN * LINES);
        for (int i = 0; i < CHILDREN; i++)
            if (kill(pids[i], SIGTERM) < 0)
                die("kill");
        for (int i = 0; i < CHILDREN; i++)
            if (waitpid(pids[i], NULL, 0) < 0)
                die("waitpid");
    } else {
        wait_all_ok(pids, CHILDREN);
    }
    if (shared && (dup2(out, 1) < 0 || close(out) < 0))
        die("dup2");
    if (!(f = fopen(argv[1], "r")))
        die("fopen");
    while (fgets(line, sizeof line, f))
        fputs(line, stdout);
    fclose(f);
    return 0;
}
