/*
 * bench_forktree [N]: the overhead benchmark's fork-heavy tree (see
 * BENCHMARKS.md and ddbx/benches/overhead.rs).
 *
 * Creates N (default 2000) short-lived processes as a binary tree: a process
 * whose subtree must hold n more processes forks a left child responsible
 * for about half of them, reaps it, then forks a right child for the rest
 * and reaps it, and _exit()s with status 0 only if both children did.  So
 * the tree is about log2(N) deep, at most that many processes are alive at
 * once, and every process but the root exits right after its own children.
 * No sockets (the per-process cost measured is the LD's: start, fork record,
 * GD registration, exit record).  The root prints "ok" if all N processes
 * exited 0.  No race in the output; no jitter.  Exit status 0 on success,
 * 1 on any error (message on stderr).
 * The helpers it takes from common.h (like every test program) make the calls it would
 * make written out, in the same order: they cost nothing in what is measured.
 */
#include "common.h" /* the helpers every test program shares */

/* Forks a child that creates n more processes below itself, and reaps it.
 * Returns 0 if the child (and so its whole subtree) succeeded. */
static int spawn(long n);

/* Creates n processes below the calling one; returns 0 if all succeeded. */
static int subtree(long n)
{
    long left, right;
    int failed = 0;

    if (n <= 0)
        return 0;
    /* One child on each side, itself plus its subtree: left + right == n. */
    left = n / 2 + n % 2;
    right = n - left;
    failed |= spawn(left - 1);
    if (right > 0)
        failed |= spawn(right - 1);
    return failed;
}

static int spawn(long n)
{
    pid_t child = fork_or_die();
    int status;

    if (child == 0)
        _exit(subtree(n) ? 1 : 0);
    status = wait_raw(child);
    return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;

    if (n < 0) {
        fprintf(stderr, "usage: bench_forktree [N]\n");
        return 1;
    }
    fflush(stdout);
    if (subtree(n) != 0) {
        fprintf(stderr, "a process of the tree failed\n");
        return 1;
    }
    printf("ok\n");
    return 0;
}
