#!/bin/bash
# Four children each append a line to one log after a random delay (so the order of the lines
# varies), then the script greps the log, as a test script checks a server's log at its end.
# grep reads /proc/self/maps before the log: a file whose size is 0 until it is read.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for i in 1 2 3 4; do
    "$here/../servers/jitter" sh -c "echo child $i >>'$log'" &
done
wait
grep child "$log"
