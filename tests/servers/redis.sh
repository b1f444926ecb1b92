#!/bin/bash
# redis-server (one epoll event loop, persistence off) and 8 redis-cli clients started at once,
# each RPUSHing its name onto one list; prints the list: the order the server took the pushes.
set -eu
. "$(dirname "$0")/lib.sh"
new_dir redis
port=$(free_port)
timeout 30 redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
    --dir "$dir" --logfile "$dir/redis.log" --pidfile "$dir/redis.pid" --daemonize no &
server=$!
settle
until redis-cli -p "$port" ping >/dev/null 2>&1; do kill -0 "$server"; sleep 0.05; done
clients=()
for i in 1 2 3 4 5 6 7 8; do
    timeout 10 "$here/jitter" redis-cli -p "$port" rpush order "client$i" >/dev/null &
    clients+=($!)
done
wait "${clients[@]}"
redis-cli -p "$port" lrange order 0 -1
kill "$server"
wait "$server" || true
