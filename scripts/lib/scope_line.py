#!/usr/bin/env python3
"""The scope line: a reader granted some scope values never sees one row, key or count of another value.

Against a real seed-server serving the `clubs` dataset (PROTOCOL.md §10: `teams` scoped by its key, `venues`
shared, `events` and `tickets` scoped by `team_id`), this suite commits a history through the admin endpoint
(rows of two teams, edits, an event moved each way with its ticket, a deletion, shared rows), keeps the rows
after every revision, and from them works out what each grant must be answered. Then, with JWTs granting
team 1, team 2, `["1"]` (the string form) and `[]`, and with the static read token:

- every answer of `GET /v1/schema`, `GET /v1/snapshot/{type}` (after, limit, fields, schemaVersion and
  notBefore, paged to the end), `POST /v1/sync` and `GET /v1/changes` (from several revisions, with several
  limits, followed to the end) equals exactly what the grant reads, and holds no key, scope value, reference
  or text of a team it does not grant (the static reader's answers first, so the server's kept pages and
  change sets hold every team's rows when the scoped readers ask);
- scoped answers say `scopes` and `Cache-Control: private`, the static reader's log reads are `public`;
- one reader's `ETag` never earns another reader a 304 for another body; `GET /v1/seeds` lists a scoped reader
  the seeds registered for its teams alone;
- addresses naming their teams (`scopes=`) answer those teams' rows alone, `public`, to every token granting
  them, and 403 to any other; through nginx (`--cache`), a scoped reader is refused every answer the cache keeps
  of every team (however the address is spelled) and of another team, with or without its `ETag`;
- pushes of team 1 into team 2 (create, move, update, delete, reference, a shared row team 2 holds) are
  rejected or conflict like pushes about missing rows, show nothing of team 2, and change nothing of it; nor
  do the results replayed to team 1 for push ids team 2 used;
- error answers to team 1 hold nothing of team 2; `notBefore` past the head is 409 for it as for everyone;
  a JWT without the scope claim is refused (401);
- a live sync of team 1 woken by a commit of team 2 shows nothing of it; the server answers /health at the end.

Usage: scope_line.py --write-schema FILE
       scope_line.py URL --read-token T --admin-token T --jwt-key PEM
The server must serve a store made from that schema with no revision yet, started with `--shared-cache`,
`--jwks-file` of the key PEM under `kid` k1, `--jwt-scope-claim teams` and `--jwt-role-claim role`
(scripts/suites/scope-line.sh starts it so). Prints one line per case and a summary; exits 1 when a case fails.
"""

import argparse
import copy
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jwt_keys  # noqa: E402

# MARK: The dataset

SCHEMA = {
    "dataset": "clubs", "schemaVersion": 1, "scope": {"name": "team", "type": "integer"},
    "types": [
        {"name": "teams", "primaryKey": {"name": "id", "type": "integer"},
         "fields": [{"name": "name", "type": "text", "nullable": False}], "scopedBy": "id"},
        {"name": "venues", "primaryKey": {"name": "id", "type": "integer"},
         "fields": [{"name": "name", "type": "text", "nullable": False}]},
        {"name": "events", "primaryKey": {"name": "id", "type": "integer"},
         "fields": [{"name": "team_id", "type": "integer", "nullable": False, "references": "teams"},
                    {"name": "title", "type": "text", "nullable": False},
                    {"name": "venue_id", "type": "integer", "nullable": True, "references": "venues"}],
         "scopedBy": "team_id"},
        {"name": "tickets", "primaryKey": {"name": "id", "type": "integer"},
         "fields": [{"name": "team_id", "type": "integer", "nullable": False, "references": "teams"},
                    {"name": "event_id", "type": "integer", "nullable": False, "references": "events"}],
         "scopedBy": "team_id"},
    ],
}
TYPES = [entry["name"] for entry in SCHEMA["types"]]
FIELDS = {entry["name"]: [field["name"] for field in entry["fields"]] for entry in SCHEMA["types"]}
SCOPED_BY = {entry["name"]: entry.get("scopedBy") for entry in SCHEMA["types"]}
REFERENCES = {(entry["name"], field["name"]): field["references"]
              for entry in SCHEMA["types"] for field in entry["fields"] if "references" in field}
TEAMS = (1, 2)
# Every text of a team's rows holds its marker, so a text of a team not granted is found wherever it shows.
MARKER = {1: "TEAM1", 2: "TEAM2"}


def event(team, title, venue=None):
    return {"team_id": team, "title": title, "venue_id": venue}


def ticket(team, event_key):
    return {"team_id": team, "event_id": event_key}


# The history this suite commits, one change set per revision: {type: {"create"|"update": {key: row}, "delete": [key]}}.
COMMITS = [
    {"teams": {"create": {1: {"name": "TEAM1 Rovers"}, 2: {"name": "TEAM2 United"}}},
     "venues": {"create": {1: {"name": "Shared Hall"}, 2: {"name": "Shared Annex"}}}},
    {"events": {"create": {key: event(1 if key % 2 else 2, f"TEAM{1 if key % 2 else 2} event {key}",
                                      {1: 1, 2: 1, 4: 2, 6: 2}.get(key)) for key in range(1, 11)}}},
    {"tickets": {"create": {11: ticket(1, 1), 13: ticket(1, 3), 15: ticket(1, 5), 17: ticket(1, 7), 19: ticket(1, 9),
                            21: ticket(1, 1), 12: ticket(2, 2), 14: ticket(2, 4), 16: ticket(2, 6), 18: ticket(2, 8),
                            20: ticket(2, 10), 22: ticket(2, 2)}}},
    # team 2 alone
    {"events": {"update": {2: event(2, "TEAM2 event 2 renamed", 1), 4: event(2, "TEAM2 event 4 renamed", 2)}}},
    # both teams in one change set
    {"events": {"update": {3: event(1, "TEAM1 event 3 renamed"), 10: event(2, "TEAM2 event 10 renamed")}}},
    # event 8 and its ticket move from team 2 to team 1, event 9 and its ticket from team 1 to team 2
    {"events": {"update": {8: event(1, "TEAM1 event 8 moved in")}}, "tickets": {"update": {18: ticket(1, 8)}}},
    {"events": {"update": {9: event(2, "TEAM2 event 9 moved in")}}, "tickets": {"update": {19: ticket(2, 9)}}},
    {"tickets": {"delete": [20]}},
    {"events": {"create": {24: event(2, "TEAM2 event 24")}}, "tickets": {"create": {26: ticket(2, 24)}}},
    {"events": {"update": {6: event(2, "TEAM2 event 6 renamed", 2)}}},
    # shared rows
    {"venues": {"create": {3: {"name": "Shared Field"}}, "update": {1: {"name": "Shared Hall renamed"}}}},
    {"tickets": {"update": {21: ticket(1, 3)}}},
    # the head: team 2 alone
    {"tickets": {"update": {22: ticket(2, 4)}}},
]


