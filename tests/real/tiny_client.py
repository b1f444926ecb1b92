#!/usr/bin/python3
"""`tiny_client.py PORT I`: sleeps a random 0..DDBX_JITTER ms (default 20), connects to
127.0.0.1:PORT, sends `client I`, prints the reply line."""
import os
import random
import socket
import sys
import time

port, i = int(sys.argv[1]), sys.argv[2]
random.seed(os.getpid() ^ time.time_ns())
time.sleep(random.uniform(0, int(os.environ.get("DDBX_JITTER", "20"))) / 1000.0)
with socket.create_connection(("127.0.0.1", port)) as s:
    s.sendall(f"client {i}\n".encode())
    print(s.makefile("rb").readline().decode().strip())
