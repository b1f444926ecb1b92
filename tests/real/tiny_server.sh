# Sourced (`. "$here/tiny_server.sh"`) by the shell drivers once they have set `here` (this
# directory), `clients` (how many connections tiny_server.py serves) and `tmp_prefix`: makes a
# fresh directory $dir (removed at exit), starts tiny_server.py in the background and sets
# $port, read through a FIFO (so that nobody polls the file system for it).
dir=$(mktemp -d "/tmp/$tmp_prefix.XXXXXX")
trap 'rm -rf "$dir"' EXIT
mkfifo "$dir/port"
/usr/bin/python3 "$here/tiny_server.py" "$clients" >"$dir/port" &
read -r port <"$dir/port"
