#!/bin/bash
# PostgreSQL 15, which refuses to run as root: initdb and the postmaster run as the `postgres`
# user (runuser), the postmaster forks a backend per connection plus its background processes;
# 6 psql clients at once each insert their name into a table with a serial key. Prints the names
# by key: the order the inserts took their keys.
set -eu
. "$(dirname "$0")/lib.sh"
new_dir postgres
port=$(free_port)
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
chown postgres "$dir"
as_pg() { runuser -u postgres -- "$@"; }
as_pg "$bin/initdb" -D "$dir/data" -A trust -U postgres -N --no-instructions >/dev/null
timeout 60 runuser -u postgres -- "$bin/postgres" -D "$dir/data" -k "$dir" -p "$port" \
    -c listen_addresses=127.0.0.1 -c fsync=off -c logging_collector=off 2>"$dir/postgres.log" &
server=$!
until pg_isready -q -h 127.0.0.1 -p "$port"; do kill -0 "$server"; sleep 0.05; done
psql=(psql -X -q -At -h 127.0.0.1 -p "$port" -U postgres)
"${psql[@]}" -c 'create table t (id serial primary key, v text)'
clients=()
for i in 1 2 3 4 5 6; do
    timeout 10 "$here/jitter" "${psql[@]}" -c "insert into t (v) values ('client$i')" &
    clients+=($!)
done
wait "${clients[@]}"
"${psql[@]}" -c "select string_agg(v, ' ' order by id) from t"
kill "$server"
wait "$server" || true
