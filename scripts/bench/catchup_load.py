#!/usr/bin/env python3
"""Apps catching up through the change log: N apps, all from the same seed revision.

Each app reads `GET /v1/changes?after=R&schemaVersion=V` from the seed's revision, answer after
answer while `hasMore` is true (the head ends it), over keep-alive connections: `--concurrency` apps
at a time, each on a connection of its own, with `Accept-Encoding: gzip` as an app off the server's
machine sends, and a read token of `--tokens` (app i takes token i mod their number). Only the head
of each body is inflated (for `maxRevision` and `hasMore`); the rest is read and dropped.

Correctness: every answer's `ETag` must be the origin's for the same address (read once from
`--origin` after the run: an answer a cache kept that differs from the origin's is stale), every app
must reach `--expect-revision`, and the revisions must follow on (each answer's `after` the last
one's `maxRevision`).

With `--count-at URL...` and `--admin-token`, the servers' `/metrics` are read before and after the
apps' run: what the origin answered of `GET /v1/changes` (`origin_reads`, and its share of the apps'
reads) and of `GET /v1/auth` (`origin_auth_checks`), the ETag check's own reads not counted.

Prints one JSON object: apps, requests, requests_per_second, p50_ms, p99_ms (per request, from
sending it to its last byte), errors (failed requests, non-200), stale (ETags not the origin's),
incomplete (apps that did not reach the revision), reconnects (kept-alive connections the server
closed before an answer: connected again and the read sent again), the mean body size as received
(gzip-compressed), and the cache's verdicts
(`X-Cache-Status`) when the answers carry them.
"""
import argparse
import asyncio
import json
import re
import statistics
import sys
import time
import urllib.parse
import urllib.request
import zlib

HEAD_LIMIT = 64 * 1024


