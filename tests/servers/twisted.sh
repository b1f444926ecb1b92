#!/bin/bash
# Twisted's web server (twistd, Python's epoll reactor) serving a directory; 8 curl clients at
# once; the order of the requests in its access log. `timeout --foreground`: the script's kill
# reaches twistd once (a plain `timeout` also kills its process group, and a second SIGTERM
# that lands while Twisted's handler logs the first deadlocks on its logging lock: the
# program's own hazard, seen under `ddbx record`, where the handler is slower).
set -eu
. "$(dirname "$0")/lib.sh"
new_dir twisted
port=$(free_port)
mkdir "$dir/www"
for i in 1 2 3 4 5 6 7 8; do echo "page $i" >"$dir/www/p$i"; done
echo ok >"$dir/www/ready"
timeout --foreground 30 twistd3 -n --pidfile= -l "$dir/twistd.log" web --listen "tcp:$port:interface=127.0.0.1" \
    --path "$dir/www" --logfile "$dir/access.log" &
server=$!
until curl -sf -o /dev/null "http://127.0.0.1:$port/ready"; do kill -0 "$server"; sleep 0.05; done
clients=()
for i in 1 2 3 4 5 6 7 8; do
    timeout 10 "$here/jitter" curl -sf -o /dev/null "http://127.0.0.1:$port/p$i" &
    clients+=($!)
done
wait "${clients[@]}"
kill "$server"
wait "$server" || true
grep -o 'GET /p[0-9]' "$dir/access.log" | sed 's,GET /,,' | tr '\n' ' '; echo
