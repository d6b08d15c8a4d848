#!/usr/bin/env python3
"""Live reads through a cache: N apps waiting for commits through nginx in front of one origin.

Opens `--clients` keep-alive connections to `--url` (the cache), spread over source addresses
127.0.0.1, 127.0.0.2, ... (`--sources`: one source address has about 28,000 ephemeral ports), each
an app that is caught up and follows the log with live reads, as the engine does:
`GET /v1/changes?after=R&schemaVersion=V&live=C` (C from the last answer's `SeedSync-Live-Cursor`
when it was empty, else 0), then the same from the answer's `maxRevision`. Meanwhile one writer
commits a change set to the origin every `--every` seconds (`POST /v1/admin/changes`) for
`--seconds` seconds, with a pause of `--gap` seconds in the middle (no commit: the origin's live
wait ends, and the apps follow the cursor of the empty answer).

Correctness: every distinct answer (address and body) is checked once to hold the revisions after
its `after` up to its `maxRevision`, none missing; every app must end at the origin's revision
(`missing`: apps that did not, `bad_answers`: answers that skipped or repeated a revision).

Figures: commit-to-app latency for every app and every commit (from just before the commit was
sent to the arrival of the answer that holds it; p50, p99, max); the origin's held requests
(`seedsync_waiting_requests`, sampled every 100 ms: max and mean while apps waited), the
`GET /v1/changes` the origin answered (total and per commit), its CPU (share of one core) and
resident memory; the clients' errors (status other than 200, connections lost).

Prints one JSON object.
"""
import argparse
import asyncio
import json
import os
import re
import resource
import statistics
import sys
import time
import urllib.parse
import urllib.request

MAX_REVISION = re.compile(rb'^\{"maxRevision":(\d+)')


class Run:
    def __init__(self, options):
        self.options = options
        self.url = urllib.parse.urlsplit(options.url)
        self.committed = {}  # revision -> monotonic time just before its commit was sent
        self.latencies = []
        self.checked = {}  # (after, body) -> whether it holds after+1...maxRevision
        self.bad_answers = 0
        self.errors = 0
        self.statuses = {}
        self.lost = 0
        self.stopping = False
        self.cursor_hops = 0
        self.early = []  # (revision, arrival) of deliveries before their commit's answer was read

    def check(self, after, body):
        key = (after, body)
        verdict = self.checked.get(key)
        if verdict is None:
            try:
                answer = json.loads(body)
                revisions = [changeSet["revision"] for changeSet in answer["changeSets"]]
                verdict = revisions == list(range(after + 1, answer["maxRevision"] + 1))
            except (ValueError, KeyError, TypeError):
                verdict = False
            self.checked[key] = verdict
        return verdict


