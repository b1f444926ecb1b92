#!/usr/bin/python3
"""A tiny blocking TCP server for the shell tests: `tiny_server.py N` listens on 127.0.0.1
(kernel-chosen port), prints the port as its only output line, accepts N connections one
after the other with a plain blocking accept, reads one line from each and replies
`you are connection K (LINE)` (K = accept order), then exits."""
import socket
import sys

n = int(sys.argv[1])
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(n)
print(srv.getsockname()[1], flush=True)
for k in range(1, n + 1):
    conn, _ = srv.accept()
    with conn:
        line = conn.makefile("rb").readline().decode().strip()
        conn.sendall(f"you are connection {k} ({line})\n".encode())
