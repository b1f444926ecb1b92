#!/usr/bin/python3
"""busybox httpd under 4 concurrent requests: 2 by `busybox wget`, 2 by Python's urllib.

The root writes 4 small files into a fresh directory, picks a free port (binds port 0, reads
the port, closes), starts `busybox httpd -f -p 127.0.0.1:PORT -h DIR` and opens a collector
socket.  Each client is a separate process (`reporter` mode of this script) that sleeps a
random 0..DDBX_JITTER ms (default 20), fetches its file (client 1 and 3 by running
`busybox wget -q -O - URL`, 2 and 4 with urllib) and passes the body on to the collector.  The
root prints the bodies in the order the collector accepted them (the order the responses
completed), then stops httpd (SIGTERM; SIGKILL with the argument `kill`) and waits for it.
"""
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.dont_write_bytecode = True  # importing collector must leave no __pycache__ in the tree
from collector import Collector, free_port  # noqa: E402 (after the line above on purpose)

N = 4


def reporter(i, port, cport):
    random.seed(os.getpid() ^ time.time_ns())
    time.sleep(random.uniform(0, int(os.environ.get("DDBX_JITTER", "20"))) / 1000.0)
    url = f"http://127.0.0.1:{port}/file{i}.txt"
    for _ in range(200):  # until httpd listens
        try:
            if i % 2:
                body = subprocess.run(
                    ["busybox", "wget", "-q", "-O", "-", url],
                    check=True, capture_output=True,
                ).stdout
            else:
                with urllib.request.urlopen(url) as r:
                    body = r.read()
            break
        except (subprocess.CalledProcessError, OSError):
            time.sleep(0.01)
    else:
        sys.exit(f"client {i}: httpd never answered")
    with socket.create_connection(("127.0.0.1", cport)) as s:
        s.sendall(body)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "reporter":
        reporter(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
        return
    root = tempfile.mkdtemp(prefix="ddbx-httpd.")
    try:
        for i in range(1, N + 1):
            with open(os.path.join(root, f"file{i}.txt"), "w") as f:
                f.write(f"contents of file {i}\n")
        port = free_port()
        httpd = subprocess.Popen(["busybox", "httpd", "-f", "-p", f"127.0.0.1:{port}", "-h", root])
        collector = Collector(N)
        clients = [
            subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "reporter", str(i), str(port),
                 str(collector.port)]
            )
            for i in range(1, N + 1)
        ]
        bodies = collector.reports()
        failed = [c.returncode for c in clients if c.wait() != 0]
        httpd.send_signal(signal.SIGKILL if "kill" in sys.argv[1:] else signal.SIGTERM)
        httpd.wait()
    finally:
        shutil.rmtree(root)
    if failed:
        sys.exit(f"clients failed: {failed}")
    for n, b in enumerate(bodies, 1):
        print(f"response {n}: {b}")


if __name__ == "__main__":
    main()
