#!/bin/sh
# Concurrent writers into one pipe, the way scripts make them: xargs -P 4 runs 8 dash
# children that each write 3 lines into the pipe to `cat -n`, which numbers the lines in the
# order the pipe took them; a command substitution reads another pipe. Every process is
# recorded. What varies natively: the interleaving of the writers' lines.
seq 1 8 | xargs -P 4 -n 1 sh -c '
    i=0
    while [ $i -lt 3 ]; do
        echo "w$0 line $i"
        i=$((i + 1))
    done' | cat -n
lines=$(printf 'a\nb\nc\n' | wc -l)
echo "substituted: $lines lines"
