#!/usr/bin/env python3
"""The hostile client matrix: raw HTTP requests a broken or malicious client could send to a
seed-server, each with the answer PROTOCOL.md promises, and after each one proof that the server
still serves. The matrix runs --passes times (4 or more); the server's resident memory is read
before, after each pass and at its peak (sampled every 20 ms). The first two passes warm the
allocator (8 MiB bodies, 1,000 sockets); a leak then grows memory in every pass. So the matrix fails
when memory grew more than --max-growth-mib (8) since pass 2 *and* was still growing in the last pass
(by more than a quarter of that). Warming may spill past pass 2: the SQLite store's readers each fill
a page cache of their own the first time the scheduler hands one a read, which on a busy machine can
be pass 3 (a CI run saw +9 MiB in pass 3 and nothing after, where a leak keeps going).

Usage: hostile_clients.py URL PID --read-token T --write-token T --admin-token T --jwt-key PEM [--passes N]
       [--max-growth-mib N]
The server must serve the demo dataset (`seed-server init --demo`) with `--body-timeout 2`, and take JWTs
signed ES256 with the key PEM under `kid` k1 (`--jwks-file`), with `--jwt-issuer https://id.hostile`,
`--jwt-audience hostile` and `--jwt-role-claim role` (scripts/suites/hostile-clients.sh starts it so).
Prints one line per case and a summary; exits 1 when a case fails or memory grows.
"""

import argparse
import gzip
import json
import os
import resource
import socket
import sys
import threading
import time
import urllib.parse
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jwt_keys  # noqa: E402

LIMIT = 8 * 1024 * 1024  # the server's default --max-body-size


class Answer:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    @property
    def code(self):
        try:
            return json.loads(self.body)["error"]["code"]
        except Exception:
            return None

    def json(self):
        return json.loads(self.body)


