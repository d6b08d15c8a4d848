"""Checks a running seed-server's answers against docs/openapi.yaml.

Usage: python3 openapi_check.py SPEC URL --tokens DIR --bin BIN --database DB

SPEC is the OpenAPI document, URL the server (started by scripts/suites/openapi-check.sh with the schema of
scripts/lib/openapi.sh at revision 0 and --body-timeout 2), DIR holds the files read, write and
admin with one token each, BIN/seed-server and DB are used to compact the history midway (for 410).
The document is first
validated as OpenAPI 3.1; then every request below is sent and its answer must have the status the
case expects, a status the document lists for that operation, the documented content type, the
documented required headers, and a body valid against the documented schema (JSON Schema 2020-12,
OpenAPI 3.1 dialect). Requests meant to be valid must be valid against the document's request
schemas, and requests that are malformed at the level JSON Schema can see must be invalid against
them. Prints a line per failure and a summary; exits 1 on any failure.
"""
import argparse
import gzip
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import traceback
import urllib.parse

import jsonschema
import requests
import yaml
from openapi_schema_validator import OAS31Validator, oas31_format_checker
from openapi_spec_validator import validate as validate_spec
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

TIMEOUT = 15
SPEC_URI = "urn:seedsync:openapi"


class Document:
    """The OpenAPI document: operations by method and path template, schemas by JSON pointer."""

    def __init__(self, path):
        with open(path, encoding="utf-8") as file:
            self.spec = yaml.safe_load(file)
        validate_spec(self.spec)
        resource = Resource.from_contents(self.spec, default_specification=DRAFT202012)
        self.registry = Registry().with_resource(SPEC_URI, resource)
        self.templates = []
        for template in self.spec["paths"]:
            pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$"
            self.templates.append((re.compile(pattern), template))

    def operation(self, method, path):
        """(template, operation) for a request, or (None, None) when the document has no such operation."""
        for pattern, template in self.templates:
            if pattern.match(path):
                operation = self.spec["paths"][template].get(method.lower())
                return (template, operation) if operation else (None, None)
        return None, None

    def resolve(self, node):
        while isinstance(node, dict) and "$ref" in node:
            node = self.pointer(node["$ref"])
        return node

    def pointer(self, ref):
        node = self.spec
        for part in ref.lstrip("#/").split("/"):
            key = part.replace("~1", "/").replace("~0", "~")
            node = node[int(key)] if isinstance(node, list) else node[key]
        return node

    def canonical(self, pointer):
        """`pointer` with every reference on its way followed (`/paths/…/headers/Vary/schema` of a
        header given by `$ref` becomes `/components/headers/Vary/schema`)."""
        node, path = self.spec, []
        for part in pointer.lstrip("/").split("/"):
            while isinstance(node, dict) and "$ref" in node:
                path = node["$ref"].lstrip("#/").split("/")
                node = self.pointer(node["$ref"])
            key = part.replace("~1", "/").replace("~0", "~")
            node = node[int(key)] if isinstance(node, list) else node[key]
            path.append(part)
        return "/" + "/".join(path)

    def errors(self, pointer, instance):
        """The validation errors of `instance` against the schema at `pointer` (a JSON pointer into the document)."""
        pointer = self.canonical(pointer)
        validator = OAS31Validator({"$ref": SPEC_URI + "#" + pointer}, registry=self.registry, format_checker=oas31_format_checker)
        return sorted(validator.iter_errors(instance), key=lambda error: list(error.absolute_path))


def escape(part):
    return part.replace("~", "~0").replace("/", "~1")


def describe(error):
    where = "/".join(str(part) for part in error.absolute_path) or "(root)"
    return f"at {where}: {error.message[:300]}"


