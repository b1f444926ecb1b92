#!/bin/sh
# The contended mutex benchmark (issue #13): THREADS threads each increment one counter under
# one pthread mutex ROUNDS times (tests/progs/mutex_log.c, `bench`), natively, under
# `ddbx record` and under `ddbx replay` of that record, RUNS interleaved times; prints the
# program's own time (it reads the clock with the system call, which ddbx neither hooks nor
# replays, so ddbx's start and end are not in it) and the size of the lock history.
#
#   tests/bench/mutex.sh [DDBX [THREADS [ROUNDS [RUNS]]]]
#
# DDBX defaults to target/debug/ddbx (its embedded preload is a release build).
# THREADS=0: the main thread alone takes the mutex, no thread is made (no lock history).
set -eu
ddbx=${1:-target/debug/ddbx}
threads=${2:-4}
rounds=${3:-250000}
runs=${4:-5}
dir=$(mktemp -d /tmp/ddbx-mutex-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
gcc -O2 -Wall -Wextra -Werror -pthread -I tests/progs -o "$dir/mutex_log" tests/progs/mutex_log.c
us() { sed -n 's/^bench: \([0-9]*\) us$/\1/p' "$1"; }
echo "threads $threads, $rounds increments each, $runs runs: the program's own time (ms), from"
echo "before the first thread to after the last join, and the lock history's size"
for i in $(seq "$runs"); do
    "$dir/mutex_log" bench "$threads" "$rounds" >/dev/null 2>"$dir/native"
    rm -rf "$dir/rec"
    "$ddbx" record -o "$dir/rec" -- "$dir/mutex_log" bench "$threads" "$rounds" >/dev/null 2>"$dir/record"
    "$ddbx" replay "$dir/rec" >/dev/null 2>"$dir/replay"
    size=0; [ -f "$dir/rec/history/p1.locks" ] && size=$(tr -d '\0' < "$dir/rec/history/p1.locks" | wc -c)
    echo "run $i: native $(( $(us "$dir/native") / 1000 ))  record $(( $(us "$dir/record") / 1000 ))  replay $(( $(us "$dir/replay") / 1000 ))  lock history $size bytes"
done
