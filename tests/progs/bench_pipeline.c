/*
 * bench_pipeline [MESSAGES [STAGES [SIZE]]]: a race-light pipeline for the tracing benchmark
 * (BENCHMARKS.md, ddbx/benches/tracing.rs).
 *
 * The first process forks STAGES-1 children (default 4 stages in all) chained over loopback
 * TCP: stage 0 sends MESSAGES (default 20000) messages of SIZE (default 64) bytes to stage 1,
 * every middle stage receives each message whole (looping on short reads), adds 1 to every
 * byte and forwards it, and the last stage sums what it gets and prints "ok <sum>".  Blocking
 * send()/recv(); no readiness calls; no race in the output.  Exit status 0 on success, 1 on
 * any error (message on stderr).
 * The helpers it takes from common.h (like every test program) make the calls it would
 * make written out, in the same order: they cost nothing in what is measured.
 */
#include "common.h" /* the helpers every test program shares */

#define MAX_STAGES 16
#define MAX_SIZE 4096

int main(int argc, char **argv)
{
    long messages = argc > 1 ? atol(argv[1]) : 20000;
    int stages = argc > 2 ? atoi(argv[2]) : 4;
    size_t size = argc > 3 ? (size_t)atol(argv[3]) : 64;
    int listeners[MAX_STAGES], ports[MAX_STAGES];
    unsigned char buf[MAX_SIZE];
    int stage;

    if (stages < 2 || stages > MAX_STAGES || size == 0 || size > MAX_SIZE || messages < 1) {
        fprintf(stderr, "usage: bench_pipeline [MESSAGES [STAGES(2..16) [SIZE(1..4096)]]]\n");
        return 1;
    }
    /* Every stage but the first listens; all listen before anyone forks. */
    for (stage = 1; stage < stages; stage++)
        listeners[stage] = bind_any(&ports[stage], 1);
    for (stage = 1; stage < stages; stage++) {
        if (fork_or_die() == 0)
            break;
    }
    if (stage == stages)
        stage = 0;

    int in = -1, out = -1;
    if (stage > 0)
        in = accept_one(listeners[stage]);
    if (stage < stages - 1) {
        out = connect_to(ports[stage + 1]);
        nodelay(out);
    }
    unsigned long sum = 0;
    for (long m = 0; m < messages; m++) {
        if (stage == 0) {
            memset(buf, (int)(m & 0xff), size);
        } else if (recv_all(in, buf, size) < size) {
            fprintf(stderr, "stage %d: early end of stream\n", stage);
            return 1;
        }
        if (out >= 0) {
            for (size_t i = 0; i < size; i++)
                buf[i]++;
            send_all(out, buf, size);
        } else {
            for (size_t i = 0; i < size; i++)
                sum += buf[i];
        }
    }
    if (out >= 0)
        close(out);
    if (stage == 0) {
        for (int s = 1; s < stages; s++)
            if (wait(NULL) < 0)
                die("wait");
    }
    if (stage == stages - 1)
        printf("ok %lu\n", sum);
    return 0;
}
