#!/bin/bash
# nginx, pre-fork: a master and 4 workers that all accept on one listening socket (epoll,
# accept_mutex off), 12 curl clients, 6 at a time (xargs -P 6). Prints, for each request, which
# worker served it (from the access log; workers lettered by first appearance).
# `nginx.sh drop`: the master runs as root and its workers as `nobody` (nginx's default user).
set -eu
. "$(dirname "$0")/lib.sh"
new_dir nginx
port=$(free_port)
user="user root;"
[ "${1:-}" = drop ] && user="user nobody nogroup;"
mkdir -p "$dir/logs" "$dir/tmp"
chmod 755 "$dir" "$dir/logs"
cat >"$dir/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 4;
$user
pid $dir/nginx.pid;
error_log $dir/logs/error.log;
events {
    worker_connections 64;
    accept_mutex off;
}
http {
    log_format req '\$uri \$pid';
    access_log $dir/logs/access.log req;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    server {
        listen 127.0.0.1:$port;
        location / {
            return 200 "ok\n";
        }
    }
}
CONF
timeout 30 nginx -p "$dir" -c "$dir/nginx.conf" &
server=$!
settle
until curl -sf -o /dev/null "http://127.0.0.1:$port/ready"; do kill -0 "$server"; sleep 0.05; done
seq 1 12 | timeout 20 xargs -P 6 -I{} "$here/jitter" curl -sf -o /dev/null "http://127.0.0.1:$port/r/{}"
kill "$server"
wait "$server" || true
grep '^/r/' "$dir/logs/access.log" | sed 's,^/r/,,' | sort -n | relabel
