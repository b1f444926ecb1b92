#!/bin/sh
# The thread-per-connection benchmark (issue #13): CLIENTS client processes each make ROUNDS
# round trips of 64 bytes with their own server thread (tests/progs/bench_threadpool.c),
# natively, under `ddbx record` and under `ddbx replay` of that record, RUNS interleaved times;
# prints the server's own time (it reads the clock with the system call, which ddbx neither
# hooks nor replays, so ddbx's start and end are not in it) and the server's history size.
#
#   tests/bench/threadpool.sh [DDBX [CLIENTS [ROUNDS [RUNS]]]]
#
# DDBX defaults to target/debug/ddbx (its embedded preload is a release build).
set -eu
ddbx=${1:-target/debug/ddbx}
clients=${2:-4}
rounds=${3:-10000}
runs=${4:-5}
dir=$(mktemp -d /tmp/ddbx-threadpool-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
gcc -O2 -Wall -Wextra -Werror -pthread -I tests/progs -o "$dir/bench_threadpool" tests/progs/bench_threadpool.c
us() { sed -n 's/^bench: \([0-9]*\) us$/\1/p' "$1"; }
echo "$clients clients x $rounds round trips of 64 B, one server thread each, $runs runs: the"
echo "server's own time (ms), from before its first thread to after its last join; p1's history"
for i in $(seq "$runs"); do
    "$dir/bench_threadpool" "$clients" "$rounds" >/dev/null 2>"$dir/native"
    rm -rf "$dir/rec"
    "$ddbx" record -o "$dir/rec" -- "$dir/bench_threadpool" "$clients" "$rounds" >/dev/null 2>"$dir/record"
    "$ddbx" replay "$dir/rec" >/dev/null 2>"$dir/replay"
    events=$(grep -vc '^~' "$dir/rec/history/p1.ron")
    bytes=$(wc -c < "$dir/rec/history/p1.ron")
    echo "run $i: native $(( $(us "$dir/native") / 1000 ))  record $(( $(us "$dir/record") / 1000 ))  replay $(( $(us "$dir/replay") / 1000 ))  p1 history $bytes bytes, $events lines"
done