class Checker:
    def __init__(self, document, url, tokens):
        self.doc = document
        self.url = url.rstrip("/")
        self.tokens = tokens
        self.session = requests.Session()
        self.answers = 0
        self.failures = []
        self.covered = set()

    def fail(self, name, message):
        self.failures.append(f"{name}: {message}")
        print(f"openapi-check: FAIL {name}: {message}", file=sys.stderr)

    # -- sending -----------------------------------------------------------------------------

    def send(self, name, method, path, expect, token=None, body=None, raw=None, headers=None,
             query=None, request_valid=None, scheme="Bearer"):
        """Sends one request, checks its answer; returns the parsed JSON body (or None)."""
        sent = {"Accept-Encoding": "identity"}
        if token is not None:
            sent["Authorization"] = f"{scheme} {self.tokens.get(token, token)}"
        if body is not None:
            raw = json.dumps(body).encode()
        if raw is not None:
            sent["Content-Type"] = "application/json"
        sent.update(headers or {})
        self.check_request(name, method, path, body, query, sent, request_valid)
        try:
            response = self.session.request(method, self.url + path, params=query, data=raw, headers=sent, timeout=TIMEOUT)
        except requests.RequestException as error:
            self.fail(name, f"{method} {path}: no answer ({error})")
            return None
        return self.check_answer(name, method, path, expect, response.status_code, response.headers,
                                 response.content, response.headers.get("Content-Encoding"))

    def send_raw(self, name, method, path, expect, request_bytes, finish=True):
        """Sends bytes as they are over a new connection (broken framing; with finish=False, a body
        that stops short and never ends) and checks the answer."""
        host, port = urllib.parse.urlsplit(self.url).netloc.split(":")
        with socket.create_connection((host, int(port)), timeout=TIMEOUT) as connection:
            connection.sendall(request_bytes)
            if finish:
                connection.shutdown(socket.SHUT_WR)
            received = b""
            while chunk := connection.recv(65536):
                received += chunk
        head, _, content = received.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = requests.structures.CaseInsensitiveDict(line.split(": ", 1) for line in lines[1:] if ": " in line)
        length = int(headers.get("Content-Length", len(content)))
        return self.check_answer(name, method, path, expect, status, headers, content[:length], None)

    # -- checking ----------------------------------------------------------------------------

    def check_request(self, name, method, path, body, query, headers, request_valid):
        """A request meant valid must fit the document; one malformed in a way JSON Schema sees must not."""
        if request_valid is None:
            return
        template, operation = self.doc.operation(method, path.split("?")[0])
        if operation is None:
            self.fail(name, f"{method} {path}: the document has no such operation")
            return
        base = f"/paths/{escape(template)}/{method.lower()}"
        problems = []
        for index, parameter in enumerate(operation.get("parameters", [])):
            parameter = self.doc.resolve(parameter)
            if parameter["in"] == "query" and query and parameter["name"] in query:
                value = query[parameter["name"]]
                schema = self.doc.resolve(parameter["schema"])
                if schema.get("type") == "integer":
                    try:
                        value = int(value)
                    except ValueError:
                        pass
                problems += self.doc.errors(f"{base}/parameters/{index}/schema", value)
            if parameter["in"] == "query" and parameter.get("required") and not (query and parameter["name"] in query):
                problems.append(jsonschema.ValidationError(f"the required query parameter {parameter['name']} is missing"))
            if parameter["in"] == "header" and parameter["name"] in headers:
                problems += self.doc.errors(f"{base}/parameters/{index}/schema", headers[parameter["name"]])
        if "requestBody" in operation and body is not None:
            problems += self.doc.errors(f"{base}/requestBody/content/application~1json/schema", body)
        if request_valid and problems:
            self.fail(name, f"{method} {path}: the request should fit the document but does not: {describe(problems[0])}")
        if request_valid is False and not problems:
            self.fail(name, f"{method} {path}: the request is malformed, but the document's request schema accepts it")

    def check_answer(self, name, method, path, expect, status, headers, content, encoding):
        self.answers += 1
        label = f"{method} {path} -> {status}"
        if status != expect:
            self.fail(name, f"{label}: expected status {expect} (body: {content[:300]!r})")
        template, operation = self.doc.operation(method, path.split("?")[0])
        if operation is None:
            # No route: the document says every such request is 404 `not_found` with an error body.
            if status != 404:
                self.fail(name, f"{label}: not an operation of the document, and not 404")
                return None
            if method.upper() == "HEAD":
                if content:
                    self.fail(name, f"{label}: an answer to HEAD has a body: {content[:200]!r}")
                return None
            return self.check_body(name, label, "/components/schemas/Error", headers, content, require_code="not_found")
        self.covered.add((method.upper(), template, status))
        responses = operation["responses"]
        key = str(status) if str(status) in responses else "default" if "default" in responses else None
        if key is None:
            self.fail(name, f"{label}: status {status} is not documented for {method.upper()} {template} (documented: {', '.join(responses)})")
            return None
        pointer = f"/paths/{escape(template)}/{method.lower()}/responses/{key}"
        response = self.doc.resolve(responses[key])
        for header_name, header in response.get("headers", {}).items():
            header = self.doc.resolve(header)
            value = headers.get(header_name)
            if value is None:
                if header.get("required"):
                    self.fail(name, f"{label}: required header {header_name} is missing")
                continue
            problems = self.doc.errors(f"{pointer}/headers/{escape(header_name)}/schema", value)
            if problems:
                self.fail(name, f"{label}: header {header_name}: {value!r} does not match the document: {describe(problems[0])}")
        if encoding is not None and "Content-Encoding" not in response.get("headers", {}):
            self.fail(name, f"{label}: Content-Encoding {encoding} is not documented for this answer")
        media = response.get("content")
        if not media:
            if content:
                self.fail(name, f"{label}: the document says no body, got {content[:200]!r}")
            return None
        return self.check_body(name, label, None, headers, content, media=media, pointer=pointer)

    def check_body(self, name, label, schema_pointer, headers, content, media=None, pointer=None, require_code=None):
        content_type = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if media is not None:
            if content_type not in media:
                self.fail(name, f"{label}: content type {content_type or '(none)'} is not documented ({', '.join(media)})")
                return None
            schema_pointer = f"{pointer}/content/{escape(content_type)}/schema"
        elif content_type != "application/json":
            self.fail(name, f"{label}: content type {content_type or '(none)'}, not application/json")
            return None
        if not content_type.endswith("json"):
            body = content.decode("utf-8", errors="replace")
            problems = self.doc.errors(schema_pointer, body)
            for problem in problems[:3]:
                self.fail(name, f"{label}: the body does not match {schema_pointer}: {describe(problem)}")
            return body
        try:
            body = json.loads(content)
        except ValueError as error:
            self.fail(name, f"{label}: the body is not JSON ({error}): {content[:200]!r}")
            return None
        problems = self.doc.errors(schema_pointer, body)
        for problem in problems[:3]:
            self.fail(name, f"{label}: the body does not match {schema_pointer}: {describe(problem)}")
        code = body.get("error", {}).get("code") if isinstance(body, dict) and isinstance(body.get("error"), dict) else None
        if code in ("body_too_large", "body_timeout", "malformed_http") and (headers.get("Connection") or "").lower() != "close":
            self.fail(name, f"{label}: {code} without Connection: close")
        if require_code and body.get("error", {}).get("code") != require_code:
            self.fail(name, f"{label}: expected error code {require_code}, got {body.get('error')}")
        return body

    def expect(self, name, condition, message):
        """A protocol rule the schema cannot state (key order, paging, __oldId__)."""
        if not condition:
            self.fail(name, message)


# -- the requests ----------------------------------------------------------------------------