def scope_value(type_name, key, row):
    """The row's scope value; None for a row of a shared type."""
    by = SCOPED_BY[type_name]
    return None if by is None else key if by == "id" else row[by]


def admin_body(change):
    """The change set of `change` as POST /v1/admin/changes takes it."""
    body = {"types": [name for name in TYPES if name in change]}
    for name in body["types"]:
        lists = change[name]
        rows = {**lists.get("create", {}), **lists.get("update", {})}
        body[name] = {"create": sorted(lists.get("create", {})), "update": sorted(lists.get("update", {})),
                      "delete": sorted(lists.get("delete", [])),
                      "attributes": {str(key): row for key, row in rows.items()}}
    return body


class History:
    """The rows after every revision (each row with its `revision`), as this suite's commits left them."""

    def __init__(self):
        self.states = [{name: {} for name in TYPES}]
        self.changes = [None]

    @property
    def head(self):
        return len(self.states) - 1

    def record(self, revision, change):
        if revision != self.head + 1:
            raise RuntimeError(f"committed as revision {revision}, expected {self.head + 1}")
        state = copy.deepcopy(self.states[-1])
        for name, lists in change.items():
            for key, row in {**lists.get("create", {}), **lists.get("update", {})}.items():
                state[name][key] = {**row, "revision": revision}
            for key in lists.get("delete", []):
                del state[name][key]
        self.states.append(state)
        self.changes.append(change)

    def rows(self, grant, revision=None):
        """The rows a reader of `grant` (a set of scope values; None: every value) reads at `revision`."""
        state = self.states[self.head if revision is None else revision]
        return {name: {key: row for key, row in rows.items()
                       if grant is None or SCOPED_BY[name] is None or scope_value(name, key, row) in grant}
                for name, rows in state.items()}

    def ever_read(self, grant):
        """Per type, every key a reader of `grant` could read at some revision."""
        keys = {name: set() for name in TYPES}
        for revision in range(self.head + 1):
            for name, rows in self.rows(grant, revision).items():
                keys[name] |= set(rows)
        return keys

    def change_set(self, revision, grant):
        """Change set `revision` as PROTOCOL.md §10 shows it to `grant`; None when it shows nothing."""
        before, change = self.states[revision - 1], self.changes[revision]
        shown = {"revision": revision, "types": []}
        for name in TYPES:
            if name not in change:
                continue
            lists = {"create": [], "update": [], "delete": [], "attributes": {}}
            moved_from = {}
            granted = (lambda value: True) if grant is None or SCOPED_BY[name] is None else (lambda value: value in grant)
            for key, row in change[name].get("create", {}).items():
                if granted(scope_value(name, key, row)):
                    lists["create"].append(key)
            for key, row in change[name].get("update", {}).items():
                old, new = scope_value(name, key, before[name][key]), scope_value(name, key, row)
                if SCOPED_BY[name] and old != new:
                    moved_from[str(key)] = old
                if granted(old) and granted(new):
                    lists["update"].append(key)
                elif granted(new):
                    lists["create"].append(key)
                elif granted(old):
                    lists["delete"].append(key)
            for key in change[name].get("delete", []):
                if SCOPED_BY[name]:
                    moved_from[str(key)] = scope_value(name, key, before[name][key])
                if granted(scope_value(name, key, before[name][key])):
                    lists["delete"].append(key)
            rows = {**change[name].get("create", {}), **change[name].get("update", {})}
            for key in lists["create"] + lists["update"]:
                lists["attributes"][str(key)] = {**rows[key], "revision": revision}
            if not (lists["create"] or lists["update"] or lists["delete"]):
                continue
            for member in ("create", "update", "delete"):
                lists[member].sort()
            if grant is None and moved_from:
                lists["from"] = moved_from  # only a reader of every value is sent `from`
            shown["types"].append(name)
            shown[name] = lists
        return shown if shown["types"] else None

    def change_sets(self, grant, after):
        shown = (self.change_set(revision, grant) for revision in range(after + 1, self.head + 1))
        return [change_set for change_set in shown if change_set is not None]


# MARK: HTTP


class Answer:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body) if self.body else None

    @property
    def code(self):
        try:
            return self.json()["error"]["code"]
        except Exception:
            return None

    def __str__(self):
        return f"{self.status} {self.body[:300].decode(errors='replace')}"


class Server:
    """One keep-alive connection to the server; a token is named (`A`, `admin`, …) or given as it is."""

    def __init__(self, url, tokens):
        parsed = urllib.parse.urlparse(url)
        self.host, self.port = parsed.hostname, parsed.port
        self.tokens = tokens
        self.connection = None

    def request(self, method, path, token, body=None, headers=None):
        data = None if body is None else json.dumps(body).encode()
        sent = {"Authorization": f"Bearer {self.tokens.get(token, token)}"} if token else {}
        if data is not None:
            sent["Content-Type"] = "application/json"
        sent.update(headers or {})
        for attempt in (1, 2):
            try:
                if self.connection is None:
                    self.connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
                self.connection.request(method, path, body=data, headers=sent)
                response = self.connection.getresponse()
                answer = Answer(response.status, {name.lower(): value for name, value in response.getheaders()},
                                response.read())
                if response.will_close:
                    self.close()
                return answer
            except (http.client.HTTPException, ConnectionError):
                self.close()
                if attempt == 2:
                    raise

    def close(self):
        if self.connection is not None:
            self.connection.close()
        self.connection = None

    def get(self, path, token, headers=None):
        return self.request("GET", path, token, headers=headers)

    def sync(self, token, body):
        return self.request("POST", "/v1/sync", token, body)


def without_key(result, key):
    """A push result with its id left out and `key` written KEY, to compare results about two keys."""
    def rewrite(value):
        if isinstance(value, dict):
            return {("KEY" if member == str(key) else member): rewrite(inner) for member, inner in value.items()
                    if member != "id"}
        if isinstance(value, list):  # key lists: create, update, delete
            return ["KEY" if inner == key else rewrite(inner) for inner in value]
        if isinstance(value, str):
            return value.replace(f"[{key}]", "[KEY]")
        return value
    return rewrite(result)


def query(path, parameters):
    return path + ("?" + urllib.parse.urlencode(parameters) if parameters else "")


# MARK: The line


