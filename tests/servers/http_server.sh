#!/bin/bash
# python3 -m http.server (Python's ThreadingHTTPServer: a thread per connection, each
# logging with a timestamp) serving a directory; 8 curl clients at once, or with `pool` a
# Python driver sending 8 requests through a pool of 6 threads (pool_client.py). Prints the
# server's log (the order it answered the requests, with its times) and what each client got.
set -eu
. "$(dirname "$0")/lib.sh"
new_dir http-server
port=$(free_port)
mkdir "$dir/www"
for i in $(seq 1 8); do echo "file $i" > "$dir/www/f$i"; done
timeout 30 /usr/bin/python3 -u -m http.server --bind 127.0.0.1 --directory "$dir/www" "$port" \
    > "$dir/log" 2>&1 &
server=$!
settle
until curl -sf -o /dev/null "http://127.0.0.1:$port/"; do kill -0 "$server"; sleep 0.05; done
if [ "${1:-}" = pool ]; then
    timeout 20 /usr/bin/python3 "$here/pool_client.py" "$port" > "$dir/out0"
else
    for i in $(seq 1 8); do
        timeout 20 "$here/jitter" curl -sf -o "$dir/out$i" "http://127.0.0.1:$port/f$i" &
    done
    wait_clients=$(jobs -p | grep -vx "$server" || true)
    for pid in $wait_clients; do wait "$pid"; done
fi
kill "$server"
wait "$server" || true
grep -v '^Serving' "$dir/log" | sed 's/^127\.0\.0\.1 - - //'
cat "$dir"/out*
