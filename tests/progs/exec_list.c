/*
 * exec_list: execl, execle and execlp (whose arguments are a variadic list) with argument lists
 * long enough to be passed partly on the stack, and an execl that fails.
 *
 * The root forks three children one after the other and waits for each:
 *     1. execl(self, self, "show", "a1", …, "a9", NULL)
 *     2. execle(self, self, "show", "b1", …, "b7", NULL, envp) with envp = { "EXEC_LIST=env" }
 *     3. execlp("exec_list", …) found through PATH=<dir of self>, with "c1", …, "c8"
 * Each image prints "show: ARGS... [EXEC_LIST=…]". Then the root calls execl on a path that does
 * not exist and prints "execl failed: ENOENT" when it returns -1 with that errno.
 */
#include "common.h"


int main(int argc, char **argv)
{
    char dir[4096], *slash;
    char *env[] = { "EXEC_LIST=env", NULL };
    const char *self = argv[0];
    int i;

    program_start();
    if (argc > 1 && strcmp(argv[1], "show") == 0) {
        const char *e = getenv("EXEC_LIST");

        printf("show:");
        for (i = 2; i < argc; i++)
            printf(" %s", argv[i]);
        printf(" [EXEC_LIST=%s]\n", e ? e : "unset");
        return 0;
    }
    if (fork_or_die() == 0) {
        execl(self, self, "show", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", (char *)NULL);
        die("execl");
    }
    wait(NULL);
    if (fork_or_die() == 0) {
        execle(self, self, "show", "b1", "b2", "b3", "b4", "b5", "b6", "b7", (char *)NULL, env);
        die("execle");
    }
    wait(NULL);
    snprintf(dir, sizeof dir, "%s", self);
    slash = strrchr(dir, '/');
    if (slash == NULL)
        fail("argv[0] has no directory");
    *slash = 0;
    if (setenv("PATH", dir, 1) < 0)
        die("setenv");
    if (fork_or_die() == 0) {
        execlp("exec_list", "exec_list", "show", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", (char *)NULL);
        die("execlp");
    }
    wait(NULL);
    if (execl("/nonexistent/exec_list", "x", "y", (char *)NULL) == -1 && errno == ENOENT)
        printf("execl failed: ENOENT\n");
    return 0;
}