class Reader:
    """A token, the scope values it reads (None: every value, a static token) and what it may never see; a
    reader that names its values in its addresses (`scopes=`) reads those alone, whatever its token grants."""

    def __init__(self, name, token, grant, history, named=None):
        self.name, self.token, self.grant = name, token, grant
        # named: the `scopes` parameter its reads send (an address caches may share), or None.
        self.named = named
        self.scoped = grant is not None
        # A reader of some values that does not name them is answered `private`.
        self.private = self.scoped and named is None
        self.markers = [MARKER[team] for team in TEAMS if self.scoped and team not in grant]
        self.other_values = {team for team in TEAMS if self.scoped and team not in grant}
        self.history, self.hidden, self.hidden_at = history, None, None

    @property
    def hidden_keys(self):
        """Per type, the keys of rows this reader could read at no revision (worked out again after commits)."""
        if self.hidden_at != self.history.head:
            readable, everything = self.history.ever_read(self.grant), self.history.ever_read(None)
            self.hidden = {name: everything[name] - readable[name] for name in TYPES}
            self.hidden_at = self.history.head
        return self.hidden

    def leaks(self, value, where, named=None):
        """What `value`, an answer's JSON, shows this reader of values it is not granted. `named`: keys (by
        type) the request itself named, which the answer may repeat."""
        found = []
        self.scan_texts(value, where, found)
        if isinstance(value, dict):
            for index, change_set in enumerate(value.get("changeSets") or []):
                self.scan_change_set(change_set, f"{where} changeSets[{index}]", found, named)
            for index, result in enumerate(value.get("results") or []):
                if isinstance(result.get("changeSet"), dict):
                    self.scan_change_set(result["changeSet"], f"{where} results[{index}].changeSet", found, named)
                for name, keys in (result.get("keys") or {}).items():
                    for key in keys.values():
                        self.scan_key(name, key, f"{where} results[{index}].keys.{name}", found)
            if isinstance(value.get("rows"), list):
                self.scan_page(value, where, found)
        return found

    def scan_texts(self, value, where, found):
        if isinstance(value, str):
            for marker in self.markers:
                if marker in value:
                    found.append(f"{where}: text {value[:80]!r} of a team not granted")
        elif isinstance(value, dict):
            for member, inner in value.items():
                self.scan_texts(member, where, found)
                self.scan_texts(inner, f"{where}.{member}", found)
        elif isinstance(value, list):
            for index, inner in enumerate(value):
                self.scan_texts(inner, f"{where}[{index}]", found)

    def scan_key(self, type_name, key, where, found, named=None):
        if key in self.hidden_keys.get(type_name, ()) and key not in (named or {}).get(type_name, ()):
            found.append(f"{where}: {type_name} key {key}, a row of a team not granted")

    def scan_row(self, type_name, key, row, where, found):
        """A row (field name to value, all or some of its fields) shown: its scope value and references."""
        by = SCOPED_BY[type_name]
        value = key if by == "id" else row.get(by)
        if self.scoped and by and value in self.other_values:
            found.append(f"{where}: {type_name} {key} of team {value}")
        for field, value in row.items():
            target = REFERENCES.get((type_name, field))
            if target and value in self.hidden_keys[target]:
                found.append(f"{where}: {type_name} {key}.{field} = {value}, and {target} {value} is of a team not granted")

    def scan_change_set(self, change_set, where, found, named):
        if not self.scoped:
            return
        for name in change_set.get("types", []):
            lists = change_set.get(name) or {}
            if "from" in lists:
                found.append(f"{where}.{name}: `from` {lists['from']} sent to a scoped reader")
            for member in ("create", "update", "delete"):
                for key in lists.get(member, []):
                    self.scan_key(name, key, f"{where}.{name}.{member}", found, named)
            for key_text, row in (lists.get("attributes") or {}).items():
                key = int(key_text) if key_text.lstrip("-").isdigit() else key_text
                if key in self.hidden_keys.get(name, ()):
                    found.append(f"{where}.{name}.attributes: the row {key} of a team not granted, with its values")
                self.scan_row(name, key, row, f"{where}.{name}.attributes", found)

    def scan_page(self, page, where, found):
        if not self.scoped:
            return
        name, columns = page.get("type"), page.get("columns", [])
        for row in page["rows"]:
            values = dict(zip(columns, row))
            key = row[0]
            self.scan_key(name, key, f"{where} rows", found)
            self.scan_row(name, key, values, f"{where} rows", found)


class Problems(Exception):
    pass


def check(condition, problem):
    if not condition:
        raise Problems(problem)


def no_leaks(reader, value, where, named=None):
    found = reader.leaks(value, where, named)
    check(not found, "LEAK " + "; ".join(found[:5]) + (f" (and {len(found) - 5} more)" if len(found) > 5 else ""))


# MARK: The cases


