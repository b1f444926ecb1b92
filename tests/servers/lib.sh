# Sourced by the corpus scripts (bash). What integration-test scripts usually carry around:
# a free port, a temp dir removed at exit, random client delays, worker relabelling.

# DDBX_JITTER: every client sleeps a random 0..DDBX_JITTER ms before it starts (default 20).
DDBX_JITTER=${DDBX_JITTER:-20}
# Debian puts daemons in /usr/sbin, which a non-login PATH may lack.
PATH=$PATH:/usr/sbin:/sbin
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# A free TCP port on 127.0.0.1 (bind to port 0 and let the kernel choose, as test suites do).
free_port() {
    /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# A temp dir for configs, logs, pids and sockets, removed at exit.
new_dir() {
    dir=$(mktemp -d "/tmp/ddbx-$1.XXXXXX")
    trap 'rm -rf "$dir"' EXIT
}

# `jitter CMD ARGS…`: sleeps 0..DDBX_JITTER ms, then runs CMD.
jitter() {
    "$here/jitter" "$@"
}

# Reads lines `KEY WORKER` (a worker named by its pid, which differs from run to run) and prints
# `KEY X` where X is A for the first worker seen, B for the second…: the pattern of which worker
# served which request, independent of pids.
relabel() {
    awk '{ if (!($2 in l)) l[$2] = sprintf("%c", 65 + n++); print $1, l[$2] }'
}

# Diagnostic, not what a test suite does: with CORPUS_SETTLE=SECONDS, the scripts sleep that long
# before their readiness loop, so that its first try finds the server up and the recording has
# no refused connect (class 2 of issue #10); FINDINGS.md uses it to see what breaks after that.
settle() {
    if [ -n "${CORPUS_SETTLE:-}" ]; then sleep "$CORPUS_SETTLE"; fi
}
