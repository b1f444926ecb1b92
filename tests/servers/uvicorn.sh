#!/bin/bash
# uvicorn (Python ASGI server on asyncio's event loop: an epoll selector, a socketpair woken by
# its signal handlers, a 0.1 s timer tick) serving asgi_app.py, which answers each request with
# its arrival number; a readiness loop, then 8 curl clients at once; `kill` ends it through its
# SIGTERM handler. Prints each client's number: the order the server took the requests.
set -eu
. "$(dirname "$0")/lib.sh"
new_dir uvicorn
port=$(free_port)
cp "$here/asgi_app.py" "$dir/"
timeout 30 uvicorn --app-dir "$dir" --host 127.0.0.1 --port "$port" --no-access-log \
    --log-level warning asgi_app:app &
server=$!
settle
until curl -sf -o /dev/null "http://127.0.0.1:$port/ping"; do kill -0 "$server"; sleep 0.05; done
clients=()
for i in 1 2 3 4 5 6 7 8; do
    timeout 10 "$here/jitter" curl -sf -o "$dir/c$i" "http://127.0.0.1:$port/n" &
    clients+=($!)
done
wait "${clients[@]}"
for i in 1 2 3 4 5 6 7 8; do echo "client$i $(cat "$dir/c$i")"; done
kill "$server"
wait "$server" || true
