#!/bin/bash
# gunicorn (Python pre-fork WSGI server): an arbiter and 4 sync workers that all select on and
# accept from one listening socket, serving wsgi_app.py; 12 curl clients, 6 at a time. Prints,
# for each request, which worker answered (workers lettered by first appearance).
set -eu
. "$(dirname "$0")/lib.sh"
new_dir gunicorn
port=$(free_port)
cp "$here/wsgi_app.py" "$dir/"
timeout 30 gunicorn --workers 4 --worker-class sync --bind "127.0.0.1:$port" \
    --chdir "$dir" --pid "$dir/gunicorn.pid" --worker-tmp-dir "$dir" \
    --error-logfile "$dir/error.log" wsgi_app:app &
server=$!
settle
until curl -sf -o /dev/null "http://127.0.0.1:$port/ready"; do kill -0 "$server"; sleep 0.05; done
mkdir "$dir/out"
seq 1 12 | timeout 20 xargs -P 6 -I{} "$here/jitter" curl -sf -o "$dir/out/{}" "http://127.0.0.1:$port/{}"
kill "$server"
wait "$server" || true
for i in $(seq 1 12); do cat "$dir/out/$i"; done | sed 's,^/,,' | relabel