class Suite:
    def __init__(self, server, history, jwt_key, cache=None):
        self.server, self.history, self.cache = server, history, cache
        self.jwt_key = jwt_key
        self.sequence = 0

    def jwt(self, **claims):
        body = {"exp": int(time.time()) + 900, "role": "write"}
        body.update(claims)
        return jwt_keys.sign(self.jwt_key, {"alg": "ES256", "kid": "k1"}, body)

    def push_id(self):
        self.sequence += 1
        return f"scope-line-{os.getpid()}-{self.sequence}"

    def commit(self, change):
        answer = self.server.request("POST", "/v1/admin/changes", "admin", admin_body(change))
        check(answer.status == 200, f"admin commit answered {answer}")
        self.history.record(answer.json()["revision"], change)

    def load(self):
        for change in COMMITS:
            self.commit(change)

    # The readers' matrix: every endpoint and parameter, compared with what the grant reads.

    def schema(self, reader):
        expected = {name: len(rows) for name, rows in self.history.rows(reader.grant).items()}
        for path in ("/v1/schema", "/v1/schema?version=1"):
            answer = self.server.get(path, reader.token)
            check(answer.status == 200, f"GET {path}: {answer}")
            body = answer.json()
            no_leaks(reader, body, f"GET {path}")
            check(body.get("rowCounts") == expected, f"GET {path}: rowCounts {body.get('rowCounts')}, expected {expected}")
            check(body.get("revision") == self.history.head, f"GET {path}: revision {body.get('revision')}")
            check(body.get("scope") == SCHEMA["scope"], f"GET {path}: scope {body.get('scope')}")
            check({entry["name"]: entry.get("scopedBy") for entry in body["types"]} == SCOPED_BY,
                  f"GET {path}: scopedBy {[entry.get('scopedBy') for entry in body['types']]}")

    def snapshot_variants(self, type_name):
        head = self.history.head
        fields = {"teams": ["name"], "venues": ["name"], "events": ["title", "team_id,venue_id"],
                  "tickets": ["event_id", "team_id"]}[type_name]
        variants = [{}, {"schemaVersion": "1"}, {"notBefore": "0"}, {"notBefore": str(head)}]
        variants += [{"limit": str(limit)} for limit in (1, 2, 3)]
        variants += [{"after": str(after)} for after in (0, 1, 2, 5, 8)]
        variants += [{"fields": names} for names in fields]
        variants += [{"limit": "2", "notBefore": "0"}, {"limit": "1", "after": "2", "schemaVersion": "1"},
                     {"limit": "2", "fields": fields[-1], "notBefore": str(head), "schemaVersion": "1"},
                     {"limit": "3", "after": "1", "fields": fields[0], "notBefore": "0"}]
        return variants

    def snapshot(self, reader, type_name):
        for parameters in self.snapshot_variants(type_name):
            fields = parameters["fields"].split(",") if "fields" in parameters else FIELDS[type_name]
            columns = ["id"] + [field for field in FIELDS[type_name] if field in fields] + ["revision"]
            if reader.named is not None:
                parameters = {**parameters, "scopes": reader.named}
            start = int(parameters.get("after", -1))
            walk = self.pages(reader, type_name, parameters, columns)
            # A kept page (the server's or a cache's) may be older than the head: each is checked against
            # the rows at the revision it says, which the client catches up from.
            for after, page in walk:
                expected = self.expected_rows(reader, type_name, columns, after, page["revision"])
                where = query("/v1/snapshot/" + type_name, {**parameters, "after": after})
                check(page["rows"] == expected[:len(page["rows"])] and (page["next"] is not None
                                                                      or len(page["rows"]) == len(expected)),
                      f"{where}: a page of revision {page['revision']} read {page['rows']}, the grant reads "
                      f"{expected} then")
            if all(page["revision"] == self.history.head for _, page in walk):
                seen = [row for _, page in walk for row in page["rows"]]
                expected = self.expected_rows(reader, type_name, columns, start, self.history.head)
                check(seen == expected, f"{query('/v1/snapshot/' + type_name, parameters)} paged to the end read "
                                        f"{seen}, the grant reads {expected}")

    def expected_rows(self, reader, type_name, columns, after, revision):
        rows = self.history.rows(reader.grant, revision)[type_name]
        return [[key] + [row[column] for column in columns[1:]] for key, row in sorted(rows.items()) if key > after]

    def pages(self, reader, type_name, parameters, columns):
        """The pages from `parameters` on, following `next`, each with the key it was read after (-1: from
        the first); checks each page on the way."""
        walk, parameters = [], dict(parameters)
        limit = int(parameters.get("limit", 5000))
        for _ in range(100):
            path = query(f"/v1/snapshot/{type_name}", parameters)
            answer = self.server.get(path, reader.token)
            check(answer.status == 200, f"GET {path}: {answer}")
            page = answer.json()
            no_leaks(reader, page, f"GET {path}")
            self.check_cache_control(reader, answer, path, private=reader.private and SCOPED_BY[type_name] is not None)
            check(page["columns"] == columns, f"GET {path}: columns {page['columns']}, expected {columns}")
            check(page["revision"] >= int(parameters.get("notBefore", 0)),
                  f"GET {path}: a page of revision {page['revision']}, before notBefore")
            check(len(page["rows"]) <= limit, f"GET {path}: {len(page['rows'])} rows, over the limit")
            walk.append((int(parameters.get("after", -1)), page))
            if page["next"] is None:
                return walk
            # A `next` past the reader's last row would tell it that a row of another team follows.
            check(page["rows"] and page["next"] == page["rows"][-1][0],
                  f"GET {path}: next {page['next']!r} is not the key of the page's last row")
            parameters["after"] = str(page["next"])
        raise Problems(f"/v1/snapshot/{type_name}: more than 100 pages")

    def check_cache_control(self, reader, answer, path, private):
        cache_control = answer.headers.get("cache-control", "")
        wanted = "private" if private else "public"
        check(cache_control.startswith(wanted), f"GET {path} as {reader.name}: Cache-Control {cache_control!r}, "
                                                f"expected {wanted} (the server has --shared-cache)")

    def log_reads(self, reader, read, starts, variants):
        """Reads the log with `read(after, variant)` from each start, answer after answer to the end, and
        compares the change sets with what the grant is shown."""
        for after in starts:
            for variant in variants:
                change_sets, revision, answers = [], after, 0
                while True:
                    answers += 1
                    check(answers <= 100, f"from {after}, {variant}: more than 100 answers")
                    where, answer = read(revision, variant)
                    check(answer.status == 200, f"{where}: {answer}")
                    body = answer.json()
                    no_leaks(reader, body, where)
                    self.check_log_answer(reader, body, revision, variant.get("limit"), where)
                    change_sets += body["changeSets"]
                    revision = body["maxRevision"]
                    if not body["hasMore"]:
                        break
                expected = self.history.change_sets(reader.grant, after)
                check(change_sets == expected, f"from {after}, {variant}: read {json.dumps(change_sets)[:600]}, "
                                               f"expected {json.dumps(expected)[:600]}")
                check(revision == self.history.head, f"from {after}, {variant}: ended at {revision}, "
                                                     f"not the head {self.history.head}")

    def check_log_answer(self, reader, body, after, limit, where):
        revisions = [change_set["revision"] for change_set in body["changeSets"]]
        check(revisions == sorted(set(revisions)) and all(after < r <= body["maxRevision"] for r in revisions),
              f"{where}: revisions {revisions} with maxRevision {body['maxRevision']}")
        check(limit is None or len(revisions) <= limit, f"{where}: {len(revisions)} change sets over limit {limit}")
        check(not body["hasMore"] or body["maxRevision"] > after, f"{where}: hasMore without moving past {after}")
        if reader.scoped:
            check(body.get("scopes") == sorted(reader.grant), f"{where}: scopes {body.get('scopes')}, "
                                                              f"expected {sorted(reader.grant)}")
        else:
            check("scopes" not in body, f"{where}: scopes {body.get('scopes')} for a static token")
            check(revisions == list(range(after + 1, body["maxRevision"] + 1)), f"{where}: gaps {revisions}")

    SYNC_STARTS, SYNC_VARIANTS = (0, 1, 3, 5, 7, 9, 12), ({}, {"limit": 1}, {"limit": 2, "schemaVersion": 1}, {"limit": 5})
    LOG_STARTS, LOG_VARIANTS = (0, 2, 4, 6, 8, 11), ({}, {"limit": 1}, {"limit": 3})

    def sync(self, reader):
        def read(after, variant):
            body = {"maxRevision": after, **variant}
            return f"POST /v1/sync {json.dumps(body)}", self.server.sync(reader.token, body)
        self.log_reads(reader, read, self.SYNC_STARTS + (self.history.head,), self.SYNC_VARIANTS)

    def changes(self, reader):
        def read(after, variant):
            named = {} if reader.named is None else {"scopes": reader.named}
            path = query("/v1/changes", {"after": after, "schemaVersion": 1, **variant, **named})
            answer = self.server.get(path, reader.token)
            if answer.status == 200:
                self.check_cache_control(reader, answer, path, private=reader.private)
                check(answer.headers.get("etag"), f"GET {path}: no ETag")
            return f"GET {path}", answer
        self.log_reads(reader, read, self.LOG_STARTS + (self.history.head,), self.LOG_VARIANTS)

    def reader_cases(self, reader):
        if reader.named is not None:
            # `scopes=` names what the log reads and the pages hold; the schema and POST /v1/sync answer the token.
            return [(f"{reader.name}: GET /v1/snapshot/{name}, {len(self.snapshot_variants(name))} variants paged to "
                     f"the end", lambda name=name: self.snapshot(reader, name)) for name in TYPES] + \
                [(f"{reader.name}: GET /v1/changes from {len(self.LOG_STARTS) + 1} revisions × "
                  f"{len(self.LOG_VARIANTS)} limits, to the end", lambda: self.changes(reader))]
        return [(f"{reader.name}: GET /v1/schema rowCounts", lambda: self.schema(reader))] + \
            [(f"{reader.name}: GET /v1/snapshot/{name}, {len(self.snapshot_variants(name))} variants paged to the end",
              lambda name=name: self.snapshot(reader, name)) for name in TYPES] + \
            [(f"{reader.name}: POST /v1/sync from {len(self.SYNC_STARTS) + 1} revisions × {len(self.SYNC_VARIANTS)} "
              f"limits, to the end", lambda: self.sync(reader)),
             (f"{reader.name}: GET /v1/changes from {len(self.LOG_STARTS) + 1} revisions × {len(self.LOG_VARIANTS)} "
              f"limits, to the end", lambda: self.changes(reader))]

    # Caches: one reader's entity tag is no other reader's.

    def etags_across_readers(self, readers):
        paths = ["/v1/changes?after=0&schemaVersion=1", "/v1/changes?after=4&schemaVersion=1",
                 "/v1/snapshot/events", "/v1/snapshot/events?notBefore=0", "/v1/snapshot/tickets?limit=2",
                 "/v1/snapshot/teams", "/v1/snapshot/venues"]
        for path in paths:
            plain = {reader.name: self.server.get(path, reader.token) for reader in readers}
            for reader in readers:
                own = plain[reader.name]
                again = self.server.get(path, reader.token, {"If-None-Match": own.headers["etag"]})
                check(again.status == 304, f"GET {path} as {reader.name} with its own ETag: {again.status}, not 304")
                for other in readers:
                    if other is reader:
                        continue
                    tag = plain[other.name].headers["etag"]
                    answer = self.server.get(path, reader.token, {"If-None-Match": tag})
                    if own.body != plain[other.name].body:
                        check(answer.status == 200 and answer.body == own.body,
                              f"LEAK GET {path} as {reader.name} with If-None-Match {tag} of {other.name}'s "
                              f"other body: {answer.status} {answer.body[:200]!r}")

    # Seeds, static tokens.

    def seeds(self, readers):
        """A seed of every team is listed to the static token alone; a seed of team 1 to the readers of team 1."""
        whole = {"sha256": "5e" * 32, "revision": self.history.head, "schemaVersion": 1}
        team_one = {"sha256": "5f" * 32, "revision": self.history.head, "schemaVersion": 1, "scopes": [1]}
        for registration in (whole, team_one):
            answer = self.server.request("POST", "/v1/admin/seeds", "admin", registration)
            check(answer.status == 200, f"POST /v1/admin/seeds {registration}: {answer}")
        listed = self.server.get("/v1/seeds", "read").json()
        check([seed["sha256"] for seed in listed["seeds"]] == [whole["sha256"], team_one["sha256"]],
              f"GET /v1/seeds as the static read token: {listed}")
        for reader in readers:
            answer = self.server.get("/v1/seeds", reader.token)
            expected = [team_one["sha256"]] if reader.grant == {1} else []
            check(answer.status == 200 and [seed["sha256"] for seed in answer.json()["seeds"]] == expected,
                  f"LEAK GET /v1/seeds as {reader.name}: {answer}, expected {expected}")

    def static_log_read_is_public(self):
        path = "/v1/changes?after=0&schemaVersion=1"
        answer = self.server.get(path, "read")
        check(answer.status == 200, f"GET {path}: {answer}")
        check(answer.headers.get("cache-control", "").startswith("public"),
              f"GET {path} as the static read token: Cache-Control {answer.headers.get('cache-control')!r}")
        check("scopes" not in answer.json(), f"GET {path} as the static read token: scopes {answer.json().get('scopes')}")

    # Pushes across the line.

    def push(self, token, change_set, max_revision=None):
        body = {"maxRevision": self.history.head if max_revision is None else max_revision,
                "changeSets": [{"id": self.push_id(), **change_set}]}
        answer = self.server.sync(token, body)
        check(answer.status == 200, f"push {json.dumps(change_set)}: {answer}")
        return answer.json()

    def result(self, reader, change_set, named):
        body = self.push(reader.token, change_set)
        no_leaks(reader, body, f"push {json.dumps(change_set)}", named)
        return body["results"][0]

    def revision_of(self, type_name, key):
        return self.history.states[-1][type_name][key]["revision"]

    def answered_as_missing(self, reader, make, hidden_key, missing_key, type_name, status="conflict"):
        """`make(key)` pushed about a row of another team is answered exactly as about a missing row."""
        results = [self.result(reader, make(key), {type_name: {key}}) for key in (hidden_key, missing_key)]
        for result in results:
            check(result["status"] == status, f"push about {type_name} {result.get('id')}: {result}, expected {status}")
        shown, missing = without_key(results[0], hidden_key), without_key(results[1], missing_key)
        check(shown == missing, f"LEAK the answer about {type_name} {hidden_key} of another team, {results[0]}, "
                                f"differs from the one about a missing row, {results[1]}")

    def push_create_in_other_team(self, reader):
        result = self.result(reader, {"types": ["events"], "events": {
            "create": [-1], "attributes": {"-1": event(2, "TEAM1 intruder")}}}, {})
        check(result["status"] == "rejected", f"create of an event of team 2: {result}")
        check("does not grant" in result["error"]["message"], f"the rejection does not say team 2 is not granted: {result}")

    def push_move_own_event_out(self, reader):
        result = self.result(reader, {"types": ["events", "tickets"],
                                      "events": {"update": [7], "attributes": {"7": {
                                          **event(2, "TEAM1 event 7 leaving"), "revision": self.revision_of("events", 7)}}},
                                      "tickets": {"update": [17], "attributes": {"17": {
                                          **ticket(2, 7), "revision": self.revision_of("tickets", 17)}}}}, {})
        check(result["status"] == "rejected", f"a move of event 7 to team 2: {result}")
        check("does not grant" in result["error"]["message"], f"the rejection does not say team 2 is not granted: {result}")

    def update_event(self, key, team):
        revision = self.revision_of("events", key) if key in self.history.states[-1]["events"] else 1
        return {"types": ["events"], "events": {"update": [key], "attributes": {
            str(key): {**event(team, "TEAM1 hijack", 1), "revision": revision}}}}

    def push_update_other_team_event(self, reader):
        self.answered_as_missing(reader, lambda key: self.update_event(key, 2), 2, 999, "events", "rejected")

    def push_take_other_team_event(self, reader):
        self.answered_as_missing(reader, lambda key: self.update_event(key, 1), 2, 999, "events")

    def push_delete_other_team_ticket(self, reader):
        def make(key):
            revision = self.revision_of("tickets", key) if key in self.history.states[-1]["tickets"] else 1
            return {"types": ["tickets"], "tickets": {"delete": [key], "attributes": {str(key): {"revision": revision}}}}
        self.answered_as_missing(reader, make, 12, 998, "tickets")

    def push_delete_referenced_other_team_event(self, reader):
        def make(key):
            revision = self.revision_of("events", key) if key in self.history.states[-1]["events"] else 1
            return {"types": ["events"], "events": {"delete": [key], "attributes": {str(key): {"revision": revision}}}}
        self.answered_as_missing(reader, make, 4, 997, "events")  # ticket 14 of team 2 references event 4

    def push_ticket_to_other_team_event(self, reader):
        def make(key):
            return {"types": ["tickets"], "tickets": {"create": [-1], "attributes": {"-1": ticket(1, key)}}}
        self.answered_as_missing(reader, make, 2, 996, "events")

    def push_delete_shared_venue_other_team_uses(self, reader):
        key = 2  # referenced by events 4 and 6 of team 2 alone
        result = self.result(reader, {"types": ["venues"], "venues": {"delete": [key], "attributes": {
            str(key): {"revision": self.revision_of("venues", key)}}}}, {})
        check(result["status"] in ("conflict", "rejected"), f"delete of venue 2, which team 2 uses: {result}")
        answer = self.server.get("/v1/snapshot/venues", "admin")
        check(key in [row[0] for row in answer.json()["rows"]], "venue 2 was deleted under team 2's events")

    def push_read_token(self):
        answer = self.server.sync("read", {"maxRevision": self.history.head, "changeSets": [{
            "id": self.push_id(), "types": ["venues"], "venues": {"create": [-1], "attributes": {"-1": {"name": "x"}}}}]})
        check(answer.status == 403 and answer.code == "forbidden", f"a push with the static read token: {answer}")

    def push_own_rows(self, reader):
        """An applied push of team 1; its answer catches up from 0 and shows nothing of team 2."""
        change_set = {"types": ["events", "tickets"],
                      "events": {"create": [-1], "attributes": {"-1": event(1, "TEAM1 pushed event", 3)}},
                      "tickets": {"create": [-2], "attributes": {"-2": ticket(1, -1)}}}
        body = self.push(reader.token, change_set, max_revision=0)
        no_leaks(reader, body, "push of team 1's own rows")
        result = body["results"][0]
        check(result["status"] == "applied", f"push of team 1's own rows: {result}")
        event_key, ticket_key = result["keys"]["events"]["-1"], result["keys"]["tickets"]["-2"]
        self.history.record(result["revision"], {"events": {"create": {event_key: event(1, "TEAM1 pushed event", 3)}},
                                                 "tickets": {"create": {ticket_key: ticket(1, event_key)}}})

    def push_under_other_team_ids(self, reader, other):
        """Push ids are the server's, not a team's: team 2 pushes under two ids (a create, applied, and a stale
        update, a conflict showing its row), then team 1 pushes under the same ids. The answer to team 1, a
        replay of the results recorded for them, must show nothing of team 2."""
        ids = [self.push_id(), self.push_id()]
        stale = {**self.history.states[-1]["events"][2]}
        stale["revision"] -= 1
        body = self.server.sync(other.token, {"maxRevision": self.history.head, "changeSets": [
            {"id": ids[0], "types": ["events"], "events": {"create": [-1], "attributes": {"-1": event(2, "TEAM2 pushed")}}},
            {"id": ids[1], "types": ["events"], "events": {"update": [2], "attributes": {"2": stale}}}]}).json()
        check([result["status"] for result in body["results"]] == ["applied", "conflict"], f"team 2's pushes: {body}")
        key = body["results"][0]["keys"]["events"]["-1"]
        self.history.record(body["results"][0]["revision"], {"events": {"create": {key: event(2, "TEAM2 pushed")}}})
        change_sets = [{"id": push_id, "types": ["venues"], "venues": {"create": [-1], "attributes": {"-1": {"name": "x"}}}}
                       for push_id in ids]
        answer = self.server.sync(reader.token, {"maxRevision": self.history.head, "changeSets": change_sets})
        check(answer.status == 200, f"team 1's pushes under team 2's ids: {answer}")
        no_leaks(reader, answer.json(), f"team 1's pushes under team 2's ids {ids}")

    def server_rows_equal_history(self):
        """Every row the server holds (read with the admin token) is the row the history says."""
        for name, rows in self.history.rows(None).items():
            page = self.server.get(f"/v1/snapshot/{name}", "admin").json()
            expected = [[key] + [row[field] for field in FIELDS[name]] + [row["revision"]]
                        for key, row in sorted(rows.items())]
            check(page["rows"] == expected, f"the server's {name}: {page['rows']}, expected {expected}")

    # Errors, grants, live sync.

    def errors(self, reader):
        head, hidden_event = self.history.head, 2
        requests = [
            ("GET", "/v1/snapshot/nope", None, 404),
            ("GET", "/v1/snapshot/events?after=abc", None, 400),
            ("GET", "/v1/snapshot/events?fields=secret", None, 400),
            ("GET", "/v1/snapshot/events?schemaVersion=9", None, 409),
            ("GET", "/v1/snapshot/tickets?limit=0", None, 400),
            ("GET", "/v1/changes?after=x&schemaVersion=1", None, 400),
            ("GET", f"/v1/changes?after={head + 50}&schemaVersion=1", None, 409),
            ("GET", "/v1/schema?version=2", None, 409),
            ("POST", "/v1/sync", {"maxRevision": head + 50}, 409),
            ("POST", "/v1/sync", {"maxRevision": 0, "limit": 0}, 400),
            ("POST", "/v1/admin/changes", admin_body({"events": {"delete": [hidden_event]}}), 403),
            ("GET", "/v1/snapshot/events?scopes=2", None, 403),
            ("GET", "/v1/snapshot/tickets?notBefore=0&scopes=1,2", None, 403),
            ("GET", "/v1/changes?after=0&schemaVersion=1&scopes=2", None, 403),
            ("GET", "/v1/changes?after=0&schemaVersion=1&scopes=2,1", None, 400),
            ("GET", "/v1/snapshot/events?scopes=1&scopes=2", None, 400),
        ]
        for method, path, body, status in requests:
            answer = self.server.request(method, path, reader.token, body)
            check(answer.status == status, f"{method} {path}: {answer}, expected {status}")
            no_leaks(reader, answer.json(), f"{method} {path}")
        # Pushes about a row of team 2 that the schema refuses: the rejection names nothing of team 2.
        revision = self.revision_of("events", hidden_event)
        for attributes in ({"team_id": 2, "title": 7, "venue_id": None, "revision": revision},
                           {"team_id": 2, "venue_id": None, "revision": revision},
                           {"team_id": 2, "title": "x", "venue_id": 1, "colour": "red", "revision": revision}):
            result = self.result(reader, {"types": ["events"], "events": {
                "update": [hidden_event], "attributes": {str(hidden_event): attributes}}}, {"events": {hidden_event}})
            check(result["status"] in ("rejected", "conflict"), f"a malformed update of event 2: {result}")

    def not_before_ahead(self, reader):
        """PROTOCOL.md §5: `notBefore` after the newest revision is 409 `revision_ahead`, for every type."""
        for name in TYPES:
            path = f"/v1/snapshot/{name}?notBefore={self.history.head + 50}"
            answer = self.server.get(path, reader.token)
            check(answer.status == 409 and answer.code == "revision_ahead", f"GET {path}: {answer}")

    def claimless_token(self):
        answer = self.server.get("/v1/schema", self.jwt())
        challenge = answer.headers.get("www-authenticate", "")
        check(answer.status == 401 and "teams" in challenge and challenge.startswith('Bearer error="invalid_token"'),
              f"a JWT without the claim teams: {answer.status} WWW-Authenticate {challenge!r}")
        check(answer.code == "unauthorized", f"a JWT without the claim teams: {answer}")

    def live_sync_woken_by_other_team(self, reader):
        """A team-1 reader waiting at the head while team 2's row changes: its answer shows nothing of it."""
        head, answers = self.history.head, {}
        listener = Server(f"http://{self.server.host}:{self.server.port}", self.server.tokens)
        waiting = threading.Thread(target=lambda: answers.setdefault("sync", listener.sync(
            reader.token, {"maxRevision": head, "wait": 3})))
        waiting.start()
        time.sleep(0.3)
        self.commit({"events": {"update": {10: event(2, "TEAM2 event 10 while team 1 waits")}}})
        waiting.join(10)
        listener.close()
        check("sync" in answers, "the live sync did not answer within 10 s")
        answer = answers["sync"]
        check(answer.status == 200, f"the live sync: {answer}")
        no_leaks(reader, answer.json(), "the live sync")
        check(answer.json()["changeSets"] == [], f"LEAK the live sync: {answer}")

    # Through a shared cache (nginx: proxy_cache keyed by the address, auth_request to GET /v1/auth).

    CACHED = ["/v1/changes?after=0&schemaVersion=1", "/v1/changes?after=4&schemaVersion=1",
              "/v1/snapshot/events?notBefore=0", "/v1/snapshot/tickets?limit=2&notBefore=0"]

    def cache_keeps_every_team_for_the_static_token(self):
        for path in self.CACHED:
            for attempt in ("MISS", "HIT"):
                answer = self.cache.get(path, "read")
                check(answer.status == 200, f"GET {path} through the cache: {answer}")
                status = answer.headers.get("x-cache-status")
                check(attempt == "MISS" or status == "HIT", f"GET {path} again through the cache: {status}, not HIT")

    def cache_refuses_kept_answers_of_every_team(self, reader):
        """The addresses the static token's answers are kept under: refused to a reader of some values,
        however the address is spelled."""
        spelled = ["/v1/%63hanges?after=0&schemaVersion=1", "/v1//changes?after=0&schemaVersion=1",
                   "/v1/snapshot/%65vents?notBefore=0", "/v1/snapshot/venues/../events?notBefore=0"]
        for path in self.CACHED + spelled:
            answer = self.cache.get(path, reader.token)
            check(answer.status != 200, f"LEAK GET {path} through the cache as {reader.name}: {answer.status}, "
                                        f"{answer.headers.get('x-cache-status')} {answer.body[:200]!r}")
            if answer.body:
                no_leaks(reader, answer.json() if answer.body.startswith(b"{") else {}, f"GET {path} through the cache")
        shared = self.cache.get("/v1/snapshot/venues?notBefore=0", reader.token)
        check(shared.status == 200, f"GET /v1/snapshot/venues through the cache as {reader.name}: {shared}")

    def cache_shares_a_team_address(self, reader, other=None):
        """`reader`'s own address is kept and answered from the cache, whole and without another team's
        rows; `other` (another team), when given, is refused it, kept or not, with or without the entity tag."""
        for path in self.CACHED:
            named = f"{path}&scopes={reader.named}"
            first = self.cache.get(named, reader.token)
            check(first.status == 200, f"GET {named} through the cache as {reader.name}: {first}")
            no_leaks(reader, first.json(), f"GET {named} through the cache")
            again = self.cache.get(named, reader.token)
            check(again.headers.get("x-cache-status") == "HIT" and again.body == first.body,
                  f"GET {named} again through the cache: {again.headers.get('x-cache-status')}, not a HIT of the same body")
            tag = first.headers.get("etag")
            kept = self.cache.get(named, reader.token, {"If-None-Match": tag})
            check(kept.status == 304, f"GET {named} with its ETag through the cache: {kept.status}, not 304")
            for headers in ({}, {"If-None-Match": tag}) if other else ():
                refused = self.cache.get(named, other.token, headers)
                check(refused.status == 403, f"LEAK GET {named} through the cache as {other.name} {headers}: "
                                             f"{refused.status} {refused.body[:200]!r}")
                no_leaks(other, refused.json() if refused.body.startswith(b"{") else {}, f"GET {named} as {other.name}")

    def health(self):
        answer = self.server.get("/health", None)
        check(answer.status == 200, f"GET /health: {answer}")