async def read_answer(reader):
    """(status, headers, body) of one HTTP/1.1 answer (Content-Length or chunked)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        parts = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            parts.append(await reader.readexactly(size + 2))
            if size == 0:
                break
        body = b"".join(part[:-2] for part in parts)
    else:
        body = b""
    return status, headers, body


def feed_head(headers, body):
    """maxRevision and hasMore from the start of the body, inflating only its first bytes."""
    if headers.get("content-encoding") == "gzip":
        text = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(body[:4096], 256)
    else:
        text = body[:256]
    found = re.match(rb'\{"maxRevision":(\d+),"hasMore":(true|false)', text)
    if not found:
        raise ValueError(f"not a change-log answer: {text[:80]!r}")
    return int(found.group(1)), found.group(2) == b"true"


class Run:
    def __init__(self, options, tokens):
        self.options = options
        self.tokens = tokens
        self.url = urllib.parse.urlsplit(options.url)
        self.latencies = []
        self.errors = 0
        self.incomplete = 0
        self.verdicts = {}
        self.reconnects = 0
        self.bytes = 0
        self.tags = {}  # address -> set of ETags seen

    async def app(self, index, connection):
        reader, writer = connection
        token = self.tokens[index % len(self.tokens)]
        revision = self.options.start
        while True:
            address = f"/v1/changes?after={revision}&schemaVersion={self.options.schema_version}"
            request = (f"GET {address} HTTP/1.1\r\nHost: {self.url.hostname}\r\nAuthorization: Bearer {token}\r\n"
                       "Accept-Encoding: gzip\r\n\r\n").encode()
            started = time.perf_counter()
            writer.write(request)
            try:
                status, headers, body = await read_answer(reader)
            except asyncio.IncompleteReadError as error:
                if error.partial:
                    raise
                # The server closed the kept-alive connection before answering: a client connects again
                # and sends the read again, as HTTP clients do for a GET.
                writer.close()
                reader, writer = connection = await asyncio.open_connection(self.url.hostname, self.url.port)
                self.reconnects += 1
                started = time.perf_counter()
                writer.write(request)
                status, headers, body = await read_answer(reader)
            self.latencies.append(time.perf_counter() - started)
            self.bytes += len(body)
            verdict = headers.get("x-cache-status")
            if verdict:
                self.verdicts[verdict] = self.verdicts.get(verdict, 0) + 1
            if status != 200:
                self.errors += 1
                break
            self.tags.setdefault(address, set()).add(headers.get("etag"))
            after, more = feed_head(headers, body)
            if after < revision:
                raise ValueError(f"{address} went back to {after}")
            revision = after
            if not more:
                break
        if revision != self.options.expect_revision:
            self.incomplete += 1
        return connection

    async def worker(self, queue):
        connection = None
        while True:
            try:
                index = queue.get_nowait()
            except asyncio.QueueEmpty:
                break
            try:
                if connection is None:
                    connection = await asyncio.open_connection(self.url.hostname, self.url.port)
                connection = await asyncio.wait_for(self.app(index, connection), timeout=120)
            except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, ValueError) as error:
                self.errors += 1
                self.incomplete += 1
                print(f"catchup_load: app {index}: {error!r}", file=sys.stderr)
                if connection:
                    connection[1].close()
                connection = None
        if connection:
            connection[1].close()

    async def origin_tags(self):
        """The origin's ETag (gzip) for every address an app read."""
        origin = urllib.parse.urlsplit(self.options.origin)
        reader, writer = await asyncio.open_connection(origin.hostname, origin.port)
        tags = {}
        for address in sorted(self.tags):
            writer.write((f"GET {address} HTTP/1.1\r\nHost: {origin.hostname}\r\nAuthorization: Bearer {self.tokens[0]}\r\n"
                          "Accept-Encoding: gzip\r\n\r\n").encode())
            status, headers, _ = await read_answer(reader)
            tags[address] = headers.get("etag") if status == 200 else None
        writer.close()
        return tags

    def answered(self):
        """Requests the servers of --count-at answered, by route, from their /metrics."""
        counts = {}
        for url in self.options.count_at:
            request = urllib.request.Request(url.rstrip("/") + "/metrics",
                                             headers={"Authorization": f"Bearer {self.options.admin_token}"})
            with urllib.request.urlopen(request, timeout=30) as answer:
                for line in answer.read().decode().splitlines():
                    found = re.match(r'seedsync_http_requests_total\{.*route="([^"]+)".*\} (\S+)$', line)
                    if found:
                        counts[found.group(1)] = counts.get(found.group(1), 0) + int(float(found.group(2)))
        return counts

    async def main(self):
        queue = asyncio.Queue()
        for index in range(self.options.apps):
            queue.put_nowait(index)
        before = self.answered()
        started = time.perf_counter()
        await asyncio.gather(*(self.worker(queue) for _ in range(min(self.options.concurrency, self.options.apps))))
        elapsed = time.perf_counter() - started
        after = self.answered()
        origin = await self.origin_tags()
        stale = sum(1 for address, seen in self.tags.items() for tag in seen if tag != origin[address])
        latencies = sorted(self.latencies)
        counted = {}
        if self.options.count_at:
            reads = after.get("/v1/changes", 0) - before.get("/v1/changes", 0)
            counted = {
                "origin_reads": reads,
                "origin_share_percent": round(100 * reads / max(len(latencies), 1), 3),
                "origin_auth_checks": after.get("/v1/auth", 0) - before.get("/v1/auth", 0),
            }
        return counted | {
            "apps": self.options.apps,
            "requests": len(latencies),
            "requests_per_second": round(len(latencies) / elapsed),
            "p50_ms": round(statistics.median(latencies) * 1000, 2) if latencies else None,
            "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 2) if latencies else None,
            "seconds": round(elapsed, 1),
            "errors": self.errors,
            "stale": stale,
            "incomplete": self.incomplete,
            "addresses": len(self.tags),
            "reconnects": self.reconnects,
            "kib_per_read": round(self.bytes / max(len(latencies), 1) / 1024, 1),
            "cache": self.verdicts,
            "hit_ratio_percent": round(100 * self.verdicts.get("HIT", 0) / max(len(latencies), 1), 3),
        }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="where apps send their reads (a cache, or the origin)")
    parser.add_argument("--origin", required=True, help="a server whose answers are the truth")
    parser.add_argument("--tokens", required=True, help="a file of read tokens, one per line")
    parser.add_argument("--apps", type=int, default=10000)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--start", type=int, required=True, help="the seed's revision")
    parser.add_argument("--expect-revision", type=int, required=True)
    parser.add_argument("--schema-version", type=int, default=1)
    parser.add_argument("--case", help="a name for the run, printed as the object's `case`")
    parser.add_argument("--count-at", nargs="*", default=[], help="servers whose answered requests are counted")
    parser.add_argument("--admin-token", help="a file with an admin token, for --count-at's /metrics")
    options = parser.parse_args()
    if options.count_at:
        if not options.admin_token:
            parser.error("--count-at needs --admin-token")
        options.admin_token = open(options.admin_token).read().strip()
    tokens = [line.strip() for line in open(options.tokens) if line.strip()]
    row = asyncio.run(Run(options, tokens).main())
    print(json.dumps(({"case": options.case} if options.case else {}) | row))


if __name__ == "__main__":
    main()
