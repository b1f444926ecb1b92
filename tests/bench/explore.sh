#!/bin/sh
# What `ddbx explore --all` costs: for each program, RUNS times, a native run, a record, and
# `explore --all` of that record (every unaffected race flipped, one recorded run each); prints
# the wall times (ms), the number of races flipped and the ratio explore / record (explore
# runs the program once per flipped race, so about that many records' worth is expected).
#
#   tests/bench/explore.sh [DDBX [RUNS]]
#
# Programs: paper 004's Figure 1 (tests/progs/race_fig004.c), the Figure 1 example
# (examples/figure1), and a 16-client server (tests/progs/flaky_accept.c with 16 clients: an
# accept race per accept, the first unaffected). DDBX defaults to target/release/ddbx.
set -eu
ddbx=${1:-target/release/ddbx}
runs=${2:-5}
case $ddbx in /*) ;; *) ddbx=$PWD/$ddbx ;; esac
dir=$(mktemp -d /tmp/ddbx-explore-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
inc="-I tests/progs -I preload/probe/include"
for p in race_fig004 flaky_accept; do
    gcc -O1 -Wall -Wextra -Werror $inc -o "$dir/$p" "tests/progs/$p.c"
done
make -s -C examples/figure1 OUT="$dir/fig1"
ms() { echo $(($(date +%s%N) / 1000000)); }
# one NAME CMD...: native, record, explore --all, RUNS times.
one() {
    name=$1
    shift
    for i in $(seq "$runs"); do
        t0=$(ms)
        "$@" >/dev/null 2>&1 || true
        t1=$(ms)
        rm -rf "$dir/rec" "$dir/flips"
        "$ddbx" record -o "$dir/rec" -- "$@" >/dev/null 2>&1 || true
        t2=$(ms)
        "$ddbx" explore "$dir/rec" --all -o "$dir/flips" --json --messages "$dir/out.json" \
            >/dev/null 2>&1
        t3=$(ms)
        flips=$(grep -o '"flipped":true' "$dir/out.json" | wc -l)
        races=$(grep -o '"race":' "$dir/out.json" | wc -l)
        echo "$name run $i: native $((t1 - t0)) ms, record $((t2 - t1)) ms, explore --all $((t3 - t2)) ms ($flips of $races flipped), explore/record $(awk "BEGIN { printf \"%.1f\", ($t3 - $t2) / ($t2 - $t1) }")"
    done
}
one "paper 004 Figure 1" "$dir/race_fig004"
FIG1_BIN="$dir/fig1" DDBX_JITTER=20 one "Figure 1 example" examples/figure1/run
DDBX_JITTER=5 one "16-client server" "$dir/flaky_accept" 16 quiet
