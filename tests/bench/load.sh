#!/bin/sh
# tests/bench/load.sh [DDBX]: issue #11's loads at full size, measured once each with the real
# CLI: native, `ddbx record`, `ddbx replay` (wall seconds), record/native and replay/native,
# history bytes and events, and ddbx's peak RSS in the record and in the replay (GNU time's %M:
# wait4's ru_maxrss of ddbx, which reaps every process of its session). Prints a Markdown table
# (BENCHMARKS.md, "Load"). DDBX defaults to target/release/ddbx; the programs are built with
# gcc -O2 into target/ddbx-bench/. The replay must print what the record printed, or the row
# says so. The tests that assert the same loads: ddbx/tests/load.rs.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
ddbx=${1:-$root/target/release/ddbx}
bin=$root/target/ddbx-bench
work=$(mktemp -d /tmp/ddbx-load.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$bin"
for p in load_poll conn_churn; do
    gcc -O2 -I "$root/tests/progs" -o "$bin/$p" "$root/tests/progs/$p.c"
done

now() { date +%s.%N; }

echo "| load | native s | record s | replay s | record/native | replay/native | history bytes | events | bytes/event | ddbx peak RSS record MB | ddbx peak RSS replay MB | replay = record |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
row() {
    name=$1; shift
    s=$(now); "$@" >"$work/native.out"; e=$(now)
    native=$(echo "$e - $s" | bc)
    rm -rf "$work/rec"
    /usr/bin/time -f "%e %M" -o "$work/rec.time" "$ddbx" record -o "$work/rec" -- "$@" \
        >"$work/rec.out" 2>"$work/rec.err"
    /usr/bin/time -f "%e %M" -o "$work/rep.time" "$ddbx" replay "$work/rec" \
        >"$work/rep.out" 2>"$work/rep.err" || true
    # The last line: a failing command's file starts with "Command exited with …".
    rec_s=$(tail -1 "$work/rec.time" | cut -d' ' -f1); rec_kb=$(tail -1 "$work/rec.time" | cut -d' ' -f2)
    rep_s=$(tail -1 "$work/rep.time" | cut -d' ' -f1); rep_kb=$(tail -1 "$work/rep.time" | cut -d' ' -f2)
    bytes=$(cat "$work"/rec/history/*.ron | wc -c)
    events=$(grep -hvc '^\(Header\|~\|Skip\)' "$work"/rec/history/*.ron | paste -sd+ | bc)
    same=no
    cmp -s "$work/rec.out" "$work/rep.out" && same=yes
    printf '| %s | %.3f | %.2f | %.2f | %.1f× | %.1f× | %d | %d | %.1f | %.0f | %.0f | %s |\n' \
        "$name" "$native" "$rec_s" "$rep_s" "$(echo "$rec_s / $native" | bc -l)" \
        "$(echo "$rep_s / $native" | bc -l)" "$bytes" "$events" \
        "$(echo "$bytes / $events" | bc -l)" "$(echo "$rec_kb / 1024" | bc -l)" \
        "$(echo "$rep_kb / 1024" | bc -l)" "$same"
}

row "256 processes: 255 clients x 200 messages, one poll server" "$bin/load_poll" 255 200
row "64 clients x 5,000 messages, one poll server" "$bin/load_poll" 64 5000
row "10,000 connections: 16 clients x 625, concurrent" "$bin/conn_churn" 16 625
row "10,000 connections: 1 client, one after the other" "$bin/conn_churn" 1 10000
row "1,000,000 messages: 4 clients x 250,000" "$bin/load_poll" 4 250000
