#!/bin/sh
# The cost of writes into a file whose writes take turns (a log opened with O_APPEND):
# WRITERS forked processes each append LINES lines of 64 bytes (tests/progs/bench_append.c),
# natively, under `ddbx record` and under `ddbx replay` of that record, RUNS interleaved
# times; prints the program's own time per write (read with the clock system call, which
# ddbx neither hooks nor replays, so ddbx's start and end are not in it) and the history's
# bytes per write.
#
#   tests/bench/appends.sh [DDBX [WRITERS [LINES [RUNS]]]]
#
# DDBX defaults to target/debug/ddbx (its embedded preload is a release build).
set -eu
ddbx=${1:-target/debug/ddbx}
writers=${2:-1}
lines=${3:-100000}
runs=${4:-5}
dir=$(mktemp -d /tmp/ddbx-append-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
gcc -O2 -Wall -Wextra -Werror -I tests/progs -o "$dir/bench_append" tests/progs/bench_append.c
ns() { sed -n 's/^bench: \([0-9]*\) ns per write$/\1/p' "$1"; }
echo "$writers writer(s), $lines lines of 64 bytes each, $runs runs: ns per write, and history bytes per write"
for i in $(seq "$runs"); do
    "$dir/bench_append" "$dir/log" "$writers" "$lines" >/dev/null 2>"$dir/native"
    rm -rf "$dir/rec"
    "$ddbx" record -o "$dir/rec" -- "$dir/bench_append" "$dir/log" "$writers" "$lines" >/dev/null 2>"$dir/record"
    "$ddbx" replay "$dir/rec" >/dev/null 2>"$dir/replay"
    bytes=$(cat "$dir/rec/history/"*.ron | grep '^~a' | wc -c)
    echo "run $i: native $(ns "$dir/native")  record $(ns "$dir/record")  replay $(ns "$dir/replay")  history $(( bytes / (writers * lines) )) bytes per write"
done
