/*
 * peer_bytes DIR [ROUNDS]: how many lines of the recording in DIR (a `ddbx record -o DIR` of
 * this program) keep the bytes of a receive or send, read while the program still runs.
 *
 * The parent listens on 127.0.0.1 and forks a child that connects; they do ROUNDS (default
 * 50) round trips of 8 bytes (the child sends, the parent answers). Both ends are recorded,
 * so the LD keeps none of these bytes (preload/src/record/peers.rs). After reaping the
 * child, the parent counts the lines of DIR/history/ *.ron that hold `data:`, before the end of
 * the record could drop any, and prints `kept N`. Before that, right after closing the
 * connection, it opens itself until the open gets the connection's old number and reads 4
 * bytes from it there (a file: no event). No race in the output beyond that count.
 */
#include "common.h" /* the helpers every test program shares */

#include <dirent.h>

static long kept_lines(const char *dir)
{
    char path[4096], line[8192];
    struct dirent *e;
    long kept = 0;
    DIR *d;

    snprintf(path, sizeof path, "%s/history", dir);
    d = opendir(path);
    if (!d)
        die("opendir");
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        FILE *f;

        if (len < 4 || strcmp(e->d_name + len - 4, ".ron") != 0)
            continue;
        snprintf(path, sizeof path, "%s/history/%s", dir, e->d_name);
        f = fopen(path, "r");
        if (!f)
            die("fopen");
        while (fgets(line, sizeof line, f))
            if (strstr(line, "data:"))
                kept++;
        fclose(f);
    }
    closedir(d);
    return kept;
}

/* Opens path (this program) until the open gets number fd, the connection just closed, and
 * reads its first 4 bytes from that number: a file, whose reads are not recorded. */
static void reuse_number(const char *path, int fd)
{
    int opened[8], n = 0, got = -1;
    char magic[4];

    while (n < 8 && got != fd) {
        got = open(path, O_RDONLY);
        if (got < 0)
            die("open");
        opened[n++] = got;
    }
    if (got != fd)
        fail("parent: the connection's number was not reused");
    if (read(fd, magic, 4) != 4 || memcmp(magic, "\177ELF", 4) != 0)
        fail("parent: not an ELF file");
    while (n > 0)
        close_or_die(opened[--n]);
}

int main(int argc, char **argv)
{
    long rounds = argc > 2 ? strtol(argv[2], NULL, 10) : 50;
    unsigned char buf[8];
    int lfd, fd, port;
    pid_t child;
    long i;

    if (argc < 2 || rounds < 1)
        fail("usage: peer_bytes DIR [ROUNDS]");
    lfd = bind_any(&port, 1);
    if (fork_clients(lfd, 1, &child)) {
        fd = connect_to(port);
        for (i = 0; i < rounds; i++) {
            memset(buf, (int)(i & 0xff), sizeof buf);
            send_all(fd, buf, sizeof buf);
            if (recv_all(fd, buf, sizeof buf) != sizeof buf)
                fail("child: unexpected EOF");
        }
        close_or_die(fd);
        _exit(0);
    }
    fd = accept_last(lfd);
    for (i = 0; i < rounds; i++) {
        if (recv_all(fd, buf, sizeof buf) != sizeof buf)
            fail("parent: unexpected EOF");
        send_all(fd, buf, sizeof buf);
    }
    close_or_die(fd);
    reuse_number(argv[0], fd);
    wait_ok(child);
    printf("kept %ld\n", kept_lines(argv[1]));
    return 0;
}
