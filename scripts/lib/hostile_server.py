#!/usr/bin/env python3
"""A hostile seed-server for scripts/suites/hostile-servers.sh: a proxy on loopback that forwards every
request to a real seed-server and misbehaves, as BEHAVIOUR says, on the requests whose path starts
with --route (counted from 1): on the --nth one, or on every one from it with --always.

Usage: hostile_server.py UPSTREAM BEHAVIOUR --route /v1/sync [--nth N] [--always]
Prints "listening on http://127.0.0.1:PORT" once ready; runs until killed.
"""

import argparse
import http.client
import json
import socket
import socketserver
import struct
import sys
import threading
import time
import urllib.parse
import zlib


def reason(status):
    return {200: "OK", 206: "Partial Content", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 410: "Gone",
            429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable"}.get(status, "Status")


def head(status, headers, length=None):
    lines = [f"HTTP/1.1 {status} {reason(status)}"]
    lines += [f"{name}: {value}" for name, value in headers if name.lower() not in ("content-length", "connection",
                                                                                      "transfer-encoding")]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def error_body(code, message, **extra):
    return json.dumps({"error": dict(code=code, message=message, **extra)}).encode()


def gzip_bomb():
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    return b"".join(compressor.compress(block) for _ in range(1024)) + compressor.flush()


# Each rewrite takes the upstream answer's JSON and returns the JSON to send instead.

def first_change_set(answer):
    if not answer.get("changeSets"):
        raise RuntimeError("the upstream answer holds no change set to damage")
    return answer["changeSets"][0]


def revision_gap(answer):
    for change_set in answer["changeSets"]:
        change_set["revision"] += 1
    return answer


def revision_regression(answer):
    first_change_set(answer)["revision"] -= 2
    return answer


def wrong_types(answer):
    answer["maxRevision"] = str(answer["maxRevision"])
    return answer


def snapshot_wrong_types(answer):
    answer["rows"] = [[str(value) for value in row] for row in answer["rows"]]
    return answer


def snapshot_unknown_column(answer):
    answer["columns"] = answer["columns"][:-1] + ["colour"]
    return answer


def snapshot_sql_type(answer):
    answer["type"] = 'events"; DROP TABLE locations; --'
    return answer


def unknown_type(answer):
    change_set = first_change_set(answer)
    change_set["types"].append("ghosts")
    change_set["ghosts"] = {"create": [1], "update": [], "delete": [], "attributes": {"1": {"name": "Boo"}}}
    return answer


def sql_identifier(answer):
    change_set = first_change_set(answer)
    name = "locations; DROP TABLE events; --"
    change_set["types"].append(name)
    change_set[name] = {"create": [], "update": [], "delete": [1], "attributes": {}}
    return answer


def unknown_field(answer):
    change_set = first_change_set(answer)
    if "locations" not in change_set["types"]:
        change_set["types"].append("locations")
        change_set["locations"] = {"create": [], "update": [], "delete": [], "attributes": {}}
    changes = change_set["locations"]
    changes["create"].append(9_000_001)
    changes["attributes"]["9000001"] = {"name": "Hall", "city": "Oslo", "latitude": 1.5, "longitude": 2.5,
                                        "colour": "red"}
    return answer


def results_for_other_ids(answer):
    for result in answer.get("results", []):
        result["id"] = "someone-else"
    return answer


def results_missing(answer):
    answer.pop("results", None)
    return answer


def key_map_naming_unknown_keys(answer):
    for result in answer.get("results", []):
        if result.get("status") == "applied":
            result["keys"] = {"locations": {"-987654": 4_000_000}}
    return answer


def conflict_for_rows_the_app_lacks(answer):
    for result in answer.get("results", []):
        result.pop("revision", None)
        result.pop("keys", None)
        result["status"] = "conflict"
        result["changeSet"] = {"conflict": True, "types": ["locations"], "locations": {
            "create": [], "update": [7_777_777], "delete": [], "attributes": {"7777777": {
                "name": "Ghost", "city": "Nowhere", "latitude": 0.5, "longitude": 0.5, "revision": 1}}}}
    return answer


REWRITES = {name: function for name, function in globals().items() if callable(function) and name in (
    "revision_gap", "revision_regression", "wrong_types", "snapshot_wrong_types", "snapshot_unknown_column",
    "snapshot_sql_type", "unknown_type", "sql_identifier", "unknown_field", "results_for_other_ids",
    "results_missing", "key_map_naming_unknown_keys", "conflict_for_rows_the_app_lacks")}

STATUSES = {
    "status_401": (401, [("WWW-Authenticate", "Bearer")], error_body("unauthorized", "no such token")),
    "status_403": (403, [], error_body("forbidden", "this token may not do that")),
    "status_404": (404, [], error_body("not_found", "no such route")),
    "status_500": (500, [], b""),
    "status_503_retry_after": (503, [("Retry-After", "1")], error_body("store_unavailable", "restarting")),
    "status_429_retry_after": (429, [("Retry-After", "1")], error_body("too_many_requests", "slow down")),
    "history_expired": (410, [], None),
}


class Proxy(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, options):
        super().__init__(("127.0.0.1", 0), Handler)
        self.options = options
        parsed = urllib.parse.urlparse(options.upstream)
        self.upstream = (parsed.hostname, parsed.port)
        self.lock = threading.Lock()
        self.count = 0
        self.bomb = gzip_bomb() if options.behaviour == "gzip_bomb" else None
        self.token = open(options.token_file).read().strip() if options.token_file else None

    def misbehaves(self, path):
        if not path.startswith(self.options.route):
            return False
        with self.lock:
            self.count += 1
            return self.count == self.options.nth or (self.options.always and self.count >= self.options.nth)


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        sock = self.request
        sock.settimeout(30)
        reader = sock.makefile("rb")
        request_line = reader.readline().decode("latin-1").strip()
        if not request_line:
            return
        method, path, _ = request_line.split(" ", 2)
        headers = []
        while (line := reader.readline().decode("latin-1").strip()):
            name, _, value = line.partition(":")
            headers.append((name.strip(), value.strip()))
        length = next((int(v) for n, v in headers if n.lower() == "content-length"), 0)
        body = reader.read(length) if length else b""
        if any(n.lower() == "content-encoding" and v.lower() == "gzip" for n, v in headers):
            body = zlib.decompress(body, 31)
        forward = {n: v for n, v in headers if n.lower() in ("authorization", "content-type", "range", "if-range")}
        if path.startswith("/v1/seeds/") and self.server.token and not any(n.lower() == "authorization" for n in forward):
            # A published seed's host (a CDN) has credentials of its own: the app sends its token only to the origin.
            forward["Authorization"] = f"Bearer {self.server.token}"
        status, answer_headers, answer = self.forward(method, path, forward, body)
        if self.server.misbehaves(path):
            self.misbehave(sock, status, answer_headers, answer)
        else:
            sock.sendall(head(status, answer_headers, len(answer)) + answer)

    def forward(self, method, path, headers, body):
        connection = http.client.HTTPConnection(*self.server.upstream, timeout=60)
        connection.request(method, path, body=body or None, headers=headers)
        response = connection.getresponse()
        answer = response.read()
        kept = [(n, v) for n, v in response.getheaders() if n.lower() in (
            "content-type", "www-authenticate", "retry-after", "etag", "content-range", "accept-ranges")]
        connection.close()
        return response.status, kept, answer

    def misbehave(self, sock, status, headers, answer):
        behaviour = self.server.options.behaviour
        if behaviour in REWRITES:
            answer = json.dumps(REWRITES[behaviour](json.loads(answer))).encode()
            sock.sendall(head(status, headers, len(answer)) + answer)
        elif behaviour in STATUSES:
            status, extra, body = STATUSES[behaviour]
            if body is None:  # 410: the history starts after what the client holds
                revision = json.loads(answer).get("maxRevision", 0) + 1000
                body = error_body("history_expired", "the change history has expired", minRevision=revision)
            sock.sendall(head(status, extra + [("Content-Type", "application/json")], len(body)) + body)
        elif behaviour == "malformed_json":
            cut = answer[: len(answer) // 2]
            sock.sendall(head(status, headers, len(cut)) + cut)
        elif behaviour == "flip_byte":
            flipped = bytearray(answer)
            flipped[len(flipped) // 2] ^= 0x01
            sock.sendall(head(status, headers, len(flipped)) + bytes(flipped))
        elif behaviour == "not_json":
            page = b"<html><body>502 Bad Gateway</body></html>"
            sock.sendall(head(200, [("Content-Type", "text/html")], len(page)) + page)
        elif behaviour == "cut_mid_body":
            sock.sendall(head(status, headers, len(answer)) + answer[: len(answer) // 2])
        elif behaviour == "reset_mid_body":
            sock.sendall(head(status, headers, len(answer)) + answer[: len(answer) // 2])
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif behaviour == "stall":
            time.sleep(self.server.options.stall_seconds)
        elif behaviour == "slow_drip":
            data = head(status, headers, len(answer)) + answer
            pause = self.server.options.drip_seconds / max(len(data), 1)
            for start in range(0, len(data), max(len(data) // 40, 1)):
                sock.sendall(data[start:start + max(len(data) // 40, 1)])
                time.sleep(pause * max(len(data) // 40, 1))
        elif behaviour == "huge_declared_body":
            sock.sendall(head(status, headers, 1 << 40) + answer)
            sock.sendall(b" " * (4 << 20))
        elif behaviour == "huge_body":
            padded = answer[:-1] + b', "padding": "' + b"x" * (80 << 20) + b'"}'
            sock.sendall(head(status, headers, len(padded)))
            for start in range(0, len(padded), 1 << 20):
                sock.sendall(padded[start:start + (1 << 20)])
        elif behaviour == "gzip_bomb":
            sock.sendall(head(status, headers + [("Content-Encoding", "gzip")], len(self.server.bomb))
                         + self.server.bomb)
        else:
            raise SystemExit(f"unknown behaviour {behaviour}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("upstream")
    parser.add_argument("behaviour")
    parser.add_argument("--route", required=True)
    parser.add_argument("--nth", type=int, default=1)
    parser.add_argument("--always", action="store_true")
    parser.add_argument("--stall-seconds", type=float, default=4)
    parser.add_argument("--drip-seconds", type=float, default=3)
    parser.add_argument("--token-file", help="the token to ask for /v1/seeds/ files with, when the client sent none")
    options = parser.parse_args()
    proxy = Proxy(options)
    print(f"listening on http://127.0.0.1:{proxy.server_address[1]}", flush=True)
    try:
        proxy.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
