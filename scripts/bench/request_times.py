#!/usr/bin/env python3
"""Times one request, sent again and again on one keep-alive connection, for scripts/bench/bench.sh.

Usage: request_times.py URL TOKEN_FILE COUNT [BODY]

Sends COUNT requests to URL (GET, or POST of BODY as JSON when BODY is given) with the token in
TOKEN_FILE, after 20 untimed ones that warm the server's statements and the page cache. Every
answer must be 200 and is read whole. Prints one JSON object: the median, p90 and p99 milliseconds
and the bytes of the last answer. Exits 1, saying why, on any other status or a failed connection.
"""
import http.client
import json
import sys
import time
import urllib.parse

WARMUP = 20


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 64
    url, token_file, count = urllib.parse.urlsplit(argv[0]), argv[1], int(argv[2])
    body = argv[3].encode() if len(argv) == 4 else None
    with open(token_file, encoding="utf-8") as file:
        token = file.read().strip()
    headers = {"Authorization": f"Bearer {token}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    target = url.path + (f"?{url.query}" if url.query else "")
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    times = []
    size = 0
    for index in range(WARMUP + count):
        started = time.perf_counter()
        connection.request("POST" if body is not None else "GET", target, body=body, headers=headers)
        answer = connection.getresponse()
        data = answer.read()
        elapsed = time.perf_counter() - started
        if answer.status != 200:
            print(f"{argv[0]}: status {answer.status}: {data[:300]!r}", file=sys.stderr)
            return 1
        if index >= WARMUP:
            times.append(elapsed * 1000)
        size = len(data)
    connection.close()
    times.sort()

    def at(share):
        return round(times[min(len(times) - 1, int(share * len(times)))], 3)

    print(json.dumps({"median_ms": at(0.5), "p90_ms": at(0.9), "p99_ms": at(0.99), "bytes": size, "count": count}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
