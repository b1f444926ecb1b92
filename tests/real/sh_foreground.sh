#!/bin/sh
# `sh_foreground.sh`: dash starts tiny_server.py in the background, runs client 1 in the
# foreground (the shell waits for it), then client 2 in the background, and waits. The shell's
# fork of client 2 comes after its wait reaped client 1: a halting replay that needs client 2
# must let client 1 finish first (ddbx/tests/halting_waits.rs).
set -e
here=$(cd "$(dirname "$0")" && pwd)
clients=2 tmp_prefix=ddbx-fg
. "$here/tiny_server.sh"
/usr/bin/python3 "$here/tiny_client.py" "$port" 1
/usr/bin/python3 "$here/tiny_client.py" "$port" 2 &
wait