# Version 2 of scripts/lib/openapi.sh's schema: events.notes added, a new type venues.
SCHEMA_V2 = {"dataset": "openapi-check", "schemaVersion": 2, "types": [
    {"name": "locations", "primaryKey": {"name": "id", "type": "integer"}, "fields": [
        {"name": "name", "type": "text"}, {"name": "city", "type": "text"},
        {"name": "latitude", "type": "real"}, {"name": "longitude", "type": "real"}]},
    {"name": "events", "primaryKey": {"name": "id", "type": "integer"}, "fields": [
        {"name": "title", "type": "text"}, {"name": "starts_at", "type": "timestamp"},
        {"name": "ends_at", "type": "timestamp", "nullable": True},
        {"name": "location_id", "type": "integer", "nullable": True, "references": "locations"},
        {"name": "capacity", "type": "integer"}, {"name": "cancelled", "type": "boolean"},
        {"name": "description", "type": "text", "nullable": True},
        {"name": "notes", "type": "text", "nullable": True}]},
    {"name": "tags", "primaryKey": {"name": "code", "type": "text"}, "fields": [
        {"name": "label", "type": "text"}, {"name": "icon", "type": "blob", "nullable": True},
        {"name": "location_id", "type": "integer", "nullable": True, "references": "locations"}]},
    {"name": "venues", "primaryKey": {"name": "id", "type": "integer"}, "fields": [
        {"name": "name", "type": "text"}, {"name": "seats", "type": "integer", "default": 0}]}]}


def location(n):
    return {"name": f"Hall {n}", "city": "Oslo", "latitude": 59.9 + n / 100, "longitude": 10.7}


def event(n, location_id):
    return {"title": f"Event {n} " + "x" * 80, "starts_at": "2026-12-01T20:00:00Z", "ends_at": None,
            "location_id": location_id, "capacity": 80 + n, "cancelled": n % 2 == 0, "description": None}


