#!/bin/bash
# What a script shows of process ids: `$$`, `$PPID`, `$BASHPID`, `$!`, a pid file that a
# background child writes and the script reads back to kill it (what integration tests do with
# a server's pid file), `wait` on a pid, a child's `$$` and `$PPID`, `/proc/$pid` paths.
# Most lines have pids in them, so every run prints something else; a replay prints its
# record's. Only the script prints.
dir=$(mktemp -d /tmp/ddbx-pids.XXXXXX)
echo "shell $$ parent $PPID"
( echo "subshell $BASHPID of $$" )
sh -c 'echo "child $$ of $PPID"'
sh -c 'exit 7' &
bg=$!
wait "$bg"
echo "background $bg ended with $?"
sh -c 'echo $$ >"$1"; exec /bin/sleep 30' sh "$dir/pidfile" &
server=$!
until [ -s "$dir/pidfile" ]; do :; done
read -r written <"$dir/pidfile"
# /proc/<pid> named by a pid the script was shown: its own, and the server's.
echo "shell runs $(tr '\0' ' ' <"/proc/$$/cmdline")"
[ -d "/proc/$written" ] && echo "server is in /proc"
kill "$written"
wait "$server"
echo "server $server wrote $written, ended with $?"
rm -rf "$dir"
