/*
 * temp_names DIR: randomness and a clock that glibc reads inside itself (past the getrandom
 * and clock_gettime hooks): the names of temporary files and directories, arc4random's
 * numbers, and clock()'s processor time.
 *
 * Makes, in DIR, a file with mkstemp, one with mkostemp (O_APPEND), one with mkstemps (suffix
 * ".txt"), and a directory with mkdtemp, and prints each name's random part
 * and whether the file or directory is there (and the mkostemp file's O_APPEND); then
 * arc4random, arc4random_uniform(1000) and 8 bytes of arc4random_buf, and clock() (µs of
 * processor time, other in every run); then 4 random bytes and the realtime clock's
 * nanoseconds asked for through syscall(). It removes what it made.
 */
#include "common.h"
#include <sys/stat.h>
#include <time.h>
#include <sys/syscall.h>

static void show(const char *what, const char *path, const char *tail)
{
    struct stat st;

    printf("%s %s %s\n", what, tail, stat(path, &st) == 0 ? "there" : "missing");
}

int main(int argc, char **argv)
{
    char a[4096], b[4096], c[4096], d[4096];
    unsigned char bytes[8];
    int fa, fb, fc, i;

    program_start();
    if (argc < 2)
        fail("usage: temp_names DIR");
    snprintf(a, sizeof a, "%s/a-XXXXXX", argv[1]);
    snprintf(b, sizeof b, "%s/b-XXXXXX", argv[1]);
    snprintf(c, sizeof c, "%s/c-XXXXXX.txt", argv[1]);
    snprintf(d, sizeof d, "%s/d-XXXXXX", argv[1]);
    if ((fa = mkstemp(a)) < 0 || (fb = mkostemp(b, O_APPEND)) < 0 || (fc = mkstemps(c, 4)) < 0)
        die("mkstemp");
    if (mkdtemp(d) == NULL)
        die("mkdtemp");
    show("mkstemp", a, strrchr(a, '-'));
    show("mkostemp", b, strrchr(b, '-'));
    printf("mkostemp O_APPEND %s\n", fcntl(fb, F_GETFL) & O_APPEND ? "set" : "unset");
    show("mkstemps", c, strrchr(c, '-'));
    show("mkdtemp", d, strrchr(d, '-'));
    printf("arc4random %u\n", arc4random());
    printf("arc4random_uniform %u\n", arc4random_uniform(1000));
    arc4random_buf(bytes, sizeof bytes);
    printf("arc4random_buf");
    for (i = 0; i < (int)sizeof bytes; i++)
        printf(" %02x", bytes[i]);
    printf("\n");
    printf("clock %ld\n", (long)clock());
    {
        struct timespec ts;
        unsigned int r = 0;

        if (syscall(SYS_getrandom, &r, sizeof r, 0) != sizeof r || syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts) != 0)
            die("syscall");
        printf("syscall getrandom %u, clock_gettime ns %ld\n", r, (long)ts.tv_nsec);
    }
    close_or_die(fa);
    close_or_die(fb);
    close_or_die(fc);
    if (unlink(a) < 0 || unlink(b) < 0 || unlink(c) < 0 || rmdir(d) < 0)
        die("unlink");
    return 0;
}
