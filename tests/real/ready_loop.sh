#!/bin/bash
# A server started with its output in a file, and the loop a test script uses to wait until
# that output says the server is ready: how many times grep looked differs from run to run.
set -eu
log=$(mktemp)
trap 'rm -f "$log"' EXIT
(sleep 0.05; echo ready) >"$log" &
n=0
until grep -q ready "$log"; do n=$((n + 1)); done
wait
echo "grep looked $n times before the server was ready"
