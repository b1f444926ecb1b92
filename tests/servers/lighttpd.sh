#!/bin/bash
# lighttpd (one event loop) with mod_cgi: every request forks a CGI child (/bin/sh running
# cgi/order.sh, which sleeps a random few ms); 8 curl clients at once. Prints the access log:
# the order in which lighttpd completed the requests.
set -eu
. "$(dirname "$0")/lib.sh"
new_dir lighttpd
port=$(free_port)
mkdir -p "$dir/www"
cp "$here/cgi/order.sh" "$dir/www/order.sh"
cat >"$dir/lighttpd.conf" <<CONF
server.document-root = "$dir/www"
server.bind = "127.0.0.1"
server.port = $port
server.pid-file = "$dir/lighttpd.pid"
server.errorlog = "$dir/error.log"
server.upload-dirs = ( "$dir" )
server.modules = ( "mod_cgi", "mod_accesslog" )
accesslog.filename = "$dir/access.log"
accesslog.format = "%U?%q"
cgi.assign = ( ".sh" => "/bin/sh" )
CONF
timeout 30 lighttpd -D -f "$dir/lighttpd.conf" &
server=$!
settle
until curl -sf -o /dev/null "http://127.0.0.1:$port/order.sh?ready"; do kill -0 "$server"; sleep 0.05; done
clients=()
for i in 1 2 3 4 5 6 7 8; do
    timeout 10 "$here/jitter" curl -sf -o /dev/null "http://127.0.0.1:$port/order.sh?client$i" &
    clients+=($!)
done
wait "${clients[@]}"
kill "$server"
wait "$server" || true
grep -v ready "$dir/access.log"
