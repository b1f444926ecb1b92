#!/bin/bash
# haproxy (one process, `nbthread 1`, epoll, round robin) in front of two `busybox httpd`
# backends; 8 curl clients at once through it. Prints which backend served each client: the
# order haproxy took the requests decides the round robin's pattern. With `check`, haproxy also
# health-checks the backends on a timer.
set -eu
. "$(dirname "$0")/lib.sh"
new_dir haproxy
port=$(free_port)
b1=$(free_port)
b2=$(free_port)
# `haproxy.sh check`: haproxy health-checks both backends every 50 ms (its timers decide when).
check=
if [ "${1:-}" = check ]; then check="check inter 50ms"; fi
mkdir -p "$dir/www1" "$dir/www2"
echo A >"$dir/www1/who"
echo B >"$dir/www2/who"
cat >"$dir/haproxy.cfg" <<CFG
global
    nbthread 1
    pidfile $dir/haproxy.pid
defaults
    mode http
    timeout connect 5s
    timeout client 10s
    timeout server 10s
frontend web
    bind 127.0.0.1:$port
    default_backend app
backend app
    balance roundrobin
    server s1 127.0.0.1:$b1 $check
    server s2 127.0.0.1:$b2 $check
CFG
timeout 30 busybox httpd -f -p "127.0.0.1:$b1" -h "$dir/www1" &
w1=$!
timeout 30 busybox httpd -f -p "127.0.0.1:$b2" -h "$dir/www2" &
w2=$!
timeout 30 haproxy -f "$dir/haproxy.cfg" -db &
server=$!
settle
until curl -sf -o /dev/null "http://127.0.0.1:$port/who"; do kill -0 "$server"; sleep 0.05; done
clients=()
for i in 1 2 3 4 5 6 7 8; do
    timeout 10 "$here/jitter" curl -sf -o "$dir/c$i" "http://127.0.0.1:$port/who" &
    clients+=($!)
done
wait "${clients[@]}"
for i in 1 2 3 4 5 6 7 8; do echo "client$i $(cat "$dir/c$i")"; done
kill "$server" "$w1" "$w2"
wait "$server" "$w1" "$w2" || true
