#!/bin/sh
# What running under `ddbx run --break-if` costs next to `ddbx record` (issue #15, part 1):
# the same programs, interleaved, RUNS times each: native, record, and run with a breakpoint
# that never holds (every process evaluates its part of it after each event, and checks the
# clock page before each send and receive). Prints the wall times (ms) and the ratios
# run / record and run / native.
#
#   tests/bench/live.sh [DDBX [RUNS]]
#
# Programs: the overhead benchmark's ping-pong (tests/progs/bench_pingpong.c, 20,000 round
# trips of 64 bytes; the breakpoint is on the server, p1) and its fork tree
# (tests/progs/bench_forktree.c, 300 processes; on p2, a child). DDBX defaults to
# target/release/ddbx.
set -eu
ddbx=${1:-target/release/ddbx}
runs=${2:-5}
case $ddbx in /*) ;; *) ddbx=$PWD/$ddbx ;; esac
dir=$(mktemp -d /tmp/ddbx-live-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
inc="-I tests/progs -I preload/probe/include"
for p in bench_pingpong bench_forktree; do
    gcc -O1 -Wall -Wextra -Werror $inc -o "$dir/$p" "tests/progs/$p.c"
done
ms() { echo $(($(date +%s%N) / 1000000)); }
ratio() { awk "BEGIN { printf \"%.2f\", $1 / $2 }"; }
# one NAME PREDICATE CMD...: native, record, run, RUNS times.
one() {
    name=$1
    pred=$2
    shift 2
    for i in $(seq "$runs"); do
        t0=$(ms)
        "$@" >/dev/null 2>&1
        t1=$(ms)
        rm -rf "$dir/rec" "$dir/run"
        "$ddbx" record -o "$dir/rec" -- "$@" >/dev/null 2>&1
        t2=$(ms)
        "$ddbx" run --break-if "$pred" --no-prompt -o "$dir/run" -- "$@" >/dev/null 2>&1
        t3=$(ms)
        echo "$name run $i: native $((t1 - t0)) ms, record $((t2 - t1)) ms, run $((t3 - t2)) ms, run/record $(ratio $((t3 - t2)) $((t2 - t1))), run/native $(ratio $((t3 - t2)) $((t1 - t0)))"
    done
}
one "ping-pong 20000 x 64 B" "p1.never == 1" "$dir/bench_pingpong" 20000 64
one "fork tree 300" "p2.never == 1" "$dir/bench_forktree" 300
