#!/usr/bin/env python3
"""The server's memory per connection, in three states: N connections that sent nothing; the same
after one ordinary `POST /v1/sync` each (kept alive, idle; sent STEP at a time, 500 by default);
then with a held live sync request on each. Reads the server's resident set (`/proc/PID/status`)
before and after each state and prints KiB per connection as one JSON object.

Usage: scripts/bench/connection_memory.py URL TOKEN PID N [STEP]   (raise `ulimit -n` for large N)
"""
import asyncio
import json
import sys
import urllib.parse

url, token, pid, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])


def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"): return int(line.split()[1])
async def main():
    u = urllib.parse.urlsplit(url)
    base = rss()
    conns = []
    for start in range(0, n, 500):
        conns += await asyncio.gather(*(asyncio.open_connection(u.hostname, u.port) for _ in range(min(500, n - start))))
    await asyncio.sleep(2)
    idle = rss()
    # one ordinary request on each connection, answered; the connection stays open
    async def one(rw, body):
        r, w = rw
        data = json.dumps(body).encode()
        w.write((f"POST /v1/sync HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n").encode() + data)
        line = await r.readline(); length = 0
        while True:
            h = await r.readline()
            if h in (b"\r\n", b""): break
            k, _, v = h.decode().partition(":")
            if k.lower() == "content-length": length = int(v)
        await r.readexactly(length)
    step = int(sys.argv[5]) if len(sys.argv) > 5 else 500
    for start in range(0, n, step):
        await asyncio.gather(*(one(c, {"maxRevision": 1, "limit": 1}) for c in conns[start:start+step]))
    await asyncio.sleep(2)
    after = rss()
    # now hold a request on each
    for r, w in conns:
        data = json.dumps({"maxRevision": 1000000000, "wait": 55}).encode()
        w.write((f"POST /v1/sync HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n").encode() + data)
    await asyncio.sleep(5)
    held = rss()
    print(json.dumps({"n": n, "base_mib": base/1024, "idle_conn_kib": (idle-base)/n, "after_request_kib": (after-base)/n, "held_kib": (held-base)/n, "held_minus_after_kib": (held-after)/n}))
asyncio.run(main())