class Client:
    def __init__(self, url, tokens):
        parsed = urllib.parse.urlparse(url)
        self.address = (parsed.hostname, parsed.port)
        self.tokens = tokens

    def connect(self, timeout=15):
        sock = socket.create_connection(self.address, timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def head(self, method, path, token="read", headers=(), length=None):
        lines = [f"{method} {path} HTTP/1.1", "Host: seedsync"]
        if token:
            lines.append(f"Authorization: Bearer {self.tokens.get(token, token)}")
        if length is not None:
            lines.append(f"Content-Length: {length}")
        lines += list(headers)
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    def raw(self, data, timeout=15, pieces=None):
        """Sends `data` (or `pieces`, a list of (bytes, pause) pairs), reads one answer."""
        with self.connect(timeout) as sock:
            try:
                if pieces is None:
                    sock.sendall(data)
                else:
                    for piece, pause in pieces:
                        sock.sendall(piece)
                        time.sleep(pause)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server answered early and closed: read what it said
            return read_answer(sock)

    def request(self, method, path, body=None, token="read", headers=(), timeout=15):
        data = b"" if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
        length = None if body is None else len(data)
        return self.raw(self.head(method, path, token, headers, length) + data, timeout)


class Reader:
    """Reads answers from a connection, keeping bytes past one answer for the next (pipelining)."""

    def __init__(self, sock):
        self.sock, self.buffer = sock, b""

    def fill(self, need_text=None, need_size=None):
        while (need_text is not None and need_text not in self.buffer) or \
                (need_size is not None and len(self.buffer) < need_size):
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError(f"connection closed mid-answer ({len(self.buffer)} bytes)")
            self.buffer += chunk

    def take(self, size):
        self.fill(need_size=size)
        taken, self.buffer = self.buffer[:size], self.buffer[size:]
        return taken

    def line(self):
        self.fill(need_text=b"\r\n")
        line, _, self.buffer = self.buffer.partition(b"\r\n")
        return line

    def answer(self):
        self.fill(need_text=b"\r\n\r\n")
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            body = self.take(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while (size := int(self.line().split(b";")[0], 16)) > 0:
                body += self.take(size)
                self.take(2)
            self.take(2)
        else:
            body = self.buffer + b"".join(iter(lambda: self.sock.recv(65536), b""))
            self.buffer = b""
        if headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        return Answer(status, headers, body)


def read_answer(sock):
    return Reader(sock).answer()


# MARK: The cases


class Matrix:
    """Each case returns None when the answer is what PROTOCOL.md promises, or what differs."""

    def __init__(self, client, jwt_key):
        self.c = client
        self.sequence = 0
        self.jwt_key = jwt_key

    def unique(self, prefix):
        self.sequence += 1
        return f"{prefix}-{os.getpid()}-{self.sequence}-{time.time_ns()}"

    @staticmethod
    def expect(answer, status, code=None):
        if answer.status != status or (code is not None and answer.code != code):
            return f"expected {status} {code or ''}, got {answer.status} {answer.code} {answer.body[:160]!r}"
        return None

    def revision(self):
        return self.c.request("GET", "/v1/schema").json()["revision"]

    def some_row(self, type_name):
        page = self.c.request("GET", f"/v1/snapshot/{type_name}?limit=1").json()
        return dict(zip(page["columns"], page["rows"][0]))

    def push(self, change_sets, token="write"):
        return self.c.request("POST", "/v1/sync", {"maxRevision": self.revision(), "changeSets": change_sets}, token)

    def push_result(self, change_set):
        answer = self.push([change_set])
        if answer.status != 200:
            return None, f"push answered {answer.status} {answer.body[:160]!r}"
        return answer.json()["results"][0], None

    def location(self, key, **fields):
        values = {"name": "Hall", "city": "Oslo", "latitude": 59.9, "longitude": 10.7}
        values.update(fields)
        return self.change_set("locations", create=[key], attributes={str(key): values})

    def admin_update(self, values):
        """Commits, through the admin endpoint, an update of an existing location to `values`."""
        row = self.some_row("locations")
        changes = self.change_set("locations", update=[row["id"]], attributes={str(row["id"]): values})
        del changes["id"]
        return self.c.request("POST", "/v1/admin/changes", json.dumps(changes).encode(), "admin")

    def change_set(self, type_name, create=(), update=(), delete=(), attributes=None):
        changes = {"create": list(create), "update": list(update), "delete": list(delete), "attributes": attributes or {}}
        return {"id": self.unique("push"), "types": [type_name], type_name: changes}

    # Bodies over the limit, both ways, and bombs.

    def body_exactly_the_limit(self):
        # Read whole (the limit is not over): a JSON object, but not a change set.
        body = b"{" + b" " * (LIMIT - 2) + b"}"
        return self.expect(self.c.request("POST", "/v1/admin/changes", body, "admin"), 400, "malformed_json")

    def body_one_byte_over(self):
        body = b"{" + b" " * (LIMIT - 1) + b"}"
        return self.expect(self.c.request("POST", "/v1/admin/changes", body, "admin"), 413, "body_too_large")

    def declared_length_of_a_terabyte(self):
        data = self.c.head("POST", "/v1/sync", length=1 << 40) + b'{"maxRevision"'
        return self.expect(self.c.raw(data), 413, "body_too_large")

    def chunked_body_over_the_limit(self):
        head = self.c.head("POST", "/v1/sync", headers=["Transfer-Encoding: chunked"])
        chunk = b"%x\r\n" % (1 << 20) + b" " * (1 << 20) + b"\r\n"
        return self.expect(self.c.raw(head + chunk * 9 + b"0\r\n\r\n"), 413, "body_too_large")

    def gzip_exactly_the_limit_inflated(self):
        body = gzip.compress(b"{" + b" " * (LIMIT - 2) + b"}")
        answer = self.c.request("POST", "/v1/admin/changes", body, "admin", ["Content-Encoding: gzip"])
        return self.expect(answer, 400, "malformed_json")

    def gzip_one_byte_over_inflated(self):
        body = gzip.compress(b"{" + b" " * (LIMIT - 1) + b"}")
        answer = self.c.request("POST", "/v1/admin/changes", body, "admin", ["Content-Encoding: gzip"])
        return self.expect(answer, 413, "body_too_large")

    def gzip_bomb_of_a_gibibyte(self):
        compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
        block = bytes(1 << 20)
        body = b"".join(compressor.compress(block) for _ in range(1024)) + compressor.flush()
        answer = self.c.request("POST", "/v1/sync", body, headers=["Content-Encoding: gzip"])
        return self.expect(answer, 413, "body_too_large")

    def gzip_corrupt(self):
        body = bytearray(gzip.compress(b'{"maxRevision": 0}'))
        body[12] ^= 0xFF
        return self.expect(self.c.request("POST", "/v1/sync", bytes(body), headers=["Content-Encoding: gzip"]),
                           400, "malformed_gzip")

    def gzip_truncated(self):
        body = gzip.compress(b'{"maxRevision": 0}')[:-5]
        return self.expect(self.c.request("POST", "/v1/sync", body, headers=["Content-Encoding: gzip"]),
                           400, "malformed_gzip")

    def gzip_with_bytes_after_the_end(self):
        body = gzip.compress(b'{"maxRevision": 0}') + b"{}"
        return self.expect(self.c.request("POST", "/v1/sync", body, headers=["Content-Encoding: gzip"]),
                           400, "malformed_gzip")

    def unknown_content_encoding(self):
        answer = self.c.request("POST", "/v1/sync", b'{"maxRevision": 0}', headers=["Content-Encoding: br"])
        return self.expect(answer, 415, "unsupported_encoding")

    # HTTP framing.

    def invalid_chunk_size(self):
        head = self.c.head("POST", "/v1/sync", headers=["Transfer-Encoding: chunked"])
        return self.expect(self.c.raw(head + b"zz\r\n{}\r\n0\r\n\r\n"), 400, "malformed_http")

    def chunk_size_past_64_bits(self):
        head = self.c.head("POST", "/v1/sync", headers=["Transfer-Encoding: chunked"])
        return self.expect(self.c.raw(head + b"fffffffffffffffffffff\r\n{}\r\n0\r\n\r\n"), 400, "malformed_http")

    def length_and_chunked_together(self):
        head = self.c.head("POST", "/v1/sync", length=5, headers=["Transfer-Encoding: chunked"])
        return self.expect(self.c.raw(head + b"5\r\nhello\r\n0\r\n\r\n"), 400, "malformed_http")

    def two_different_lengths(self):
        head = self.c.head("POST", "/v1/sync", length=2, headers=["Content-Length: 20"])
        return self.expect(self.c.raw(head + b"{}"), 400, "malformed_http")

    def negative_length(self):
        head = self.c.head("POST", "/v1/sync", headers=["Content-Length: -1"])
        return self.expect(self.c.raw(head + b"{}"), 400, "malformed_http")

    def not_http(self):
        return self.expect(self.c.raw(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 hello\r\n\r\n"), 400, "malformed_http")

    def request_line_without_version(self):
        return self.expect(self.c.raw(b"GET /health\r\n\r\n"), 400, "malformed_http")

    def ten_thousand_headers(self):
        headers = [f"X-Flood-{i}: {i}" for i in range(10_000)]
        return self.expect(self.c.raw(self.c.head("GET", "/v1/schema", headers=headers)), 431, "headers_too_large")

    def one_header_of_a_mebibyte(self):
        answer = self.c.raw(self.c.head("GET", "/v1/schema", headers=["X-Big: " + "a" * (1 << 20)]))
        return self.expect(answer, 431, "headers_too_large")

    def url_of_a_mebibyte(self):
        # The request line counts toward the head's 80 KiB.
        answer = self.c.raw(self.c.head("GET", "/v1/snapshot/events?after=" + "9" * (1 << 20)))
        return self.expect(answer, 431, "headers_too_large")

    def body_cut_short(self):
        # The client closes before the body's end: nobody reads the answer; the server must go on.
        with self.c.connect() as sock:
            sock.sendall(self.c.head("POST", "/v1/sync", length=100) + b'{"maxRe')
        return None

    def body_dripping_past_the_time_limit(self):
        head = self.c.head("POST", "/v1/sync", length=18)
        pieces = [(head, 0)] + [(b" ", 0.4) for _ in range(8)]
        return self.expect(self.c.raw(None, pieces=pieces), 408, "body_timeout")

    def pipelined_requests(self):
        one = self.c.head("GET", "/v1/schema")
        with self.c.connect() as sock:
            sock.sendall(one + one + one)
            reader = Reader(sock)
            statuses = [reader.answer().status for _ in range(3)]
        return None if statuses == [200, 200, 200] else f"pipelined answers {statuses}"

    def http_1_0_closes(self):
        data = f"GET /v1/schema HTTP/1.0\r\nAuthorization: Bearer {self.c.tokens['read']}\r\n\r\n".encode()
        with self.c.connect() as sock:
            sock.sendall(data)
            reader = Reader(sock)
            answer = reader.answer()
            rest = reader.buffer + sock.recv(10)
        if answer.status != 200 or answer.headers.get("connection", "").lower() != "close" or rest != b"":
            return f"HTTP/1.0: {answer.status}, Connection {answer.headers.get('connection')}, then {rest!r}"
        return None

    def thousand_idle_sockets(self):
        sockets = [self.c.connect() for _ in range(1000)]
        try:
            for index in range(0, 1000, 100):  # half-sent heads too
                sockets[index].sendall(b"GET /v1/schema HTTP/1.1\r\nHost: x\r\n")
            answer = self.c.request("GET", "/v1/schema")
            return self.expect(answer, 200)
        finally:
            for sock in sockets:
                sock.close()

    # Authentication.

    def no_token(self):
        answer = self.c.request("GET", "/v1/schema", token=None)
        if answer.status != 401 or answer.headers.get("www-authenticate", "") != "Bearer":
            return f"expected 401 with WWW-Authenticate: Bearer, got {answer.status} {answer.headers}"
        return None

    def wrong_token_of_the_same_length(self):
        token = self.c.tokens["admin"][:-1] + ("0" if self.c.tokens["admin"][-1] != "0" else "1")
        data = self.c.head("GET", "/v1/schema", token=None, headers=[f"Authorization: Bearer {token}"])
        return self.expect(self.c.raw(data), 401, "unauthorized")

    def token_of_a_hundred_kibibytes(self):
        data = self.c.head("GET", "/v1/schema", token=None, headers=["Authorization: Bearer " + "a" * 100_000])
        return self.expect(self.c.raw(data), 431, "headers_too_large")

    # JWTs (PROTOCOL.md §3.1): one accepted, then every way one is refused, each with its reason.

    def jwt(self, header=None, **changes):
        """A JWT signed with the server's key: valid unless `header` or `changes` (claims; None removes one) say."""
        claims = {"iss": "https://id.hostile", "aud": ["hostile"], "exp": int(time.time()) + 300, "role": "read"}
        claims.update(changes)
        claims = {name: value for name, value in claims.items() if value is not None}
        return jwt_keys.sign(self.jwt_key, header or {"alg": "ES256", "kid": "k1"}, claims)

    def refused_jwt(self, token, reason):
        answer = self.c.request("GET", "/v1/schema", token=token)
        problem = self.expect(answer, 401, "unauthorized")
        if problem:
            return problem
        message = answer.json()["error"]["message"]
        challenge = answer.headers.get("www-authenticate", "")
        if reason not in message or not challenge.startswith('Bearer error="invalid_token"'):
            return f"expected a reason with {reason!r} and an invalid_token challenge, got {message!r}, {challenge!r}"
        return None

    def jwt_reads_and_may_not_push(self):
        token = self.jwt()
        problem = self.expect(self.c.request("GET", "/v1/schema", token=token), 200)
        return problem or self.expect(self.push([self.location(-1)], token=token), 403, "forbidden")

    def jwt_with_a_write_role_pushes_but_is_no_admin(self):
        token = self.jwt(role=["write"])
        problem = self.expect(self.push([self.location(-1)], token=token), 200)
        return problem or self.expect(self.c.request("GET", "/metrics", token=token), 403, "forbidden")

    def jwt_expired(self):
        return self.refused_jwt(self.jwt(exp=int(time.time()) - 120), "expired at")

    def jwt_not_yet_valid(self):
        return self.refused_jwt(self.jwt(nbf=int(time.time()) + 120), "not valid before")

    def jwt_without_expiry(self):
        return self.refused_jwt(self.jwt(exp=None), "has no `exp`")

    def jwt_wrongly_signed(self):
        return self.refused_jwt(jwt_keys.sign(jwt_keys.new_key(), {"alg": "ES256", "kid": "k1"}, {
            "iss": "https://id.hostile", "aud": "hostile", "exp": int(time.time()) + 300, "role": "read"}),
            "signature does not verify")

    def jwt_with_alg_none(self):
        token = self.jwt().rsplit(".", 2)
        unsigned = f"{jwt_keys.part({'alg': 'none', 'kid': 'k1'})}.{token[1]}."
        return self.refused_jwt(unsigned, 'alg "none"')

    def jwt_with_hs256_over_the_public_key(self):
        # The classic confusion: an HMAC keyed with the public key the server publishes.
        return self.refused_jwt(self.jwt(header={"alg": "HS256", "kid": "k1"}), "its key is for ES256")

    def jwt_with_an_unknown_kid(self):
        return self.refused_jwt(self.jwt(header={"alg": "ES256", "kid": self.unique("kid")}), "is not in the server's key set")

    def jwt_without_kid(self):
        return self.refused_jwt(self.jwt(header={"alg": "ES256"}), "names no key")

    def jwt_with_a_critical_extension(self):
        return self.refused_jwt(self.jwt(header={"alg": "ES256", "kid": "k1", "crit": ["x"], "x": 1}), "critical")

    def jwt_for_another_audience(self):
        return self.refused_jwt(self.jwt(aud="somebody-else"), "audience (`aud`) does not include hostile")

    def jwt_from_another_issuer(self):
        return self.refused_jwt(self.jwt(iss="https://id.evil"), "issuer (`iss`) is not https://id.hostile")

    def jwt_without_its_role_claim(self):
        return self.refused_jwt(self.jwt(role=None), "has no claim role")

    def jwt_claiming_admin(self):
        return self.refused_jwt(self.jwt(role="admin"), 'holds neither "read" nor "write"')

    def jwt_with_a_kid_of_control_characters(self):
        answer = self.c.request("GET", "/v1/schema", token=self.jwt(header={"alg": "ES256", "kid": "a\r\nX-Evil: 1" + "é" * 200}))
        if answer.status != 401 or "x-evil" in answer.headers or len(answer.headers.get("www-authenticate", "")) > 400:
            return f"expected 401 with a short, clean challenge, got {answer.status} {answer.headers}"
        return None

    def jwts_naming_two_hundred_unknown_kids(self):
        for _ in range(200):
            problem = self.refused_jwt(self.jwt(header={"alg": "ES256", "kid": self.unique("kid")}), "key set")
            if problem:
                return problem
        return self.expect(self.c.request("GET", "/v1/schema", token=self.jwt()), 200)

    def read_token_pushes(self):
        return self.expect(self.push([self.location(-1)], token="read"), 403, "forbidden")

    def write_token_on_admin(self):
        answer = self.c.request("POST", "/v1/admin/changes", {"create": {}}, token="write")
        return self.expect(answer, 403, "forbidden")

    # Paths and parameters.

    def dot_dot_path(self):
        return self.expect(self.c.request("GET", "/v1/snapshot/../../../etc/passwd"), 404)

    def encoded_dot_dot_type(self):
        return self.expect(self.c.request("GET", "/v1/snapshot/..%2F..%2Fetc%2Fpasswd"), 404, "unknown_type")

    def sql_in_the_type(self):
        answer = self.c.request("GET", "/v1/snapshot/" + urllib.parse.quote('events"; DROP TABLE events; --'))
        return self.expect(answer, 404, "unknown_type")

    def sql_in_fields(self):
        answer = self.c.request("GET", "/v1/snapshot/events?fields=" + urllib.parse.quote("title,1);DROP TABLE events"))
        return self.expect(answer, 400, "unknown_field")

    def nul_in_the_type(self):
        return self.expect(self.c.request("GET", "/v1/snapshot/events%00"), 404, "unknown_type")

    def negative_limit(self):
        return self.expect(self.c.request("GET", "/v1/snapshot/events?limit=-1"), 400, "invalid_parameter")

    def limit_past_64_bits(self):
        return self.expect(self.c.request("GET", "/v1/snapshot/events?limit=99999999999999999999"),
                           400, "invalid_parameter")

    def after_key_not_an_integer(self):
        return self.expect(self.c.request("GET", "/v1/snapshot/events?after=%27%20OR%201=1"), 400, "invalid_key")

    def log_read_after_past_64_bits(self):
        return self.expect(self.c.request("GET", "/v1/changes?schemaVersion=1&after=99999999999999999999"),
                           400, "invalid_parameter")

    def log_read_after_near_the_largest_revision(self):
        return self.expect(self.c.request("GET", "/v1/changes?schemaVersion=1&after=9223372036854775807"),
                           409, "revision_ahead")

    def log_read_sql_in_after(self):
        answer = self.c.request("GET", "/v1/changes?schemaVersion=1&after=" + urllib.parse.quote("0; DROP TABLE events"))
        return self.expect(answer, 400, "invalid_parameter")

    def log_read_huge_if_none_match(self):
        data = self.c.head("GET", "/v1/changes?after=0&schemaVersion=1", headers=["If-None-Match: " + '"x", ' * 20_000])
        answer = self.c.raw(data)
        return None if answer.status in (200, 400, 410, 431) else f"expected 200, 400, 410 or 431, got {answer.status}"

    def schema_version_zero(self):
        return self.expect(self.c.request("GET", "/v1/schema?version=0"), 400, "invalid_parameter")

    def schema_version_not_served(self):
        answer = self.c.request("POST", "/v1/sync", {"maxRevision": 0, "schemaVersion": 999})
        return self.expect(answer, 409, "unknown_schema_version")

    def ten_thousand_parameters(self):
        query = "&".join(f"p{i}={i}" for i in range(10_000))
        # 108 KB of request line: past the head's 80 KiB.
        return self.expect(self.c.request("GET", "/v1/snapshot/events?limit=1&" + query), 431, "headers_too_large")

    def unknown_method(self):
        return self.expect(self.c.request("DELETE", "/v1/sync"), 404, "not_found")

    # Sync bodies.

    def negative_revision(self):
        return self.expect(self.c.request("POST", "/v1/sync", {"maxRevision": -1}), 400, "invalid_parameter")

    def revision_past_64_bits(self):
        answer = self.c.request("POST", "/v1/sync", b'{"maxRevision": 9223372036854775808}')
        return self.expect(answer, 400, "malformed_json")

    def revision_as_text(self):
        return self.expect(self.c.request("POST", "/v1/sync", {"maxRevision": "0"}), 400, "malformed_json")

    def revision_ahead(self):
        return self.expect(self.c.request("POST", "/v1/sync", {"maxRevision": 1 << 62}), 409, "revision_ahead")

    def zero_limit(self):
        return self.expect(self.c.request("POST", "/v1/sync", {"maxRevision": 0, "limit": 0}), 400, "invalid_parameter")

    def negative_wait(self):
        return self.expect(self.c.request("POST", "/v1/sync", {"maxRevision": 0, "wait": -5}), 400, "invalid_parameter")

    def nesting_a_hundred_thousand_deep(self):
        body = b'{"maxRevision": 0, "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        return self.expect(self.c.request("POST", "/v1/sync", body), 400, "malformed_json")

    def duplicate_members(self):
        return self.expect(self.c.request("POST", "/v1/sync", b'{"maxRevision": 0, "maxRevision": 1}'),
                           400, "malformed_json")

    def invalid_utf8(self):
        answer = self.c.request("POST", "/v1/sync", b'{"maxRevision": 0, "x": "\xff\xfe"}')
        return self.expect(answer, 400, "malformed_json")

    def admin_number_out_of_range(self):
        answer = self.admin_update({"name": "x", "city": "y", "latitude": 1e999, "longitude": 0})
        return self.expect(answer, 400, "malformed_json")

    # Pushes.

    def too_many_change_sets(self):
        change_sets = [self.location(-1) for _ in range(101)]
        return self.expect(self.push(change_sets), 413, "too_many_change_sets")

    def push_id_of_65_characters(self):
        change_set = self.location(-1)
        change_set["id"] = "a" * 65
        return self.expect(self.push([change_set]), 400, "malformed_json")

    def push_id_with_unicode(self):
        change_set = self.location(-1)
        change_set["id"] = "näive-id"
        return self.expect(self.push([change_set]), 400, "malformed_json")

    def push_id_with_nul(self):
        change_set = self.location(-1)
        change_set["id"] = "a\u0000b"
        return self.expect(self.push([change_set]), 400, "malformed_json")

    def forged_temporary_key_in_update(self):
        change_set = self.location(-1)
        changes = change_set["locations"]
        changes["update"], changes["create"] = changes["create"], []
        changes["attributes"]["-1"]["revision"] = 1
        result, problem = self.push_result(change_set)
        return problem or (None if result["status"] == "rejected" else f"answered {result}")

    def positive_key_as_temporary(self):
        result, problem = self.push_result(self.location(1 << 40))
        return problem or (None if result["status"] == "rejected" else f"answered {result}")

    def temporary_key_past_64_bits(self):
        body = json.dumps({"maxRevision": self.revision(), "changeSets": [self.location(-1)]})
        body = body.replace("[-1]", "[-99999999999999999999]")
        answer = self.c.request("POST", "/v1/sync", body.encode(), "write")
        if answer.status != 200 or answer.json()["results"][0]["status"] != "rejected":
            return f"expected the change set rejected, got {answer.status} {answer.body[:200]!r}"
        return None

    def reference_to_a_missing_row(self):
        # PROTOCOL.md: a conflict, whose answer says the referenced row is gone (deleted).
        missing = 1 << 50
        event = {"title": "t", "starts_at": "2026-01-01T00:00:00Z", "ends_at": None, "location_id": missing,
                 "capacity": 1, "cancelled": False, "description": None}
        result, problem = self.push_result(self.change_set("events", create=[-1], attributes={"-1": event}))
        if problem:
            return problem
        if result["status"] != "conflict" or result["changeSet"]["locations"]["delete"] != [missing]:
            return f"answered {result}"
        return None

    def same_id_other_content(self):
        first = self.location(-1, name="first")
        result, problem = self.push_result(first)
        if problem:
            return problem
        second = self.location(-1, name="second")
        second["id"] = first["id"]
        again, problem = self.push_result(second)
        if problem or again != result:
            return problem or f"the same id answered {again}, first {result}"
        return None

    def unicode_values_round_trip(self):
        name = "é 漢字 🚀 \u202e \U0010FFFF"
        result, problem = self.push_result(self.location(-1, name=name))
        if problem or result["status"] != "applied":
            return problem or f"answered {result}"
        key = result["keys"]["locations"]["-1"]
        page = self.c.request("GET", f"/v1/snapshot/locations?after={key - 1}&limit=1").json()
        stored = dict(zip(page["columns"], page["rows"][0]))
        return None if stored["name"] == name else f"stored {stored['name']!r}"

    def nul_in_a_pushed_value(self):
        # PROTOCOL.md: no store takes U+0000 (PostgreSQL cannot hold it).
        result, problem = self.push_result(self.location(-1, name="a\u0000b"))
        if problem or result["status"] != "rejected" or "U+0000" not in result["error"]["message"]:
            return problem or f"answered {result}"
        return None

    def nul_in_a_committed_value(self):
        answer = self.admin_update({"name": "a\u0000b", "city": "y", "latitude": 1, "longitude": 0})
        return self.expect(answer, 422, "invalid_change_set")

    def stale_update(self):
        row = self.some_row("locations")
        attributes = {k: v for k, v in row.items() if k not in ("id", "revision")}
        attributes["revision"] = 0
        change_set = self.change_set("locations", update=[row["id"]], attributes={str(row["id"]): attributes})
        result, problem = self.push_result(change_set)
        return problem or (None if result["status"] == "conflict" else f"answered {result}")


CASES = [name for name in Matrix.__dict__ if not name.startswith("_") and callable(Matrix.__dict__[name])
         and name not in ("unique", "expect", "revision", "some_row", "push", "push_result", "location", "change_set",
                         "admin_update", "jwt", "refused_jwt")]


def resident_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


class PeakSampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.running = pid, 0.0, True

    def run(self):
        while self.running:
            self.peak = max(self.peak, resident_mib(self.pid))
            time.sleep(0.02)


def run_pass(matrix, client, number):
    failures = []
    for name in CASES:
        started = time.monotonic()
        try:
            problem = getattr(matrix, name)()
        except Exception as error:
            problem = f"{type(error).__name__}: {error}"
        try:
            alive = client.request("GET", "/health", token=None, timeout=10).status == 200
        except Exception as error:
            alive = False
            problem = (problem or "") + f"; /health failed after it: {error}"
        if not alive and not problem:
            problem = "/health did not answer 200 after it"
        elapsed = time.monotonic() - started
        if number == 1 or problem:
            print(f"  {'FAIL' if problem else 'ok  '} {name} ({elapsed:.2f} s){': ' + problem if problem else ''}",
                  flush=True)
        if problem:
            failures.append(name)
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("pid", type=int)
    parser.add_argument("--read-token", required=True)
    parser.add_argument("--write-token", required=True)
    parser.add_argument("--admin-token", required=True)
    parser.add_argument("--jwt-key", required=True)
    parser.add_argument("--passes", type=int, default=4)
    parser.add_argument("--max-growth-mib", type=float, default=8)
    options = parser.parse_args()
    if options.passes < 4:
        parser.error("--passes must be at least 4: two warm the allocator, the rest show a leak")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4096)), hard))
    client = Client(options.url, {"read": options.read_token, "write": options.write_token,
                                  "admin": options.admin_token})
    matrix = Matrix(client, jwt_keys.load_key(options.jwt_key))
    sampler = PeakSampler(options.pid)
    sampler.start()
    resident = [resident_mib(options.pid)]
    failures = []
    for number in range(1, options.passes + 1):
        failures += run_pass(matrix, client, number)
        resident.append(resident_mib(options.pid))
    sampler.running = False
    # Two passes warm the allocator (8 MiB bodies, 1,000 sockets); a leak grows memory in every pass after.
    growth = resident[-1] - resident[2]
    last = resident[-1] - resident[-2]
    print(f"{len(CASES)} cases, {options.passes} passes, {len(failures)} failures; server memory (RSS): "
          + ", ".join(f"{mib:.0f} MiB " + ("before" if index == 0 else f"after pass {index}")
                      for index, mib in enumerate(resident))
          + f" (since pass 2: {growth:+.1f} MiB, in the last pass: {last:+.1f} MiB); peak {sampler.peak:.0f} MiB")
    if growth > options.max_growth_mib and last > options.max_growth_mib / 4:
        print(f"memory grew {growth:.1f} MiB after pass 2, more than {options.max_growth_mib} MiB, "
              f"and still {last:.1f} MiB in the last pass: a leak")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
