#!/bin/sh
# The contended mutex benchmark (issue #13): THREADS threads each increment one counter under
# one pthread mutex ROUNDS times (tests/progs/mutex_log.c, `bench`), natively, under
# `ddbx record` and under `ddbx replay` of that record, RUNS interleaved times; prints the
# wall time of each run in ms and the size of the lock history.
#
#   tests/bench/mutex.sh [DDBX [THREADS [ROUNDS [RUNS]]]]
#
# DDBX defaults to target/debug/ddbx (its embedded preload is a release build). Times include
# starting the program (and, under ddbx, the session): compare with a run of ROUNDS=1.
# THREADS=0: the main thread alone takes the mutex, no thread is made (no lock history).
set -eu
ddbx=${1:-target/debug/ddbx}
threads=${2:-4}
rounds=${3:-250000}
runs=${4:-5}
dir=$(mktemp -d /tmp/ddbx-mutex-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
gcc -O2 -Wall -Wextra -Werror -pthread -I tests/progs -o "$dir/mutex_log" tests/progs/mutex_log.c
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
echo "threads $threads, $rounds increments each, $runs runs (ms)"
for i in $(seq "$runs"); do
    t=$(date +%s%N); "$dir/mutex_log" bench "$threads" "$rounds" >/dev/null; native=$(ms "$t")
    rm -rf "$dir/rec"
    t=$(date +%s%N); "$ddbx" record -o "$dir/rec" -- "$dir/mutex_log" bench "$threads" "$rounds" >/dev/null 2>&1
    record=$(ms "$t")
    t=$(date +%s%N); "$ddbx" replay "$dir/rec" >/dev/null 2>&1; replay=$(ms "$t")
    size=0; [ -f "$dir/rec/history/p1.locks" ] && size=$(tr -d '\0' < "$dir/rec/history/p1.locks" | wc -c)
    echo "run $i: native $native  record $record  replay $replay  lock history $size bytes"
done
