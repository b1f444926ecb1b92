#!/bin/bash
# A child started through a chain of execs, as launchers start programs (`env`, a shell
# wrapper that execs the next one, pyenv's shims): env → bash -c 'exec env bash -c …' → its
# own events (a command substitution: a pipe and a fork). The script waits for it, then
# makes events of its own.
set -eu
env bash -c 'exec env bash -c "x=\$(echo chained); echo \$x"' &
wait
echo "done: $(echo ok)"
