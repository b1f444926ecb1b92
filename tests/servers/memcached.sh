#!/bin/bash
# memcached (a thread-pool server: one thread accepts and hands each connection to one of 4
# worker threads, each an epoll event loop; background threads of its own) and 8 clients
# started at once, each appending its number to one item; prints the item: the order in which
# the worker threads took the appends.
set -eu
. "$(dirname "$0")/lib.sh"
new_dir memcached
port=$(free_port)
# `mc LINE…`: one connection (bash's /dev/tcp), the lines sent, the first reply line printed.
mc() {
    exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
    printf '%s\r\n' "$@" >&3
    local reply
    IFS= read -r reply <&3
    exec 3>&-
    printf '%s\n' "${reply%$'\r'}"
}
timeout 30 memcached -l 127.0.0.1 -p "$port" -U 0 -t 4 -u root &
server=$!
settle
until mc version 2>/dev/null | grep -q VERSION; do kill -0 "$server"; sleep 0.05; done
mc "set order 0 0 1" "-" >/dev/null
clients=()
for i in 1 2 3 4 5 6 7 8; do
    (jitter true; mc "append order 0 0 1" "$i" >/dev/null) &
    clients+=($!)
done
wait "${clients[@]}"
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'get order\r\n' >&3
IFS= read -r _ <&3
IFS= read -r value <&3
exec 3>&-
echo "${value%$'\r'}"
kill "$server"
wait "$server" || true
