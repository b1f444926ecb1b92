#!/bin/bash
# The real-server corpus (tests/servers/, issue #10): each script natively, under `ddbx record`
# and under `ddbx replay` of that record, RUNS interleaved times (so that machine noise hits
# every mode alike); prints the median wall time of each mode and the ratios record/native
# and replay/record. The scripts' own sleeps (readiness loops, client jitter) are in every
# mode's time.
#
#   tests/bench/corpus.sh [DDBX [RUNS [SCRIPT[:ARG] ...]]]
#
# DDBX defaults to target/release/ddbx; RUNS to 5; the scripts to every corpus script whose
# server is installed (tokio.sh gets tests/servers/tokio-echo, built here in release mode).
set -eu
cd "$(dirname "$0")/../.."
ddbx=$(realpath "${1:-target/release/ddbx}")
runs=${2:-5}
shift 2 2>/dev/null || shift $#
scripts=("$@")
if [ ${#scripts[@]} -eq 0 ]; then
    scripts=(nginx.sh nginx.sh:drop redis.sh lighttpd.sh mosquitto.sh tokio.sh haproxy.sh
        dnsmasq.sh uvicorn.sh)
fi
dir=$(mktemp -d /tmp/ddbx-corpus-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
tokio_target=target/ddbx-test-progs/tokio-echo-target
export DDBX_JITTER=${DDBX_JITTER:-20}

# The script's extra argument, if it needs one.
arg_of() {
    case "$1" in
    tokio.sh) echo "$PWD/$tokio_target/release/tokio-echo" ;;
    *:*) echo "${1#*:}" ;;
    esac
}

# Milliseconds of wall time that "$@" took (its output to $dir/out, its errors to $dir/err);
# fails when it fails.
ms() {
    local t0 t1
    t0=$(date +%s%N)
    "$@" >"$dir/out" 2>"$dir/err" || { echo "failed: $* (exit $?): $(tail -3 "$dir/err")" >&2; return 1; }
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000))
}

median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

echo "corpus scripts, $runs interleaved runs each (native, record, replay), DDBX_JITTER=$DDBX_JITTER;"
echo "medians in ms; ddbx: $ddbx"
printf '%-16s %8s %8s %8s %10s %10s\n' script native record replay rec/native rep/rec
for entry in "${scripts[@]}"; do
    script=${entry%%:*}
    case "$script" in
    tokio.sh) cargo build --quiet --release --manifest-path tests/servers/tokio-echo/Cargo.toml \
        --target-dir "$tokio_target" ;;
    esac
    arg=$(arg_of "$entry")
    run=(tests/servers/"$script")
    [ -n "$arg" ] && run+=("$arg")
    native=() record=() replay=()
    ok=1
    for _ in $(seq "$runs"); do
        rm -rf "$dir/rec"
        n=$(ms "${run[@]}") && r=$(ms "$ddbx" record -o "$dir/rec" -- "${run[@]}") &&
            p=$(ms "$ddbx" replay "$dir/rec") || { ok=0; break; }
        native+=("$n") record+=("$r") replay+=("$p")
    done
    if [ "$ok" = 0 ]; then
        printf '%-16s %s\n' "$entry" "skipped: a run failed (above)"
        continue
    fi
    n=$(echo "${native[*]}" | median) r=$(echo "${record[*]}" | median) p=$(echo "${replay[*]}" | median)
    awk -v e="$entry" -v n="$n" -v r="$r" -v p="$p" \
        'BEGIN { printf "%-16s %8d %8d %8d %9.2fx %9.2fx\n", e, n, r, p, r / n, p / r }'
done
