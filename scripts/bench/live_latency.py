#!/usr/bin/env python3
"""Live sync latency: commit to client, with N clients waiting.

Opens N keep-alive connections spread over the server URLs given, each holding one
`POST /v1/sync {"maxRevision": R, "wait": 55}` (or with `--live-reads` a live read,
`GET /v1/changes?after=R&schemaVersion=1&live=0`) (waits until every server's `/metrics` shows them
held), then commits one change set (`--writer admin`: `POST /v1/admin/changes` to the first server;
`--writer psql`: an INSERT through the psql program) and times, for every client, from just
before the commit is sent until the whole answer carrying the new revision has arrived. Repeats
for `--rounds` commits, holding every client again each round. Reads the first server's resident
memory (`/proc/PID/status`) with nothing held and with every client held.

With `--engine "seed-bench observe ..."`, also runs that command (a SyncEngine, one more waiting
client): once it says it is caught up, each commit's created row is timed from just before the
commit until the engine's `observe(type:)` reports it (the wall-clock time the command prints).

Prints one JSON object: clients, rounds, p50/p99/max milliseconds over every client of every
round, answers that lacked the revision (errors), the server's memory per held request, and with
--engine the engine's p50/p99/max and the commits it did not report within 30 s.
The clients run in this one asyncio process; their own scheduling is part of what is measured.
"""
import argparse
import asyncio
import json
import shlex
import statistics
import subprocess
import sys
import time
import urllib.parse


def memory_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Client:
    """One keep-alive HTTP/1.1 connection holding a sync request at a time."""

    def __init__(self, url, token, live_reads=False):
        self.url = urllib.parse.urlsplit(url)
        self.token = token
        self.live_reads = live_reads
        self.reader = self.writer = None

    async def connect(self):
        self.reader, self.writer = await asyncio.open_connection(self.url.hostname, self.url.port)

    def send(self, revision):
        if self.live_reads:
            self.writer.write((f"GET /v1/changes?after={revision}&schemaVersion=1&live=0 HTTP/1.1\r\n"
                               f"Host: {self.url.netloc}\r\nAuthorization: Bearer {self.token}\r\n"
                               "Accept-Encoding: identity\r\n\r\n").encode())
            return
        body = json.dumps({"maxRevision": revision, "wait": 55}).encode()
        head = (f"POST /v1/sync HTTP/1.1\r\nHost: {self.url.netloc}\r\nAuthorization: Bearer {self.token}\r\n"
                f"Content-Type: application/json\r\nAccept-Encoding: identity\r\nContent-Length: {len(body)}\r\n\r\n")
        self.writer.write(head.encode() + body)

    async def answer(self):
        """The status and body of one answer, and the monotonic time it was complete."""
        status_line = await self.reader.readline()
        length = 0
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        body = await self.reader.readexactly(length)
        return int(status_line.split()[1]), body, time.monotonic()


async def http(url, method, path, token, body=None):
    """One request on a connection of its own: status and body."""
    client = Client(url, token)
    await client.connect()
    data = b"" if body is None else json.dumps(body).encode()
    head = (f"{method} {path} HTTP/1.1\r\nHost: {client.url.netloc}\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nAccept-Encoding: identity\r\nConnection: close\r\n"
            f"Content-Length: {len(data)}\r\n\r\n")
    client.writer.write(head.encode() + data)
    status, body, _ = await client.answer()
    client.writer.close()
    return status, body


async def held(url, admin):
    status, body = await http(url, "GET", "/metrics", admin)
    for line in body.decode().splitlines():
        if line.startswith("seedsync_waiting_requests "):
            return int(float(line.split()[1]))
    return 0


async def wait_until_held(urls, admin, counts):
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if all([await held(url, admin) >= count for url, count in zip(urls, counts)]):
            return
        await asyncio.sleep(0.05)
    sys.exit(f"live_latency: the servers did not hold {counts} requests within 120 s")


async def revision(url, token):
    status, body = await http(url, "GET", "/v1/schema", token)
    return json.loads(body)["revision"]


async def commit(args, revision_before):
    key = 900_000_000 + revision_before
    if args.writer == "psql":
        process = await asyncio.create_subprocess_exec(
            "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", args.database, "-c",
            f"INSERT INTO locations (id, name, city, latitude, longitude) VALUES ({key}, 'Live', 'Oslo', 59.9, 10.7)")
        if await process.wait() != 0:
            sys.exit("live_latency: psql failed")
        return
    status, body = await http(args.urls[0], "POST", "/v1/admin/changes", args.admin_token, {
        "types": ["locations"],
        "locations": {"create": [key], "attributes": {str(key): {
            "name": "Live", "city": "Oslo", "latitude": 59.9, "longitude": 10.7}}}})
    if status != 200:
        sys.exit(f"live_latency: the admin commit answered {status}: {body[:200]!r}")


