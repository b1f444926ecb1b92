#!/bin/bash
# Starts a program and kills it at once, 30 times over, after 0 to 9 short spins of bash, as a
# test script that gives up on a server does: many kills land while the program is being
# exec'd, before the loader has run any of it. Prints how each one ended (`sleep 7: 143`).
for i in $(seq 1 30); do
    /bin/sleep 10 &
    p=$!
    j=0
    while [ $j -lt $((i % 10 * 40)) ]; do j=$((j + 1)); done
    kill "$p"
    wait "$p" || echo "sleep $i: $?"
done
