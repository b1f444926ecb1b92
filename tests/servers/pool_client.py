"""A test driver as Python integration tests write them: 8 requests through a pool of 6
threads (concurrent.futures, urllib), each after a random pause of 0..DDBX_JITTER ms; prints
each answer as it completes, with a request id (uuid4) and the second it came."""
import os
import random
import sys
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor, as_completed

port = int(sys.argv[1])
jitter = int(os.environ.get("DDBX_JITTER", "20")) / 1000


def get(i):
    time.sleep(random.random() * jitter)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/f{i}", timeout=10) as r:
        return i, r.read().decode().strip(), uuid.uuid4().hex[:8], int(time.time())


with ThreadPoolExecutor(6) as pool:
    for done in as_completed([pool.submit(get, i) for i in range(1, 9)]):
        print(*done.result())
