#!/bin/sh
# A POSIX sh script (dash on Debian) that starts tiny_server.py and 3 tiny_client.py in the
# background, waits for all of them, and prints what each client got, in client order.
# Each background client writes its reply to its own file; only the script prints.
set -e
here=$(cd "$(dirname "$0")" && pwd)
clients=3 tmp_prefix=ddbx-sh
. "$here/tiny_server.sh"
for i in 1 2 3; do
    /usr/bin/python3 "$here/tiny_client.py" "$port" "$i" >"$dir/out$i" &
done
wait
for i in 1 2 3; do
    echo "client $i got: $(cat "$dir/out$i")"
done