def cases(suite, readers):
    a, b, string_one, empty, static, a_named, b_named, empty_named, static_named = readers
    # The static reader first: the server then keeps pages and change sets of every team when the others ask.
    listed = [("load the history through POST /v1/admin/changes", suite.load)]
    for reader in [static, a, b, string_one, empty, a_named, empty_named, static_named]:
        listed += suite.reader_cases(reader)
    listed += [
        ("A: GET /v1/auth", lambda: check(suite.server.get("/v1/auth", a.token).status == 204, "not 204")),
        ("ETags across A, B, [], the static read token", lambda: suite.etags_across_readers([a, b, empty, static])),
        ("static read token: GET /v1/changes public, without scopes", suite.static_log_read_is_public),
        ("GET /v1/seeds: a seed of every team listed to no scoped reader, team 1's to team 1's",
         lambda: suite.seeds([a, b, empty, string_one])),
        ("A pushes an event into team 2: rejected, not granted", lambda: suite.push_create_in_other_team(a)),
        ("A moves its event and ticket to team 2: rejected, not granted", lambda: suite.push_move_own_event_out(a)),
        ("A updates team 2's event at its revision, in team 2: rejected as for a missing row",
         lambda: suite.push_update_other_team_event(a)),
        ("A updates team 2's event at its revision into team 1: conflict as for a missing row",
         lambda: suite.push_take_other_team_event(a)),
        ("A deletes team 2's ticket at its revision: conflict as for a missing row",
         lambda: suite.push_delete_other_team_ticket(a)),
        ("A deletes team 2's event a team-2 ticket references: conflict as for a missing row",
         lambda: suite.push_delete_referenced_other_team_event(a)),
        ("A creates a ticket of team 1 for team 2's event: conflict as for a missing event",
         lambda: suite.push_ticket_to_other_team_event(a)),
        ("A deletes the shared venue only team 2's events use: not applied",
         lambda: suite.push_delete_shared_venue_other_team_uses(a)),
        ("static read token pushes: 403", suite.push_read_token),
        ("A pushes its own rows from revision 0: applied, answer without team 2", lambda: suite.push_own_rows(a)),
        ("A pushes under push ids team 2 used: the replayed results show nothing of team 2",
         lambda: suite.push_under_other_team_ids(a, b)),
        ("after the pushes, every row of the server equals the history (team 2 untouched by A)",
         suite.server_rows_equal_history),
        ("A's failed requests name nothing of team 2", lambda: suite.errors(a)),
        ("A: notBefore past the head is 409 revision_ahead on every type", lambda: suite.not_before_ahead(a)),
        ("a JWT without the teams claim: 401 naming it", suite.claimless_token),
        ("A's live sync woken by a commit of team 2 shows nothing", lambda: suite.live_sync_woken_by_other_team(a)),
    ]
    # After the pushes and the live sync's commit: the pages and the log once more, for both teams.
    for reader in (a, b):
        listed += [(f"after the writes, {name}", function) for name, function in suite.reader_cases(reader)
                   if "snapshot/events" in name or "changes" in name]
    if suite.cache:
        listed += [("through the cache: the static token's answers kept", suite.cache_keeps_every_team_for_the_static_token)]
        listed += [(f"through the cache: {reader.name} refused the kept answers of every team",
                    lambda reader=reader: suite.cache_refuses_kept_answers_of_every_team(reader))
                   for reader in (a, b, string_one, empty)]
        listed += [(f"through the cache: {reader.name}'s address kept, and refused to {other.name}",
                    lambda reader=reader, other=other: suite.cache_shares_a_team_address(reader, other))
                   for reader, other in ((a_named, b), (b_named, a))]
        listed += [(f"through the cache: {empty_named.name}'s address kept (every token may read it)",
                    lambda: suite.cache_shares_a_team_address(empty_named))]
        for reader in (a_named, b_named):
            listed += [(f"through the cache, {name}", function) for name, function in
                       Suite(suite.cache, suite.history, suite.jwt_key).reader_cases(reader)]
    listed += [("the server answers /health", suite.health)]
    return listed


