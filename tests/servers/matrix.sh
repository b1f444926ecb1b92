#!/bin/bash
# `matrix.sh DDBX OUT SCRIPT [ARGS…]`: one row of FINDINGS.md's failure matrix. Runs SCRIPT
# natively NATIVE times (default 10) and counts distinct outputs, records it once with DDBX,
# replays the recording REPLAYS times (default 5, each under `timeout $TIMEOUT`, default 60),
# halts a replay with `--stop-at` at the middle event of the actor with most events, and runs
# `ddbx races`. Everything each step printed is kept in OUT (record: OUT/rec, replay i:
# OUT/replay<i>.{out,err} and OUT/hist<i>); a step that times out first has its process tree
# dumped (OUT/<step>.hang: state, kernel wait channel and current syscall of every process).
# Prints one summary line per step. Two hung replays in a row are taken as the same hang: the
# remaining replays are then not run (each would take TIMEOUT seconds).
set -u
ddbx=$1 out=$2
shift 2
export DDBX_JITTER=${DDBX_JITTER:-20}
NATIVE=${NATIVE:-10} REPLAYS=${REPLAYS:-5} TIMEOUT=${TIMEOUT:-60}
mkdir -p "$out"

# Syscall numbers (x86_64) that show where a hung process is.
syscall_name() {
    case $1 in
    0) echo read ;; 1) echo write ;; 7) echo poll ;; 23) echo select ;; 34) echo pause ;;
    35) echo nanosleep ;; 42) echo connect ;; 43) echo accept ;; 44) echo sendto ;;
    45) echo recvfrom ;; 46) echo sendmsg ;; 47) echo recvmsg ;; 61) echo wait4 ;;
    130) echo rt_sigsuspend ;; 202) echo futex ;; 230) echo clock_nanosleep ;;
    232) echo epoll_wait ;; 270) echo pselect6 ;; 271) echo ppoll ;; 281) echo epoll_pwait ;;
    288) echo accept4 ;; 441) echo epoll_pwait2 ;; running) echo running ;; *) echo "syscall $1" ;;
    esac
}

# Every process of session $1: pid, parent, state, wait channel, syscall, command.
dump_session() {
    local sid=$1 p
    for p in $(ps -e -o pid=,sid= | awk -v s="$sid" '$2 == s { print $1 }'); do
        local sc
        sc=$(cut -d' ' -f1 "/proc/$p/syscall" 2>/dev/null || echo '?')
        printf '%s ppid=%s %s wchan=%s in=%s fd1=%s: %s\n' "$p" \
            "$(ps -o ppid= -p "$p" | tr -d ' ')" "$(ps -o stat= -p "$p")" \
            "$(cat "/proc/$p/wchan" 2>/dev/null)" "$(syscall_name "$sc")" \
            "$(cut -d' ' -f2 "/proc/$p/syscall" 2>/dev/null)" \
            "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-150)"
    done
}

# `step NAME CMD…`: runs CMD in a new session under the time limit; output in OUT/NAME.{out,err};
# sets $rc (124: timed out, after dumping the session to OUT/NAME.hang) and $secs.
step() {
    local name=$1
    shift
    local start end pid waited=0
    start=$(date +%s.%N)
    setsid "$@" >"$out/$name.out" 2>"$out/$name.err" </dev/null &
    pid=$!
    while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt $((TIMEOUT * 10)) ]; do
        sleep 0.1
        waited=$((waited + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        dump_session "$pid" >"$out/$name.hang"
        # Every process of the session, not just the group: `timeout` makes its own group.
        ps -e -o pid=,sid= | awk -v s="$pid" '$2 == s { print $1 }' | xargs -r kill -KILL 2>/dev/null
        wait "$pid" 2>/dev/null
        rc=124
    else
        wait "$pid"
        rc=$?
    fi
    end=$(date +%s.%N)
    secs=$(echo "$end - $start" | bc)
    secs=$(printf '%.1f' "$secs")
}

describe() { # the outcome of step $1 against the record's output
    local name=$1
    if [ "$rc" = 124 ]; then
        echo "HANG after ${TIMEOUT}s (see $name.hang)"
    elif [ "$rc" = 101 ]; then
        echo "DIVERGED: $(grep -m1 'diverged' "$out/$name.err")"
    elif [ "$rc" != "$rec_rc" ]; then
        echo "exit $rc (record: $rec_rc): $(grep -m1 'ddbx:' "$out/$name.err")"
    elif ! cmp -s "$out/$name.out" "$out/record.out"; then
        echo "WRONG OUTPUT: $(tr '\n' ' ' <"$out/$name.out" | cut -c1-120)"
    else
        echo "ok"
    fi
}

if [ "$NATIVE" -gt 0 ]; then
    : >"$out/native.all"
    for i in $(seq 1 "$NATIVE"); do
        step "native$i" "$@"
        { md5sum <"$out/native$i.out" | cut -c1-8; } >>"$out/native.all"
    done
    echo "native: $(sort -u "$out/native.all" | wc -l) distinct outputs in $NATIVE runs (last took ${secs}s)"
fi

rm -rf "$out/rec"
step record "$ddbx" record -o "$out/rec" -- "$@"
rec_rc=$rc
echo "record: exit $rc in ${secs}s; $(grep -m1 'recorded' "$out/record.err")"
grep 'not recorded' "$out/record.err" | sed 's/^/  /' | cut -c1-200
[ -d "$out/rec/history" ] || exit 0

hangs=0
for i in $(seq 1 "$REPLAYS"); do
    if [ "$hangs" -ge 2 ]; then
        echo "replay $i: not run (replays $((i - 2)) and $((i - 1)) hung)"
        continue
    fi
    rm -rf "$out/hist$i"
    step "replay$i" "$ddbx" replay --history-out "$out/hist$i" "$out/rec"
    echo "replay $i: ${secs}s: $(describe "replay$i")"
    if [ "$rc" = 124 ]; then hangs=$((hangs + 1)); else hangs=0; fi
done

# The middle event of the actor with the most events (value lines, `~…`, are not events).
biggest=$(for h in "$out"/rec/history/p*.ron; do echo "$(grep -vc '^~' "$h") $h"; done | sort -n | tail -1)
actor=$(basename "$(echo "$biggest" | awk '{ print $2 }')" .ron)
events=$(($(echo "$biggest" | awk '{ print $1 }') - 1))
at="$actor:$((events / 2))"
step stopat "$ddbx" replay "$out/rec" --stop-at "$at"
if [ "$rc" = 0 ] && grep -q 'halted' "$out/stopat.err" "$out/stopat.out"; then
    echo "stop-at $at (of $events): halted in ${secs}s"
else
    echo "stop-at $at (of $events): exit $rc in ${secs}s: $(describe stopat)"
fi

step races "$ddbx" races "$out/rec"
echo "races: exit $rc in ${secs}s: $(grep -c -iE '^ *(race|#|[0-9]+[.:)])' "$out/races.out") lines; $(head -c 300 "$out/races.out" | head -3 | tr '\n' ' ')"
