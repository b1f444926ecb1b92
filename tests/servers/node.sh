#!/bin/bash
# A tiny Node.js HTTP server (libuv's epoll loop; V8's and libuv's helper threads do no socket
# I/O) that answers each request with its arrival number; 8 curl clients at once. Prints each
# client's number: the order the server took the requests.
set -eu
. "$(dirname "$0")/lib.sh"
new_dir node
port=$(free_port)
cat >"$dir/server.js" <<'JS'
const http = require('http');
let n = 0;
http.createServer((req, res) => {
  if (req.url === '/ping') { res.end('pong\n'); return; }
  n += 1;
  res.end(`${n}\n`);
}).listen(Number(process.argv[2]), '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
JS
timeout 30 node "$dir/server.js" "$port" &
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