def execute(cases):
    """Runs the cases in order; the first loads the history, and when it fails nothing else can run."""
    failures = 0
    for index, (name, function) in enumerate(cases):
        started = time.monotonic()
        try:
            function()
            problem = None
        except Problems as error:
            problem = str(error)
        except Exception as error:
            problem = f"{type(error).__name__}: {error}"
        print(f"  {'FAIL' if problem else 'ok  '} {name} ({time.monotonic() - started:.2f} s)"
              + (f": {problem}" if problem else ""), flush=True)
        failures += problem is not None
        if problem and index == 0:
            print("scope line: the history could not be loaded, no case ran")
            return 1
    print(f"scope line: {len(cases) - failures} of {len(cases)} cases passed")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", nargs="?")
    parser.add_argument("--write-schema")
    parser.add_argument("--read-token")
    parser.add_argument("--admin-token")
    parser.add_argument("--jwt-key")
    parser.add_argument("--cache", help="a cache in front of the server (nginx, scripts/lib/nginx.sh)")
    options = parser.parse_args()
    if options.write_schema:
        with open(options.write_schema, "w") as file:
            json.dump(SCHEMA, file, indent=1)
        return 0
    if not (options.url and options.read_token and options.admin_token and options.jwt_key):
        parser.error("URL, --read-token, --admin-token and --jwt-key are required")
    history = History()
    server = Server(options.url, {"read": options.read_token, "admin": options.admin_token})
    cache = Server(options.cache, server.tokens) if options.cache else None
    suite = Suite(server, history, jwt_keys.load_key(options.jwt_key), cache)
    a, b, empty = suite.jwt(teams=[1]), suite.jwt(teams=[2]), suite.jwt(teams=[])
    readers = [Reader("A (teams [1])", a, {1}, history),
               Reader("B (teams [2])", b, {2}, history),
               Reader('teams ["1"]', suite.jwt(teams=["1"]), {1}, history),
               Reader("teams []", empty, set(), history),
               Reader("static read token", "read", None, history),
               Reader("A naming team 1 (scopes=1)", a, {1}, history, named="1"),
               Reader("B naming team 2 (scopes=2)", b, {2}, history, named="2"),
               Reader("teams [] naming none (scopes=)", empty, set(), history, named=""),
               Reader("static read token naming team 2 (scopes=2)", "read", {2}, history, named="2")]
    return execute(cases(suite, readers))


if __name__ == "__main__":
    raise SystemExit(main())
