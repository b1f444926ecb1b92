#!/usr/bin/python3
"""socketserver.ForkingTCPServer with 4 concurrent client processes.

The root process serves: its server accepts each connection and forks a handler child (the
ForkingMixIn way); the handler reads one line and replies with the connection's number in
accept order.  The clients are separate Python processes started with subprocess (fork+exec),
each sleeping a random 0..DDBX_JITTER ms (default 20) before it connects.  The root prints
each client's reply in client order once everything is done, so its output is a function of
the accept order only.
"""
import os
import random
import socket
import socketserver
import subprocess
import sys
import time

N = 4


def jitter():
    random.seed(os.getpid() ^ time.time_ns())
    max_ms = int(os.environ.get("DDBX_JITTER", "20"))
    time.sleep(random.uniform(0, max_ms) / 1000.0)


def client(i, port):
    jitter()
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(f"hello from client {i}\n".encode())
        reply = s.makefile("rb").readline()
    sys.stdout.write(reply.decode())


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        line = self.rfile.readline().decode().strip()
        self.wfile.write(f"connection {self.server.accepted} ({line})\n".encode())


class Server(socketserver.ForkingTCPServer):
    accepted = 0

    def get_request(self):
        # Runs in the server process, before the handler child is forked.
        conn = super().get_request()
        self.accepted += 1
        return conn


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "client":
        client(int(sys.argv[2]), int(sys.argv[3]))
        return
    with Server(("127.0.0.1", 0), Handler) as server:
        port = server.server_address[1]
        clients = [
            subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "client", str(i), str(port)],
                stdout=subprocess.PIPE,
            )
            for i in range(1, N + 1)
        ]
        for _ in range(N):
            server.handle_request()
        replies = [c.communicate()[0].decode() for c in clients]
        for c in clients:
            if c.returncode != 0:
                sys.exit(f"a client failed: {c.returncode}")
        # ForkingMixIn reaps its handler children.
        server.server_close()
    for i, r in enumerate(replies, 1):
        print(f"client {i} got: {r.strip()}")


if __name__ == "__main__":
    main()
