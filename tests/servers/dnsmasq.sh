#!/bin/bash
# dnsmasq (one process, a select loop, a forked child per TCP connection) answering from a
# hosts file, no upstream; 8 DNS clients at once: `drill -t` (ldnsutils) over TCP, or with
# `dnsmasq.sh udp` half of them `busybox nslookup` over UDP. Prints each client's answer and the
# order dnsmasq logged the queries (`--log-queries`): the order it took them.
set -eu
. "$(dirname "$0")/lib.sh"
new_dir dnsmasq
port=$(free_port)
for i in 1 2 3 4 5 6 7 8; do echo "10.0.0.$i host$i.test"; done >"$dir/hosts"
echo "10.0.0.99 ready.test" >>"$dir/hosts"
timeout 30 dnsmasq --keep-in-foreground --conf-file=/dev/null --user=root \
    --port="$port" --listen-address=127.0.0.1 --bind-interfaces --no-resolv --no-hosts \
    --addn-hosts="$dir/hosts" --log-queries --log-facility="$dir/log" --pid-file= &
server=$!
settle
until drill -t -p "$port" @127.0.0.1 ready.test A 2>/dev/null | grep -q '10\.0\.0\.99'; do
    kill -0 "$server"
    sleep 0.05
done
clients=()
for i in 1 2 3 4 5 6 7 8; do
    if [ "${1:-}" = udp ] && [ $((i % 2)) = 1 ]; then
        timeout 10 "$here/jitter" busybox nslookup "host$i.test" "127.0.0.1:$port" >"$dir/c$i" &
    else
        timeout 10 "$here/jitter" drill -t -p "$port" @127.0.0.1 "host$i.test" A >"$dir/c$i" &
    fi
    clients+=($!)
done
wait "${clients[@]}"
for i in 1 2 3 4 5 6 7 8; do echo "host$i $(grep -o '10\.0\.0\.[0-9]*' "$dir/c$i" | tail -1)"; done
kill "$server"
wait "$server" || true
grep -o 'query\[A\] host[0-9]*' "$dir/log" | awk '{ print $2 }' | tr '\n' ' '
echo