class Engine:
    """A `seed-bench observe` process: the wall-clock time it reported each created key."""

    def __init__(self, command):
        self.command = shlex.split(command)
        self.seen = {}
        self.ready = asyncio.Event()

    async def start(self):
        self.process = await asyncio.create_subprocess_exec(*self.command, stdout=asyncio.subprocess.PIPE)
        self.reading = asyncio.ensure_future(self.read())
        try:
            await asyncio.wait_for(self.ready.wait(), 900)
        except asyncio.TimeoutError:
            sys.exit("live_latency: the engine did not catch up within 900 s")

    async def read(self):
        while line := await self.process.stdout.readline():
            event = json.loads(line)
            if "failed" in event:
                sys.exit(f"live_latency: the engine failed: {event['failed']}")
            if event.get("ready"):
                self.ready.set()
            elif "key" in event:
                self.seen[event["key"]] = event["at"]

    async def reported(self, key, within):
        """The wall-clock time the engine reported `key`, waiting up to `within` seconds; None if it did not."""
        deadline = time.monotonic() + within
        while key not in self.seen and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        return self.seen.get(key)

    async def stop(self):
        self.process.terminate()
        await self.process.wait()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--urls", nargs="+", required=True)
    parser.add_argument("--clients", type=int, required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--writer", choices=["admin", "psql"], default="admin")
    parser.add_argument("--database", help="PostgreSQL URL for --writer psql")
    parser.add_argument("--token", required=True)
    parser.add_argument("--admin-token", required=True)
    parser.add_argument("--pid", type=int, required=True, help="the first server's process id")
    parser.add_argument("--engine", help="a `seed-bench observe` command line to time as well")
    parser.add_argument("--live-reads", action="store_true",
                        help="clients wait with live reads (GET /v1/changes with live) instead of POST /v1/sync")
    args = parser.parse_args()

    engine = Engine(args.engine) if args.engine else None
    if engine:
        await engine.start()

    idle_kib = memory_kib(args.pid)
    clients = [Client(args.urls[index % len(args.urls)], args.token, args.live_reads) for index in range(args.clients)]
    for start in range(0, len(clients), 500):
        await asyncio.gather(*(client.connect() for client in clients[start:start + 500]))
    counts = [len(clients[index::len(args.urls)]) for index in range(len(args.urls))]
    latencies, errors, held_kib, error_statuses = [], 0, 0, {}
    engine_latencies, engine_missed = [], 0
    current = await revision(args.urls[0], args.token)
    for round_number in range(args.rounds):
        for client in clients:
            client.send(current)
        answers = [asyncio.ensure_future(client.answer()) for client in clients]
        await wait_until_held(args.urls, args.admin_token, counts)
        if round_number == 0:
            held_kib = memory_kib(args.pid)
        started, started_wall = time.monotonic(), time.time()
        await commit(args, current)
        for status, body, finished in await asyncio.gather(*answers):
            answer = json.loads(body) if status == 200 else {}
            if status != 200 or answer.get("maxRevision") != current + 1 or not answer.get("changeSets"):
                errors += 1
                error_statuses[str(status)] = error_statuses.get(str(status), 0) + 1
                continue
            latencies.append((finished - started) * 1000)
        if engine:
            seen = await engine.reported(900_000_000 + current, 30)
            if seen is None:
                engine_missed += 1
            else:
                engine_latencies.append((seen - started_wall) * 1000)
        current += 1
    if engine:
        await engine.stop()
    latencies.sort()
    engine_latencies.sort()
    def percentile(p, values=latencies):
        return round(values[min(len(values) - 1, int(len(values) * p))], 1) if values else None
    engine_figures = {
        "engine_p50_ms": percentile(0.50, engine_latencies), "engine_p99_ms": percentile(0.99, engine_latencies),
        "engine_max_ms": round(engine_latencies[-1], 1) if engine_latencies else None, "engine_missed": engine_missed,
    } if engine else {}
    print(json.dumps({**engine_figures,
        "clients": args.clients, "rounds": args.rounds, "writer": args.writer, "servers": len(args.urls),
        "waiting_with": "live reads" if args.live_reads else "POST /v1/sync",
        "p50_ms": percentile(0.50), "p99_ms": percentile(0.99), "max_ms": round(latencies[-1], 1) if latencies else None,
        "mean_ms": round(statistics.mean(latencies), 1) if latencies else None, "errors": errors,
        "error_statuses": error_statuses,
        "server_rss_idle_mib": round(idle_kib / 1024, 1), "server_rss_held_mib": round(held_kib / 1024, 1),
        "server_kib_per_held_request": round((held_kib - idle_kib) / max(1, counts[0]), 1),
    }))


asyncio.run(main())
