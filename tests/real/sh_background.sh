#!/bin/sh
# A POSIX sh script (dash on Debian) that starts tiny_server.py and 3 tiny_client.py in the
# background, waits for all of them, and prints what each client got, in client order.
# Each background client writes its reply to its own file; only the script prints.
set -e
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/ddbx-sh.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkfifo "$dir/port"
/usr/bin/python3 "$here/tiny_server.py" 3 >"$dir/port" &
read -r port <"$dir/port"
for i in 1 2 3; do
    /usr/bin/python3 "$here/tiny_client.py" "$port" "$i" >"$dir/out$i" &
done
wait
for i in 1 2 3; do
    echo "client $i got: $(cat "$dir/out$i")"
done
