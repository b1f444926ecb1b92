#!/usr/bin/python3
"""socat in fork mode as an echo server (PIPE), 4 socat clients, a collector.

The root picks a free port (binds port 0, reads the port, closes), starts
`socat TCP-LISTEN:PORT,bind=127.0.0.1,reuseaddr,fork PIPE` (each connection's handler echoes
through a pipe of its own) and opens a collector socket.  Each client is a shell pipeline started after a random 0..DDBX_JITTER ms (default 20):
`echo client I | socat -t 5 - TCP:127.0.0.1:PORT,retry=… | socat -u - TCP:127.0.0.1:COLLECTOR`,
so the echo it got back from the server is passed on to the collector.  The root accepts the
4 reports in the order they arrive and prints them in that order ("which client got its echo
first"), then stops the socat server (SIGTERM; SIGKILL with the argument `kill`) and waits
for everything.

With `exec` the handlers echo through `EXEC:/bin/cat` instead: each handler then has a cat
child and socat's behaviour depends on when its SIGCHLD arrives (see tests/real/README.md);
ddbx does not record where asynchronous signals are delivered, so that variant is not in the
suite.
"""
import os
import random
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # importing collector must leave no __pycache__ in the tree
from collector import Collector, free_port  # noqa: E402 (after the line above on purpose)

N = 4


def main():
    random.seed(os.getpid() ^ time.time_ns())
    max_ms = int(os.environ.get("DDBX_JITTER", "20"))
    port = free_port()
    server = subprocess.Popen(
        [
            "socat",
            f"TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork",
            "EXEC:/bin/cat" if "exec" in sys.argv[1:] else "PIPE",
        ]
    )
    collector = Collector(N)
    clients = []
    for i in range(1, N + 1):
        delay = random.uniform(0, max_ms) / 1000.0
        script = (
            f"sleep {delay:.3f}; echo client {i} | "
            f"socat -t 5 - TCP:127.0.0.1:{port},retry=200,interval=0.01 | "
            f"socat -u - TCP:127.0.0.1:{collector.port}"
        )
        clients.append(subprocess.Popen(["sh", "-c", script]))
    reports = collector.reports()
    for c in clients:
        if c.wait() != 0:
            sys.exit(f"a client failed: {c.returncode}")
    server.send_signal(signal.SIGKILL if "kill" in sys.argv[1:] else signal.SIGTERM)
    server.wait()
    for n, r in enumerate(reports, 1):
        print(f"echo {n}: {r}")


if __name__ == "__main__":
    main()
