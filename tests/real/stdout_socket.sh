#!/bin/bash
# A client function of the kind test scripts write: it opens a /dev/tcp connection on fd 3
# and writes the request with `printf … >&3`, which points fd 1 at the socket for the builtin
# (bash's printf writes through stdio, inside libc). Two background clients (after a random
# 0..DDBX_JITTER ms) and the script's own shell, twice (the first time with its output thrown
# away), race for tiny_server.py's accept order; the replies are printed in client order at
# the end. Whether the script's own standard output is a file, a pipe or a terminal must not
# change what is recorded: neither whether those writes are sends, nor their sizes (bash makes
# its stdout line-buffered: the request's two lines are two sends).
set -e
here=$(cd "$(dirname "$0")" && pwd)
clients=4 tmp_prefix=ddbx-stdout
. "$here/tiny_server.sh"
jitter=${DDBX_JITTER:-20}
ask() {
    exec 3<>"/dev/tcp/127.0.0.1/$port"
    printf '%s\n' "$1" "(end)" >&3
    IFS= read -r reply <&3
    exec 3>&-
    printf '%s\n' "$reply"
}
for i in 1 2; do
    (
        RANDOM=$(( ($$ ^ BASHPID ^ 10#$(date +%N)) & 32767 ))
        sleep "$(printf '0.%03d' $(( RANDOM % (jitter + 1) )))"
        ask "client $i" >"$dir/out$i"
    ) &
done
# The script's own shell asks twice, the first time with its output thrown away.
ask "main" >/dev/null
ask "main again" >"$dir/out3"
wait
for i in 1 2 3; do
    echo "client $i got: $(cat "$dir/out$i")"
done
