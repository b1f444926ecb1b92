#!/bin/bash
# rsync in daemon mode (forks a child per connection; the client forks itself into a
# generator and a receiver) serving one module; 6 `rsync` clients at once each download the
# module, then upload a file named after themselves into an `inbox` module. Prints the files
# each client got and the order the daemon logged the uploads (its log: the order it took them).
set -eu
. "$(dirname "$0")/lib.sh"
new_dir rsync
port=$(free_port)
mkdir -p "$dir/data" "$dir/inbox" "$dir/up"
# Started as root, the daemon serves as `nobody` (its default): it must reach its modules.
chmod 755 "$dir" "$dir/data"
chmod 777 "$dir/inbox"
for f in a b c; do echo "file $f" >"$dir/data/$f"; done
# The files rsync compares and sends have the same times in every run: they are the program's
# input, like their contents (ddbx records what comes through sockets, not file metadata).
touch -d '2026-01-01 00:00:00' "$dir/data"/* "$dir/data"
cat >"$dir/rsyncd.conf" <<CONF
use chroot = no
log file = $dir/rsyncd.log
transfer logging = yes
log format = %o %f
pid file = $dir/rsyncd.pid
[data]
    path = $dir/data
    read only = yes
[inbox]
    path = $dir/inbox
    read only = no
CONF
timeout 30 rsync --daemon --no-detach --address=127.0.0.1 --port="$port" --config="$dir/rsyncd.conf" &
server=$!
settle
until rsync "rsync://127.0.0.1:$port/" >/dev/null 2>&1; do kill -0 "$server"; sleep 0.05; done
clients=()
for i in 1 2 3 4 5 6; do
    mkdir -p "$dir/c$i"
    echo "from $i" >"$dir/up/client$i"
    touch -d '2026-01-01 00:00:00' "$dir/up/client$i"
    timeout 10 "$here/jitter" sh -c "rsync -a rsync://127.0.0.1:$port/data/ $dir/c$i/ &&
        rsync $dir/up/client$i rsync://127.0.0.1:$port/inbox/" &
    clients+=($!)
done
wait "${clients[@]}"
for i in 1 2 3 4 5 6; do echo "client$i: $(cd "$dir/c$i" && cat a b c | tr '\n' ' ')"; done
kill "$server"
wait "$server" || true
grep -o 'recv client[0-9]' "$dir/rsyncd.log" | awk '{ print $2 }' | tr '\n' ' '
echo