def run(check, compact, upgrade, publish):
    c = check
    # Health, authentication.
    health = c.send("health", "GET", "/health", 200)
    c.expect("health", health == {"status": "ok"}, f"GET /health answered {health}")
    c.send("health (HEAD)", "HEAD", "/health", 200)
    info = c.send("schema", "GET", "/v1/schema", 200, token="read")
    c.expect("schema", info and info["revision"] == 0, "a new database is not at revision 0")
    c.send("schema, lower-case scheme", "GET", "/v1/schema", 200, token="read", scheme="bearer")
    c.send("schema without a token", "GET", "/v1/schema", 401)
    c.send("schema with basic auth", "GET", "/v1/schema", 401, token="read", scheme="Basic")
    c.send("schema with an unknown token", "GET", "/v1/schema", 401, token="not-a-token")
    c.send("schema with an empty token", "GET", "/v1/schema", 401, headers={"Authorization": "Bearer "})

    # Admin commits: the rows the rest reads.
    rows = {"types": ["locations", "events", "tags"],
            "locations": {"create": [1, 2, 3, 4, 5], "attributes": {str(n): location(n) for n in range(1, 6)}},
            "events": {"create": list(range(1, 13)), "attributes": {str(n): event(n, n % 5 + 1) for n in range(1, 13)}},
            "tags": {"create": ["alpha", "beta", "gamma"],
                     "attributes": {"alpha": {"label": "A", "icon": "AAEC", "location_id": 1},
                                    "beta": {"label": "B", "icon": None, "location_id": None},
                                    "gamma": {"label": "Γ", "icon": "/w==", "location_id": 2}}}}
    commit = c.send("admin commit", "POST", "/v1/admin/changes", 200, token="admin", body=rows, request_valid=True)
    c.expect("admin commit", commit == {"revision": 1}, f"the first commit answered {commit}")
    update = {"types": ["events"], "events": {"update": [12], "attributes": {"12": event(12, 1)}}}
    c.send("admin commit, gzip body", "POST", "/v1/admin/changes", 200, token="admin",
           raw=gzip.compress(json.dumps(update).encode()), body=None, headers={"Content-Encoding": "gzip"})
    c.check_request("admin commit, gzip body", "POST", "/v1/admin/changes", update, None, {}, True)
    delete = {"types": ["events"], "events": {"delete": [11], "create": None, "attributes": None}}
    c.send("admin commit, a delete with null lists", "POST", "/v1/admin/changes", 200, token="admin", body=delete, request_valid=True)
    c.send("admin commit with a write token", "POST", "/v1/admin/changes", 403, token="write", body=update, request_valid=True)
    c.send("admin commit with a read token", "POST", "/v1/admin/changes", 403, token="read", body=update, request_valid=True)
    c.send("admin commit without a token", "POST", "/v1/admin/changes", 401, body=update, request_valid=True)
    c.send("admin commit of an unknown type", "POST", "/v1/admin/changes", 422, token="admin",
           body={"types": ["nope"], "nope": {"create": [1], "attributes": {"1": {}}}}, request_valid=True)
    c.send("admin commit with a revision", "POST", "/v1/admin/changes", 422, token="admin",
           body={"revision": 9, **update}, request_valid=False)
    c.send("admin commit of a wrong value type", "POST", "/v1/admin/changes", 422, token="admin",
           body={"types": ["events"], "events": {"update": [12], "attributes": {"12": {**event(12, 1), "capacity": "many"}}}})
    c.send("admin commit, not JSON", "POST", "/v1/admin/changes", 400, token="admin", raw=b"{types:")
    c.send("admin commit without types", "POST", "/v1/admin/changes", 400, token="admin", body={"events": {}}, request_valid=False)
    c.send("admin commit, a listed type missing", "POST", "/v1/admin/changes", 400, token="admin", body={"types": ["events"]}, request_valid=True)
    c.send("admin commit, duplicate member", "POST", "/v1/admin/changes", 400, token="admin",
           raw=b'{"types": ["events"], "events": {"delete": [1]}, "events": {"delete": [2]}}')
    c.send("admin commit, unsupported encoding", "POST", "/v1/admin/changes", 415, token="admin",
           body=update, headers={"Content-Encoding": "br"}, request_valid=False)
    # Revision now 3 (commit, update, delete).

    # Snapshot pages.
    keys, after, pages = [], None, 0
    while True:
        query = {"limit": "5"} | ({"after": str(after)} if after is not None else {})
        page = c.send(f"snapshot of events, page {pages + 1}", "GET", "/v1/snapshot/events", 200, token="read", query=query, request_valid=True)
        if not page:
            break
        pages += 1
        keys += [row[0] for row in page["rows"]]
        c.expect("snapshot of events", page["columns"] == ["id", "title", "starts_at", "ends_at", "location_id", "capacity", "cancelled", "description", "revision"],
                 f"unexpected columns {page['columns']}")
        after = page["next"]
        if after is None or pages > 5:
            break
    c.expect("snapshot of events", keys == [n for n in range(1, 13) if n != 11] and pages == 3,
             f"paging with after/limit gave keys {keys} in {pages} pages")
    tags = c.send("snapshot of tags (text keys)", "GET", "/v1/snapshot/tags", 200, token="read", query={"limit": "2"}, request_valid=True)
    c.expect("snapshot of tags", tags and tags["next"] == "beta", f"text-key page: next is {tags and tags['next']}")
    tags = c.send("snapshot of tags after beta", "GET", "/v1/snapshot/tags", 200, token="read", query={"after": "beta"}, request_valid=True)
    c.expect("snapshot of tags after beta", tags and [row[0] for row in tags["rows"]] == ["gamma"] and tags["next"] is None,
             f"after=beta gave {tags}")
    response = c.session.get(c.url + "/v1/snapshot/events", headers={"Authorization": "Bearer " + c.tokens["read"], "Accept-Encoding": "gzip"}, timeout=TIMEOUT)
    c.check_answer("snapshot, gzip answer", "GET", "/v1/snapshot/events", 200, response.status_code, response.headers,
                   response.content, response.headers.get("Content-Encoding"))
    c.expect("snapshot, gzip answer", response.headers.get("Content-Encoding") == "gzip", "a 1 KiB+ page asked with gzip was not compressed")
    c.send("snapshot of an unknown type", "GET", "/v1/snapshot/nope", 404, token="read", request_valid=True)
    c.send("snapshot, after not a key", "GET", "/v1/snapshot/events", 400, token="read", query={"after": "abc"}, request_valid=True)
    c.send("snapshot, after with a leading zero", "GET", "/v1/snapshot/events", 400, token="read", query={"after": "05"}, request_valid=True)
    c.send("snapshot, empty after", "GET", "/v1/snapshot/tags", 400, token="read", query={"after": ""}, request_valid=False)
    c.send("snapshot, limit 0", "GET", "/v1/snapshot/events", 400, token="read", query={"limit": "0"}, request_valid=False)
    c.send("snapshot, limit not a number", "GET", "/v1/snapshot/events", 400, token="read", query={"limit": "x"}, request_valid=False)
    c.send("snapshot, limit above the maximum", "GET", "/v1/snapshot/events", 200, token="read", query={"limit": "999999"}, request_valid=True)
    c.send("snapshot without a token", "GET", "/v1/snapshot/events", 401)

    # Sync without pushing.
    answer = c.send("sync from 0", "POST", "/v1/sync", 200, token="read", body={"maxRevision": 0}, request_valid=True)
    c.expect("sync from 0", answer and [s["revision"] for s in answer["changeSets"]] == [1, 2, 3] and not answer["hasMore"] and "results" not in answer,
             f"sync from 0 answered {answer and [s['revision'] for s in answer['changeSets']]}")
    answer = c.send("sync with limit 1", "POST", "/v1/sync", 200, token="read", body={"maxRevision": 0, "limit": 1, "changeSets": []}, request_valid=True)
    c.expect("sync with limit 1", answer and answer["hasMore"] and answer["maxRevision"] == 1, f"limit 1 answered {answer}")
    c.send("sync, gzip body", "POST", "/v1/sync", 200, token="read", raw=gzip.compress(b'{"maxRevision": 2}'), headers={"Content-Encoding": "gzip"})
    c.send("sync, identity encoding", "POST", "/v1/sync", 200, token="read", body={"maxRevision": 3}, headers={"Content-Encoding": "identity"}, request_valid=True)
    c.send("sync, broken gzip", "POST", "/v1/sync", 400, token="read", raw=gzip.compress(b'{"maxRevision": 2}')[:-6], headers={"Content-Encoding": "gzip"})
    c.send("sync, unsupported encoding", "POST", "/v1/sync", 415, token="read", body={"maxRevision": 0}, headers={"Content-Encoding": "br"}, request_valid=False)
    c.send("sync ahead of the server", "POST", "/v1/sync", 409, token="read", body={"maxRevision": 1000}, request_valid=True)
    c.send("sync, not JSON", "POST", "/v1/sync", 400, token="read", raw=b"maxRevision=1")
    c.send("sync, duplicate member", "POST", "/v1/sync", 400, token="read", raw=b'{"maxRevision": 1, "maxRevision": 2}')
    c.send("sync, maxRevision a string", "POST", "/v1/sync", 400, token="read", body={"maxRevision": "1"}, request_valid=False)
    c.send("sync, maxRevision 1.0", "POST", "/v1/sync", 400, token="read", raw=b'{"maxRevision": 1.0}')
    c.send("sync, maxRevision missing", "POST", "/v1/sync", 400, token="read", body={"limit": 5}, request_valid=False)
    c.send("sync, maxRevision -1", "POST", "/v1/sync", 400, token="read", body={"maxRevision": -1}, request_valid=False)
    c.send("sync, limit 0", "POST", "/v1/sync", 400, token="read", body={"maxRevision": 0, "limit": 0}, request_valid=False)
    c.send("sync, changeSets null", "POST", "/v1/sync", 400, token="read", body={"maxRevision": 0, "changeSets": None}, request_valid=False)
    c.send("sync, unknown members ignored", "POST", "/v1/sync", 200, token="read", body={"maxRevision": 3, "client": "x"}, request_valid=True)
    # Log reads (blocks of 1,000 revisions: at revision 3, every answer from 0 is the head).
    log = {"after": "0", "schemaVersion": "1"}
    answer = c.send("log read from 0", "GET", "/v1/changes", 200, token="read", query=log, request_valid=True)
    c.expect("log read from 0", answer and [s["revision"] for s in answer["changeSets"]] == [1, 2, 3] and answer["hasMore"] is False,
             f"the head from 0 was {answer and [s['revision'] for s in answer['changeSets']]}, hasMore {answer and answer['hasMore']}")
    answer = c.send("log read, limit 1", "GET", "/v1/changes", 200, token="read", query=log | {"limit": "1"}, request_valid=True)
    c.expect("log read, limit 1", answer and answer["maxRevision"] == 1 and answer["hasMore"] is True, f"limit 1 gave {answer}")
    response = c.session.get(c.url + "/v1/changes", params=log, headers={"Authorization": "Bearer " + c.tokens["read"], "Accept-Encoding": "gzip"}, timeout=TIMEOUT)
    c.check_answer("log read, gzip answer", "GET", "/v1/changes", 200, response.status_code, response.headers,
                   response.content, response.headers.get("Content-Encoding"))
    c.expect("log read, gzip answer", (response.headers.get("ETag") or "").endswith('-gzip"'), f"gzip ETag {response.headers.get('ETag')}")
    c.send("log read, not modified", "GET", "/v1/changes", 304, token="read", query=log,
           headers={"If-None-Match": response.headers.get("ETag", "")}, request_valid=True)
    # Live reads: from 0 answered at once (the cursor starts over); from the head (3) held for the
    # server's live wait (1 s here), then empty with a higher cursor.
    for name, after, cursor in (("live read behind", "0", "0"), ("live read at the head", "3", "7")):
        response = c.session.get(c.url + "/v1/changes", params={"after": after, "schemaVersion": "1", "live": cursor},
                                 headers={"Authorization": "Bearer " + c.tokens["read"]}, timeout=TIMEOUT)
        c.check_answer(name, "GET", "/v1/changes", 200, response.status_code, response.headers, response.content, None)
        next_cursor = response.headers.get("SeedSync-Live-Cursor", "")
        wanted = (lambda value: value == "0") if after == "0" else (lambda value: value.isdigit() and int(value) > 7)
        c.expect(name, wanted(next_cursor), f"SeedSync-Live-Cursor {next_cursor!r} after live={cursor}")
    c.send("live read, cursor -1", "GET", "/v1/changes", 400, token="read", query=log | {"live": "-1"}, request_valid=False)
    c.send("log read without schemaVersion", "GET", "/v1/changes", 400, token="read", query={"after": "0"}, request_valid=False)
    c.send("log read without after", "GET", "/v1/changes", 400, token="read", query={"schemaVersion": "1"}, request_valid=False)
    c.send("log read, after -1", "GET", "/v1/changes", 400, token="read", query={"after": "-1", "schemaVersion": "1"}, request_valid=False)
    c.send("log read ahead of the server", "GET", "/v1/changes", 409, token="read", query={"after": "1000", "schemaVersion": "1"}, request_valid=True)
    c.send("log read in a version not served", "GET", "/v1/changes", 409, token="read", query={"after": "0", "schemaVersion": "9"}, request_valid=True)
    c.send("log read without a token", "GET", "/v1/changes", 401, query=log, request_valid=True)
    c.send("token check", "GET", "/v1/auth", 204, token="read")
    c.send("token check, unknown token", "GET", "/v1/auth", 401, token="not-a-token")

    # Live sync (the server runs with --max-wait 1 --max-waiting-requests 1).
    answer = c.send("sync, wait with change sets ready", "POST", "/v1/sync", 200, token="read", body={"maxRevision": 0, "wait": 30}, request_valid=True)
    c.expect("sync, wait with change sets ready", answer and len(answer["changeSets"]) == 3, f"answered {answer}")
    answer = c.send("sync, wait held to the cap", "POST", "/v1/sync", 200, token="read", body={"maxRevision": 3, "wait": 30}, request_valid=True)
    c.expect("sync, wait held to the cap", answer and answer["changeSets"] == [] and answer["maxRevision"] == 3, f"answered {answer}")
    c.send("sync, wait -1", "POST", "/v1/sync", 400, token="read", body={"maxRevision": 3, "wait": -1}, request_valid=False)
    holder = threading.Thread(target=lambda: requests.post(
        c.url + "/v1/sync", json={"maxRevision": 3, "wait": 30}, timeout=TIMEOUT,
        headers={"Authorization": f"Bearer {c.tokens['read']}", "Accept-Encoding": "identity"}))
    holder.start()
    time.sleep(0.3)
    c.send("sync, wait beyond the held requests", "POST", "/v1/sync", 503, token="read", body={"maxRevision": 3, "wait": 30}, request_valid=True)
    holder.join()
    c.send("sync without a token", "POST", "/v1/sync", 401, body={"maxRevision": 0}, request_valid=True)
    c.send_raw("sync, broken chunked framing", "POST", "/v1/sync", 400,
               b"POST /v1/sync HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + c.tokens["read"].encode()
               + b"\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
    c.send_raw("sync, body slower than --body-timeout", "POST", "/v1/sync", 408,
               b"POST /v1/sync HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + c.tokens["read"].encode()
               + b"\r\nContent-Length: 100\r\n\r\n{\"maxRevision\"", finish=False)
    big = b'{"maxRevision": 0, "pad": "' + b"x" * (8 << 20) + b'"}'
    c.send("sync, body over 8 MiB", "POST", "/v1/sync", 413, token="read", raw=big)
    c.send("admin commit, body over 8 MiB", "POST", "/v1/admin/changes", 413, token="admin", raw=big)

    # Pushing.
    def pushed(id, types, **changes):
        return {"id": id, "types": types, **changes}

    create = pushed("push-1", ["locations", "events"],
                    locations={"create": [-1], "attributes": {"-1": location(6)}},
                    events={"create": [-2], "update": [1], "attributes": {"-2": event(20, -1), "1": {**event(1, -1), "revision": 1}}})
    c.send("push with a read token", "POST", "/v1/sync", 403, token="read", body={"maxRevision": 3, "changeSets": [create]}, request_valid=True)
    many = [pushed(f"many-{n}", ["events"], events={"delete": [2], "attributes": {"2": {"revision": 1}}}) for n in range(101)]
    c.send("push of 101 change sets", "POST", "/v1/sync", 413, token="write", body={"maxRevision": 3, "changeSets": many}, request_valid=False)
    c.send("push, id not valid", "POST", "/v1/sync", 400, token="write", body={"maxRevision": 3, "changeSets": [{**create, "id": "a b"}]}, request_valid=False)
    c.send("push, id missing", "POST", "/v1/sync", 400, token="write", body={"maxRevision": 3, "changeSets": [{"types": []}]}, request_valid=False)
    c.send("push with a revision", "POST", "/v1/sync", 400, token="write", body={"maxRevision": 3, "changeSets": [{**create, "revision": 4}]}, request_valid=False)
    c.send("push, types not strings", "POST", "/v1/sync", 400, token="write", body={"maxRevision": 3, "changeSets": [{"id": "t", "types": [1]}]}, request_valid=False)
    c.send("push ahead of the server", "POST", "/v1/sync", 409, token="write", body={"maxRevision": 99, "changeSets": [create]}, request_valid=True)
    answer = c.send("push: applied", "POST", "/v1/sync", 200, token="write", body={"maxRevision": 3, "changeSets": [create]}, request_valid=True)
    if answer:
        result = answer.get("results", [{}])[0]
        c.expect("push: applied", result.get("status") == "applied" and result.get("revision") == 4, f"result {result}")
        real = result.get("keys", {}).get("events", {}).get("-2")
        mine = [s for s in answer["changeSets"] if s["revision"] == 4]
        marked = mine and mine[0]["events"]["attributes"].get(str(real), {}).get("__oldId__")
        c.expect("push: applied", marked == -2, f"the pushed change set's created event does not carry __oldId__ -2: {mine}")
    again = c.send("push: the same id again", "POST", "/v1/sync", 200, token="write", body={"maxRevision": 4, "changeSets": [create]}, request_valid=True)
    c.expect("push: the same id again", again and again["results"][0] == (answer or {}).get("results", [None])[0],
             f"a retry got {again and again['results']}")
    stale = pushed("push-2", ["events"], events={"update": [1], "attributes": {"1": {**event(1, 1), "revision": 1}}})
    taken = pushed("push-3", ["tags"], tags={"create": ["alpha"], "attributes": {"alpha": {"label": "again", "icon": None, "location_id": None}}})
    wrong = pushed("push-4", ["events"], events={"create": [-1], "attributes": {"-1": {**event(30, None), "colour": "red"}}})
    text = pushed("push-5", ["tags"], tags={"create": ["delta"], "attributes": {"delta": {"label": "D", "icon": "AA==", "location_id": 1}}})
    delete = pushed("push-6", ["events"], events={"delete": [3], "attributes": {"3": {"revision": 1}}})
    answer = c.send("push: conflict, conflict, rejected, applied, applied", "POST", "/v1/sync", 200, token="admin",
                    body={"maxRevision": 4, "changeSets": [stale, taken, wrong, text, delete]}, request_valid=True)
    if answer:
        statuses = [result["status"] for result in answer.get("results", [])]
        c.expect("push: five results", statuses == ["conflict", "conflict", "rejected", "applied", "applied"], f"results {statuses}")
        c.expect("push: five results", answer["maxRevision"] == 6, f"maxRevision {answer['maxRevision']}, expected 6")

    # History compacted: clients behind it get 410.
    compact()
    c.send("sync behind the history", "POST", "/v1/sync", 410, token="read", body={"maxRevision": 0}, request_valid=True)
    late = pushed("push-7", ["events"], events={"delete": [4], "attributes": {"4": {"revision": 1}}})
    c.send("push behind the history", "POST", "/v1/sync", 410, token="write", body={"maxRevision": 0, "changeSets": [late]}, request_valid=True)
    c.send("log read behind the history", "GET", "/v1/changes", 410, token="read", query={"after": "0", "schemaVersion": "1"}, request_valid=True)
    info = c.send("schema after compaction", "GET", "/v1/schema", 200, token="read")
    c.expect("schema after compaction", info and info["minRevision"] == 5 and info["revision"] == 6 and info["rowCounts"] == {"locations": 6, "events": 11, "tags": 4},
             f"after compaction: {info and (info['revision'], info['minRevision'], info['rowCounts'])}")

    # Registered seeds (the history now reaches back to revision 5).
    sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    seed = c.send("register a seed", "POST", "/v1/admin/seeds", 200, token="admin",
                  body={"sha256": sha, "revision": 6, "schemaVersion": 1}, request_valid=True)
    c.expect("register a seed", seed and seed["revision"] == 6 and "retiredAt" not in seed, f"registered {seed}")
    c.send("register the same seed again", "POST", "/v1/admin/seeds", 200, token="admin",
           body={"sha256": sha, "revision": 6, "schemaVersion": 1}, request_valid=True)
    c.send("register with a read token", "POST", "/v1/admin/seeds", 403, token="read",
           body={"sha256": sha, "revision": 6, "schemaVersion": 1}, request_valid=True)
    c.send("register a malformed sha256", "POST", "/v1/admin/seeds", 422, token="admin",
           body={"sha256": "nope", "revision": 6, "schemaVersion": 1}, request_valid=True)
    c.send("register behind the history", "POST", "/v1/admin/seeds", 410, token="admin",
           body={"sha256": "0" * 64, "revision": 1, "schemaVersion": 1}, request_valid=True)
    c.send("register ahead of the server", "POST", "/v1/admin/seeds", 409, token="admin",
           body={"sha256": "0" * 64, "revision": 99, "schemaVersion": 1}, request_valid=True)
    c.send("register, revision missing", "POST", "/v1/admin/seeds", 400, token="admin",
           body={"sha256": sha, "schemaVersion": 1}, request_valid=False)
    c.send("register without a token", "POST", "/v1/admin/seeds", 401,
           body={"sha256": sha, "revision": 6, "schemaVersion": 1}, request_valid=True)
    c.send("register, unsupported encoding", "POST", "/v1/admin/seeds", 415, token="admin",
           body={"sha256": sha, "revision": 6, "schemaVersion": 1}, headers={"Content-Encoding": "br"}, request_valid=False)
    cdn = "https://cdn.example.com/seeds/events.sqlite.gz"
    other = "1" * 64
    at_cdn = c.send("register a seed with its address", "POST", "/v1/admin/seeds", 200, token="admin",
                    body={"sha256": other, "revision": 6, "schemaVersion": 1, "url": cdn}, request_valid=True)
    c.expect("register a seed with its address", at_cdn and at_cdn.get("url") == cdn, f"registered {at_cdn}")
    c.send("register with a folder for an address", "POST", "/v1/admin/seeds", 422, token="admin",
           body={"sha256": "2" * 64, "revision": 6, "schemaVersion": 1, "url": "https://cdn.example.com/seeds/"},
           request_valid=True)
    c.send("list seeds without a token", "GET", "/v1/seeds", 401)
    seeds = c.send("list seeds", "GET", "/v1/seeds", 200, token="read")
    c.expect("list seeds", seeds and [(s["sha256"], s.get("url")) for s in seeds["seeds"]] == [(other, cdn), (sha, None)],
             f"listed {seeds}")

    # Published seed files (--seeds): whole, a range, If-Range, 304, 416, HEAD, and names it was not given.
    manifest = publish()
    base = f"/v1/seeds/{manifest['sha256']}"
    gz = f"{base}/{manifest['gzip']['file']}"
    size = manifest["gzip"]["size"]
    c.send("seed file", "GET", gz, 200, token="read")
    c.send("seed file, plain", "GET", f"{base}/{manifest['file']}", 200, token="read")
    c.send("seed manifest", "GET", f"{base}/{manifest['file']}.manifest.json", 200, token="read")
    c.send("seed file, a range", "GET", gz, 206, token="read", headers={"Range": "bytes=10-"})
    c.send("seed file, a range of another file", "GET", gz, 200, token="read",
           headers={"Range": "bytes=10-", "If-Range": '"0000"'})
    c.send("seed file, past its end", "GET", gz, 416, token="read", headers={"Range": f"bytes={size}-"})
    c.send("seed file, unchanged", "GET", gz, 304, token="read",
           headers={"If-None-Match": f'"{manifest["gzip"]["sha256"]}"'})
    c.send("seed file (HEAD)", "HEAD", gz, 200, token="read")
    c.send("seed file, a range (HEAD)", "HEAD", gz, 206, token="read", headers={"Range": "bytes=0-9"})
    c.send("seed file, past its end (HEAD)", "HEAD", gz, 416, token="read", headers={"Range": f"bytes={size}-"})
    c.send("seed file, unchanged (HEAD)", "HEAD", gz, 304, token="read",
           headers={"If-None-Match": f'"{manifest["gzip"]["sha256"]}"'})
    # Registered without an address, a seed this server publishes is listed with its own.
    c.send("register the published seed", "POST", "/v1/admin/seeds", 200, token="admin",
           body={"sha256": manifest["sha256"], "revision": manifest["revision"], "schemaVersion": 1}, request_valid=True)
    seeds = c.send("list seeds, one published here", "GET", "/v1/seeds", 200, token="read")
    listed = seeds and {s["sha256"]: s.get("url") for s in seeds["seeds"]}
    c.expect("list seeds, one published here", listed and listed.get(manifest["sha256"]) == gz.lstrip("/"),
             f"listed {seeds}")
    c.send("seed file, unknown name", "GET", f"{base}/other.sqlite", 404, token="read")
    # What each way in would download (§9.7).
    c.send("sizes without a token", "GET", "/v1/sizes", 401)
    sizes = c.send("sizes", "GET", "/v1/sizes?schemaVersion=1&after=6,99999", 200, token="read")
    c.expect("sizes", sizes and [entry["after"] for entry in sizes["changes"]] == [6] and sizes.get("snapshot"),
             f"sized {sizes}")
    c.send("sizes, nine revisions", "GET", "/v1/sizes?after=1,2,3,4,5,6,7,8,9", 400, token="read")
    c.send("sizes, an unknown version", "GET", "/v1/sizes?schemaVersion=99", 409, token="read")
    c.send("seed file, unknown name (HEAD)", "HEAD", f"{base}/other.sqlite", 404, token="read")
    c.send("seed file without a token", "GET", gz, 401)
    c.send("seed file without a token (HEAD)", "HEAD", gz, 401)

    # Schema versions: version 2 adds events.notes and a type venues.
    upgrade()
    # Without a version, the oldest served (as every endpoint), listing the others.
    info = c.send("schema, oldest by default", "GET", "/v1/schema", 200, token="read")
    c.expect("schema, oldest by default",
             info and info["schemaVersion"] == 1 and [v["schemaVersion"] for v in info["versions"]] == [1, 2],
             f"versions {info and info.get('versions')}")
    newest = c.send("schema, newest", "GET", "/v1/schema", 200, token="read", query={"version": "2"}, request_valid=True)
    c.expect("schema, newest", newest and newest["schemaVersion"] == 2 and "venues" in newest["rowCounts"], f"{newest}")
    old = c.send("schema, version 1", "GET", "/v1/schema", 200, token="read", query={"version": "1"}, request_valid=True)
    c.expect("schema, version 1", old and old["schemaVersion"] == 1 and "venues" not in old["rowCounts"], f"version 1: {old}")
    c.send("schema, a version not served", "GET", "/v1/schema", 409, token="read", query={"version": "9"}, request_valid=True)
    c.send("schema, version not a number", "GET", "/v1/schema", 400, token="read", query={"version": "x"}, request_valid=False)
    page = c.send("snapshot in version 2", "GET", "/v1/snapshot/events", 200, token="read", query={"schemaVersion": "2"}, request_valid=True)
    c.expect("snapshot in version 2", page and "notes" in page["columns"], f"columns {page and page['columns']}")
    page = c.send("snapshot, oldest version by default", "GET", "/v1/snapshot/events", 200, token="read")
    c.expect("snapshot, oldest version by default", page and "notes" not in page["columns"], f"columns {page and page['columns']}")
    page = c.send("column download", "GET", "/v1/snapshot/events", 200, token="read",
                  query={"schemaVersion": "2", "fields": "notes"}, request_valid=True)
    c.expect("column download", page and page["columns"] == ["id", "notes", "revision"], f"columns {page and page['columns']}")
    c.send("column download of an unknown field", "GET", "/v1/snapshot/events", 400, token="read",
           query={"schemaVersion": "2", "fields": "nope"}, request_valid=True)
    uniform = c.send("uniform fields", "GET", "/v1/snapshot/events/uniform", 200, token="read",
                     query={"schemaVersion": "2", "fields": "notes,title", "notBefore": "1"}, request_valid=True)
    c.expect("uniform fields", uniform and uniform["type"] == "events" and "title" not in uniform["uniform"],
             f"events' titles are not one value in every row: {uniform}")
    c.send("uniform fields without fields", "GET", "/v1/snapshot/events/uniform", 400, token="read",
           query={"schemaVersion": "2"}, request_valid=False)
    c.send("uniform fields of an unknown field", "GET", "/v1/snapshot/events/uniform", 400, token="read",
           query={"schemaVersion": "2", "fields": "nope"}, request_valid=True)
    c.send("uniform fields of an unknown type", "GET", "/v1/snapshot/nope/uniform", 404, token="read",
           query={"fields": "title"}, request_valid=True)
    c.send("snapshot of a type version 1 lacks", "GET", "/v1/snapshot/venues", 404, token="read")
    c.send("snapshot of a new type", "GET", "/v1/snapshot/venues", 200, token="read", query={"schemaVersion": "2"}, request_valid=True)
    c.send("snapshot in a version not served", "GET", "/v1/snapshot/events", 409, token="read", query={"schemaVersion": "9"}, request_valid=True)
    c.send("snapshot, schemaVersion 0", "GET", "/v1/snapshot/events", 400, token="read", query={"schemaVersion": "0"}, request_valid=False)
    c.send("sync in version 2", "POST", "/v1/sync", 200, token="read", body={"maxRevision": 6, "schemaVersion": 2}, request_valid=True)
    c.send("sync in a version not served", "POST", "/v1/sync", 409, token="read", body={"maxRevision": 6, "schemaVersion": 9}, request_valid=True)
    c.send("sync, schemaVersion 0", "POST", "/v1/sync", 400, token="read", body={"maxRevision": 6, "schemaVersion": 0}, request_valid=False)

    # Metrics: admin only, Prometheus text.
    metrics = c.send("metrics", "GET", "/metrics", 200, token="admin")
    c.expect("metrics", metrics and "seedsync_pushes_total{result=\"applied\"} 4" in metrics,
             "metrics do not count 4 applied pushes (3 and a replayed one): " + str(metrics and [line for line in metrics.splitlines() if "pushes_total" in line]))
    c.send("metrics with a write token", "GET", "/metrics", 403, token="write")
    c.send("metrics without a token", "GET", "/metrics", 401)

    # Not routes: 404 not_found.
    c.send("unknown path", "GET", "/v1/nope", 404, token="read")
    c.send("HEAD on another endpoint", "HEAD", "/v1/schema", 404, token="read")
    c.send("another method", "GET", "/v1/sync", 404, token="read")
    c.send("snapshot, path with more segments", "GET", "/v1/snapshot/events/1", 404, token="read")


def main():
    parser = argparse.ArgumentParser(description="Check a seed-server's answers against an OpenAPI document.")
    parser.add_argument("spec")
    parser.add_argument("url")
    parser.add_argument("--tokens", required=True, help="folder with files read, write and admin")
    parser.add_argument("--bin", required=True)
    parser.add_argument("--database", required=True)
    args = parser.parse_args()
    try:
        document = Document(args.spec)
    except Exception as error:  # noqa: BLE001 - any failure to read or validate the document
        print(f"openapi-check: {args.spec} is not a valid OpenAPI 3.1 document: {error}", file=sys.stderr)
        return 1
    print(f"openapi-check: {args.spec} is valid OpenAPI {document.spec['openapi']}", file=sys.stderr)
    tokens = {role: open(f"{args.tokens}/{role}").read().strip() for role in ("read", "write", "admin")}
    check = Checker(document, args.url, tokens)

    def compact():
        subprocess.run([f"{args.bin}/seed-server", "compact", "--database", args.database, "--keep-revisions", "1"],
                       check=True, stdout=subprocess.DEVNULL, timeout=60)

    def upgrade():
        with open(f"{args.database}.v2.json", "w", encoding="utf-8") as file:
            json.dump(SCHEMA_V2, file)
        subprocess.run([f"{args.bin}/seed-server", "schema", "upgrade", "--database", args.database,
                        "--schema", f"{args.database}.v2.json"], check=True, stdout=subprocess.DEVNULL, timeout=60)

    def publish():
        """Builds a seed of the server as it is into its --seeds folder; its manifest."""
        out = f"{args.database}.seeds/openapi.sqlite"
        subprocess.run([f"{args.bin}/seed-build", "--server", args.url, "--out", out, "--gzip", "--quiet"],
                       check=True, stdout=subprocess.DEVNULL, timeout=120, env={**os.environ, "SEED_TOKEN": tokens["read"]})
        with open(f"{out}.manifest.json", encoding="utf-8") as file:
            return json.load(file)

    try:
        run(check, compact, upgrade, publish)
    except Exception as error:  # noqa: BLE001 - a broken document or an answer the checks did not foresee
        where = traceback.extract_tb(error.__traceback__)[-1]
        check.fail("checker", f"stopped by {type(error).__name__} at line {where.lineno}: {str(error)[:500]}")
    documented = {(method.upper(), path, int(status)) for path, item in document.spec["paths"].items()
                  for method, operation in item.items() for status in operation["responses"] if status.isdigit()}
    unseen = sorted(documented - check.covered)
    print("openapi-check: documented answers not produced here: "
          + ", ".join(f"{method} {path} {status}" for method, path, status in unseen), file=sys.stderr)
    if check.failures:
        print(f"openapi-check: {len(check.failures)} failures in {check.answers} answers: the server and {args.spec} disagree", file=sys.stderr)
        return 1
    print(f"openapi-check: {check.answers} answers match {args.spec}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
