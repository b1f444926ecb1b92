#!/bin/bash
# Six processes at once (after a random 0..DDBX_JITTER ms each) take a ticket from a counter
# file under `flock` (util-linux): read the number, write it back plus one. Which process got
# which ticket varies from run to run; the tickets are printed in process order.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo 0 >"$dir/counter"
take='n=$(cat "$1"); echo $((n + 1)) >"$1"; echo "$2 ticket $((n + 1))" >"$3"'
for i in 1 2 3 4 5 6; do
    "$here/../servers/jitter" flock "$dir/counter" sh -c "$take" sh "$dir/counter" "p$i" "$dir/out$i" &
done
wait
for i in 1 2 3 4 5 6; do cat "$dir/out$i"; done
