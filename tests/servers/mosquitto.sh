#!/bin/bash
# mosquitto (MQTT broker, one event loop; started as root it drops to its own user `mosquitto`,
# its stock default) with mosquitto_sub/mosquitto_pub. A persistent subscriber session
# subscribes at QoS 1 and leaves (-E: that is also the readiness loop); 8 publishers publish at
# once at QoS 1; the subscriber comes back and receives the 8 queued messages in the order the
# broker took them, which it prints.
# `mosquitto.sh root`: the broker keeps root (`user root` in its config).
set -eu
. "$(dirname "$0")/lib.sh"
new_dir mosquitto
port=$(free_port)
chmod 755 "$dir"
{
    echo "listener $port 127.0.0.1"
    echo "allow_anonymous true"
    echo "persistence false"
    echo "log_dest stderr"
    [ "${1:-}" = root ] && echo "user root"
} >"$dir/mosquitto.conf"
timeout 30 mosquitto -c "$dir/mosquitto.conf" 2>"$dir/mosquitto.log" &
server=$!
sub=(mosquitto_sub -h 127.0.0.1 -p "$port" -i collector -c -q 1 -t corpus/order)
settle
until "${sub[@]}" -E 2>/dev/null; do kill -0 "$server"; sleep 0.05; done
clients=()
for i in 1 2 3 4 5 6 7 8; do
    timeout 10 "$here/jitter" mosquitto_pub -h 127.0.0.1 -p "$port" -q 1 -t corpus/order -m "client$i" &
    clients+=($!)
done
wait "${clients[@]}"
timeout 10 "${sub[@]}" -C 8
kill "$server"
wait "$server" || true
