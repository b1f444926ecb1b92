#!/bin/bash
# vsftpd (a process per connection, privileges dropped for the session, passive-mode data
# connections on ports it announces over the control connection); 6 curl clients at once, each
# uploads a file named after itself (anonymous FTP). Prints the directory's listing and the
# order vsftpd logged the uploads. `vsftpd.sh seccomp`: with vsftpd's seccomp sandbox (its
# default; off otherwise).
set -eu
. "$(dirname "$0")/lib.sh"
new_dir vsftpd
port=$(free_port)
mkdir -p "$dir/ftp/up" "$dir/empty"
# The sessions run as `ftp` (anonymous): they must reach the tree and write into up/.
chmod 755 "$dir" "$dir/ftp"
chmod 777 "$dir/ftp/up"
seccomp=NO
if [ "${1:-}" = seccomp ]; then seccomp=YES; fi
cat >"$dir/vsftpd.conf" <<CONF
listen=YES
listen_address=127.0.0.1
listen_port=$port
background=NO
anonymous_enable=YES
anon_root=$dir/ftp
anon_upload_enable=YES
write_enable=YES
local_enable=NO
pasv_enable=YES
pasv_address=127.0.0.1
seccomp_sandbox=$seccomp
secure_chroot_dir=$dir/empty
xferlog_enable=YES
vsftpd_log_file=$dir/vsftpd.log
dual_log_enable=YES
xferlog_file=$dir/xfer.log
CONF
timeout 30 vsftpd "$dir/vsftpd.conf" &
server=$!
settle
until curl -s -o /dev/null "ftp://127.0.0.1:$port/"; do kill -0 "$server"; sleep 0.05; done
clients=()
for i in 1 2 3 4 5 6; do
    echo "from $i" >"$dir/c$i"
    timeout 10 "$here/jitter" curl -s -T "$dir/c$i" "ftp://127.0.0.1:$port/up/client$i" &
    clients+=($!)
done
wait "${clients[@]}"
curl -s "ftp://127.0.0.1:$port/up/" -l | sort | tr '\n' ' '
echo
kill "$server"
wait "$server" || true
grep -o 'OK UPLOAD[^,]*, "[^"]*"' "$dir/vsftpd.log" | grep -o 'client[0-9]' | tr '\n' ' '
echo
