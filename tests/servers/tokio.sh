#!/bin/bash
# tokio-echo (a Rust server on tokio's current-thread runtime: one epoll loop, tasks) and 8 ncat
# clients at once, each sending its name; a last client asks for the arrival order, which the
# script prints. `tokio.sh [SERVER]`: the server's binary (default: $TOKIO_ECHO, else
# tokio-echo/target/release/tokio-echo, built by `cargo build --release` in tokio-echo/).
set -eu
. "$(dirname "$0")/lib.sh"
new_dir tokio
server_bin=${1:-${TOKIO_ECHO:-$here/tokio-echo/target/release/tokio-echo}}
mkfifo "$dir/port"
timeout 30 "$server_bin" >"$dir/port" &
server=$!
read -r port <"$dir/port"
until ncat -z 127.0.0.1 "$port"; do kill -0 "$server"; sleep 0.05; done
clients=()
for i in 1 2 3 4 5 6 7 8; do
    echo "client$i" | timeout 10 "$here/jitter" ncat 127.0.0.1 "$port" >/dev/null &
    clients+=($!)
done
wait "${clients[@]}"
echo dump | timeout 10 ncat 127.0.0.1 "$port"
kill "$server"
wait "$server" || true
