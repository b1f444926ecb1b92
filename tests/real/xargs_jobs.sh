#!/bin/sh
# xargs runs 6 jobs, 3 at a time; each prints its number after a random 0..DDBX_JITTER ms, so
# the order of the lines varies from run to run. xargs polls its standard streams as it starts
# (which are open): a ready set over fds whose kind is the caller's choice, a file in one run
# and a pipe in the next.
seq 1 6 | xargs -P 3 -I{} "$(dirname "$0")/../servers/jitter" echo job {}