class App(asyncio.Protocol):
    """One app on one keep-alive connection: a live read at a time."""

    def __init__(self, run, revision):
        self.run = run
        self.revision = revision
        self.cursor = 0
        self.buffer = bytearray()
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport
        self.send()

    def send(self):
        options = self.run.options
        self.transport.write(
            (f"GET /v1/changes?after={self.revision}&schemaVersion={options.schema_version}&live={self.cursor} HTTP/1.1\r\n"
             f"Host: {self.run.url.netloc}\r\nAuthorization: Bearer {options.token}\r\n\r\n").encode())

    def data_received(self, data):
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
            headers = {}
            for line in head[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            if "content-length" not in headers:
                raise ValueError(f"an answer without Content-Length: {head}")
            length = int(headers["content-length"])
            if len(self.buffer) < end + 4 + length:
                return
            body = bytes(self.buffer[end + 4:end + 4 + length])
            del self.buffer[:end + 4 + length]
            self.answered(int(head[0].split(" ")[1]), headers, body)

    def answered(self, status, headers, body):
        run = self.run
        if status != 200:
            run.errors += 1
            run.statuses[str(status)] = run.statuses.get(str(status), 0) + 1
            asyncio.get_running_loop().call_later(1, self.send)
            return
        if not run.check(self.revision, body):
            run.bad_answers += 1
        top = int(MAX_REVISION.match(body).group(1))
        now = time.monotonic()
        for revision in range(self.revision + 1, top + 1):
            sent = run.committed.get(revision)
            if sent is not None:
                run.latencies.append(now - sent)
            else:
                # The answer came before the writer read its commit's revision: timed at the end.
                run.early.append((revision, now))
        if top > self.revision:
            self.revision, self.cursor = top, 0
        else:
            self.cursor = int(headers.get("seedsync-live-cursor", "0"))
            run.cursor_hops += 1
        if not run.stopping:
            self.send()

    def connection_lost(self, error):
        if not self.run.stopping:
            self.run.lost += 1


def get(url, path, token):
    request = urllib.request.Request(url.rstrip("/") + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.read()


def post(url, path, token, body):
    request = urllib.request.Request(url.rstrip("/") + path, data=json.dumps(body).encode(), method="POST", headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def metrics(url, admin):
    """(held requests, answered GET /v1/changes) from the origin's /metrics."""
    held, reads = 0, 0
    for line in get(url, "/metrics", admin).decode().splitlines():
        if line.startswith("seedsync_waiting_requests "):
            held = int(float(line.split()[1]))
        elif line.startswith("seedsync_http_requests_total{") and 'route="/v1/changes"' in line:
            reads += int(float(line.split()[-1]))
    return held, reads


def process_figures(pid):
    """(CPU seconds, resident KiB) of a process."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    with open(f"/proc/{pid}/status") as status:
        rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return cpu, rss


async def sample_held(run, samples):
    options = run.options
    loop = asyncio.get_running_loop()
    while not run.stopping:
        held, _ = await loop.run_in_executor(None, metrics, options.origin, options.admin_token)
        samples.append(held)
        await asyncio.sleep(0.1)


async def commit(run, index):
    options = run.options
    key = 800_000_000 + index
    body = {"types": ["locations"], "locations": {"create": [key], "attributes": {str(key): {
        "name": "Live", "city": "Oslo", "latitude": 59.9, "longitude": 10.7}}}}
    loop = asyncio.get_running_loop()
    sent = time.monotonic()
    answer = await loop.run_in_executor(None, post, options.origin, "/v1/admin/changes", options.admin_token, body)
    run.committed[answer["revision"]] = sent
    return answer["revision"]


async def main(options):
    run = Run(options)
    loop = asyncio.get_running_loop()
    start = json.loads(get(options.origin, "/v1/schema", options.token))["revision"]
    async def connect(index):
        source = f"127.0.0.{1 + index % options.sources}"
        try:
            _, app = await loop.create_connection(
                lambda: App(run, start), run.url.hostname, run.url.port, local_addr=(source, 0))
        except OSError as error:
            sys.exit(f"live_cache_load: app {index} could not connect from {source}: {error}")
        return app

    apps = []
    for first in range(0, options.clients, 500):
        apps += await asyncio.gather(*(connect(index) for index in range(first, min(first + 500, options.clients))))
    # Every app holds a live read from `start` now (nginx holds all but a few, waiting for their answer).
    ramp = time.monotonic()
    await asyncio.sleep(2)
    samples = []
    sampler = asyncio.ensure_future(sample_held(run, samples))
    cpu_before, rss_before = process_figures(options.pid)
    _, reads_before = metrics(options.origin, options.admin_token)
    began = time.monotonic()
    count = int(options.seconds / options.every)
    # Commit i at i * every seconds, the ones in the second half `gap` seconds later.
    schedule = [i * options.every + (options.gap if i * options.every >= options.seconds / 2 else 0) for i in range(count)]
    for index, at in enumerate(schedule):
        await asyncio.sleep(max(0, began + at - time.monotonic()))
        await commit(run, index)
    commits = len(schedule)
    last = max(run.committed)
    settle = time.monotonic() + options.settle
    while time.monotonic() < settle and any(app.revision < last for app in apps):
        await asyncio.sleep(0.1)
    wall = time.monotonic() - began
    cpu_after, rss_after = process_figures(options.pid)
    _, reads_after = metrics(options.origin, options.admin_token)
    run.stopping = True
    await sampler
    for app in apps:
        app.transport.close()
    latencies = sorted(run.latencies + [now - run.committed[revision] for revision, now in run.early
                                         if revision in run.committed])

    def percentile(p):
        return round(latencies[min(len(latencies) - 1, int(len(latencies) * p))] * 1000, 1) if latencies else None

    waiting = samples[2:] or samples
    return {
        "clients": options.clients, "commits": commits, "every_s": options.every, "gap_s": options.gap,
        "p50_ms": percentile(0.50), "p99_ms": percentile(0.99), "max_ms": round(latencies[-1] * 1000, 1) if latencies else None,
        "mean_ms": round(statistics.mean(latencies) * 1000, 1) if latencies else None,
        "deliveries": len(latencies), "expected_deliveries": commits * options.clients,
        "missing": sum(1 for app in apps if app.revision < last), "bad_answers": run.bad_answers,
        "distinct_answers": len(run.checked), "cursor_hops": run.cursor_hops,
        "errors": run.errors, "statuses": run.statuses, "lost_connections": run.lost,
        "origin_held_max": max(waiting, default=0), "origin_held_mean": round(statistics.mean(waiting), 2) if waiting else 0,
        "origin_reads": reads_after - reads_before, "origin_reads_per_commit": round((reads_after - reads_before) / max(commits, 1), 2),
        "origin_cpu_percent_of_a_core": round(100 * (cpu_after - cpu_before) / wall, 1),
        "origin_rss_mib": round(rss_after / 1024, 1), "origin_rss_mib_before": round(rss_before / 1024, 1),
    }


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the cache the apps read through")
    parser.add_argument("--origin", required=True, help="the seed-server behind it (commits, /metrics)")
    parser.add_argument("--token", required=True, help="a read token")
    parser.add_argument("--admin-token", required=True, help="an admin token (commits, /metrics)")
    parser.add_argument("--pid", type=int, required=True, help="the origin's process id")
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=20, help="seconds of commits")
    parser.add_argument("--every", type=float, default=1.0, help="seconds between commits")
    parser.add_argument("--gap", type=float, default=0, help="a pause without commits in the middle, in seconds")
    parser.add_argument("--settle", type=float, default=10, help="seconds the apps may take to reach the last commit")
    parser.add_argument("--sources", type=int, default=1, help="source addresses 127.0.0.1... to spread connections over")
    parser.add_argument("--schema-version", type=int, default=1)
    parser.add_argument("--case", help="a name for the run, printed as the object's `case`")
    options = parser.parse_args()
    options.token = open(options.token).read().strip()
    options.admin_token = open(options.admin_token).read().strip()
    return options


if __name__ == "__main__":
    options = arguments()
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    row = asyncio.run(main(options))
    print(json.dumps(({"case": options.case} if options.case else {}) | row))
