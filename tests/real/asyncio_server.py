#!/usr/bin/python3
"""An asyncio server (asyncio.start_server) in the root process, 4 client processes.

The clients (separate Python processes started with subprocess, each with its own asyncio
event loop and asyncio.open_connection) sleep a random 0..DDBX_JITTER ms (default 20), connect,
sleep again, send one line and read the reply.  The sleeps are time.sleep, which blocks the
client's loop: an asyncio.sleep would be an epoll_wait timeout, so the random delay itself
would become part of the client's history (a number of timed-out epoll_waits that depends on
the random seed and the clock, which ddbx does not record).

`asyncio_server.py timer`: each client also awaits a fixed asyncio.sleep(0.02) between
connecting and sending: a deterministic timer, which the event loop implements as epoll_wait
timeouts.  The server numbers requests in the order it
handles them (the order their lines are read) and says so in the reply.  The root prints each
client's reply in client order at the end.
"""
import asyncio
import os
import random
import subprocess
import sys
import time

N = 4
TIMER = "timer" in sys.argv[1:]


def jitter():
    max_ms = int(os.environ.get("DDBX_JITTER", "20"))
    return random.uniform(0, max_ms) / 1000.0


async def client(i, port):
    random.seed(os.getpid() ^ time.time_ns())
    time.sleep(jitter())
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    time.sleep(jitter())
    if TIMER:
        await asyncio.sleep(0.02)
    writer.write(f"request from client {i}\n".encode())
    await writer.drain()
    reply = await reader.readline()
    writer.close()
    await writer.wait_closed()
    sys.stdout.write(reply.decode())


async def serve():
    handled = 0
    done = asyncio.Event()

    async def handle(reader, writer):
        nonlocal handled
        line = (await reader.readline()).decode().strip()
        handled += 1
        writer.write(f"handled {handled} ({line})\n".encode())
        await writer.drain()
        writer.close()
        await writer.wait_closed()
        if handled == N:
            done.set()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    clients = [
        subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "client", str(i), str(port)]
            + (["timer"] if TIMER else []),
            stdout=subprocess.PIPE,
        )
        for i in range(1, N + 1)
    ]
    await done.wait()
    server.close()
    await server.wait_closed()
    return clients


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "client":
        asyncio.run(client(int(sys.argv[2]), int(sys.argv[3])))
        return
    clients = asyncio.run(serve())
    replies = [c.communicate()[0].decode() for c in clients]
    for c in clients:
        if c.returncode != 0:
            sys.exit(f"a client failed: {c.returncode}")
    for i, r in enumerate(replies, 1):
        print(f"client {i} got: {r.strip()}")


if __name__ == "__main__":
    main()
