#!/bin/bash
# bash talking TCP through /dev/tcp: tiny_server.py (3 connections, replies with the accept
# order) and 3 background bash subshells that each sleep a random 0..DDBX_JITTER ms (default
# 20), then `exec 3<>/dev/tcp/127.0.0.1/PORT; echo "client I" >&3; read -r line <&3`.  bash's
# `echo >&3` goes through stdio (a write inside libc that an LD_PRELOAD hook does not see);
# `read` reads the socket one byte at a time with read(2).  Each client writes its reply to
# its own file; the script prints them in client order once all are done.
set -e
here=$(cd "$(dirname "$0")" && pwd)
clients=3 tmp_prefix=ddbx-bash
. "$here/tiny_server.sh"
jitter=${DDBX_JITTER:-20}
for i in 1 2 3; do
    (
        RANDOM=$(( ($$ ^ BASHPID ^ 10#$(date +%N)) & 32767 ))
        sleep "$(printf '0.%03d' $(( RANDOM % (jitter + 1) )))"
        exec 3<>"/dev/tcp/127.0.0.1/$port"
        echo "client $i" >&3
        read -r line <&3
        echo "$line" >"$dir/out$i"
    ) &
done
wait
for i in 1 2 3; do
    echo "client $i got: $(cat "$dir/out$i")"
done
