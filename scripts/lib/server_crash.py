#!/usr/bin/env python3
"""Crash campaign of seed-server (scripts/suites/crash-test.sh --target server): each iteration starts the
server on a store, lets a pushing client and an admin writer work against it, kills the server with
SIGKILL at a random moment, restarts it and checks what a client was told:

- every push the server answered gets the same answer when pushed again (its id is remembered), and
  every push whose answer was lost gets one now; a row a push created exists exactly once;
- every admin commit the server acknowledged (answered with a revision) is there, exactly once;
- no row was written twice, and the revisions it serves follow one another without a gap;
- on SQLite, the database file passes `PRAGMA quick_check` before the restart.

Usage: server_crash.py BIN DATABASE WORK ITERATIONS
Prints one line per iteration and a summary with the counts; exits 1 at the first failure.
"""

import random
import subprocess
import sys
import threading
import time

import seed_server

TOKEN = "crash-test-admin-token-0123456789abcdef"


def call(url, method, path, body=None, timeout=20):
    return seed_server.call(url, method, path, TOKEN, body, timeout)


def location(name):
    return {"name": name, "city": "Crash", "latitude": 1.5, "longitude": 2.5}


def push_body(revision, push_id, name):
    return {"maxRevision": revision, "limit": 1, "changeSets": [{
        "id": push_id, "types": ["locations"],
        "locations": {"create": [-1], "update": [], "delete": [], "attributes": {"-1": location(name)}}}]}


class Workers:
    """A pushing client and an admin writer, each one request at a time, recording what was answered."""

    def __init__(self, url, iteration):
        self.url, self.iteration = url, iteration
        self.pushes = {}       # id -> answered result, or None when the answer was lost
        self.commits = {}      # name -> acknowledged revision, or None when lost
        self.running = True

    def run_pushes(self):
        number = 0
        while self.running:
            push_id = f"crash-{self.iteration}-{number}"
            try:
                revision = call(self.url, "GET", "/v1/schema", timeout=10)[1]["revision"]
                self.pushes[push_id] = None
                status, answer = call(self.url, "POST", "/v1/sync", push_body(revision, push_id, push_id), timeout=10)
                if status == 200:
                    self.pushes[push_id] = answer["results"][0]
            except Exception:
                return
            number += 1

    def run_commits(self):
        number = 0
        while self.running:
            name = f"admin-{self.iteration}-{number}"
            self.commits[name] = None
            # Keys below 2^61, counting down: the rows pushes create take keys above the largest.
            key = (1 << 61) - self.iteration * 100_000 - number
            body = {"types": ["locations"], "locations": {"create": [key], "update": [], "delete": [],
                                                          "attributes": {str(key): location(name)}}}
            try:
                status, answer = call(self.url, "POST", "/v1/admin/changes", body, timeout=10)
                if status == 200:
                    self.commits[name] = answer["revision"]
            except Exception:
                return
            number += 1


def names_in(url):
    names, after = {}, None
    while True:
        path = "/v1/snapshot/locations?limit=5000" + ("" if after is None else f"&after={after}")
        status, page = call(url, "GET", path)
        assert status == 200, f"snapshot answered {status}"
        column = page["columns"].index("name")
        for row in page["rows"]:
            names[row[column]] = names.get(row[column], 0) + 1
        if page["next"] is None:
            return names
        after = page["next"]


def check_history(url):
    revision = call(url, "GET", "/v1/schema")[1]["revision"]
    status, answer = call(url, "POST", "/v1/sync", {"maxRevision": max(revision - 200, 0), "limit": 200})
    if status == 410:
        return None
    assert status == 200, f"sync answered {status}"
    revisions = [change_set["revision"] for change_set in answer["changeSets"]]
    if revisions and revisions != list(range(revisions[0], revisions[0] + len(revisions))):
        return f"the served revisions skip: {revisions[:5]}…"
    return None


def check(server, workers):
    problems = []
    names = names_in(server.url)
    for push_id, answered in workers.pushes.items():
        revision = call(server.url, "GET", "/v1/schema")[1]["revision"]
        status, answer = call(server.url, "POST", "/v1/sync", push_body(revision, push_id, push_id))
        if status != 200:
            problems.append(f"pushing {push_id} again answered {status}")
            continue
        again = answer["results"][0]
        if answered is not None and again != answered:
            problems.append(f"{push_id} was answered {answered}, after the restart {again}")
    names = names_in(server.url)
    for push_id in workers.pushes:
        if names.get(push_id, 0) != 1:
            problems.append(f"the row pushed as {push_id} is there {names.get(push_id, 0)} times")
    for name, revision in workers.commits.items():
        count = names.get(name, 0)
        if revision is not None and count != 1:
            problems.append(f"the acknowledged commit {name} (revision {revision}) is there {count} times")
        elif revision is None and count > 1:
            problems.append(f"the commit {name} whose answer was lost is there {count} times")
    duplicated = [name for name, count in names.items() if count > 1 and name.startswith(("crash-", "admin-"))]
    if duplicated:
        problems.append(f"rows written twice: {duplicated[:5]}")
    history = check_history(server.url)
    if history:
        problems.append(history)
    return problems


def main():
    bin_dir, database, work, iterations = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    server = seed_server.SeedServer(bin_dir, database, work, environment={"SEED_SERVER_ADMIN_TOKENS": TOKEN})
    totals = {"kills": 0, "answered pushes": 0, "lost push answers": 0, "acknowledged commits": 0,
              "lost commit answers": 0}
    try:
        for iteration in range(iterations):
            server.start()
            workers = Workers(server.url, iteration)
            threads = [threading.Thread(target=workers.run_pushes), threading.Thread(target=workers.run_commits)]
            for thread in threads:
                thread.start()
            time.sleep(random.uniform(0.05, 0.8))
            server.kill()
            workers.running = False
            for thread in threads:
                thread.join()
            totals["kills"] += 1
            if not database.startswith("postgres"):
                result = subprocess.run(["sqlite3", database, "PRAGMA quick_check"], capture_output=True, text=True)
                if result.stdout.strip() != "ok":
                    print(f"iteration {iteration}: quick_check after SIGKILL: {result.stdout.strip()} {result.stderr}")
                    return 1
            server.start()
            problems = check(server, workers)
            server.stop()
            answered = sum(1 for result in workers.pushes.values() if result is not None)
            acknowledged = sum(1 for revision in workers.commits.values() if revision is not None)
            totals["answered pushes"] += answered
            totals["lost push answers"] += len(workers.pushes) - answered
            totals["acknowledged commits"] += acknowledged
            totals["lost commit answers"] += len(workers.commits) - acknowledged
            print(f"iteration {iteration}: killed after {answered} answered pushes and {acknowledged} acknowledged "
                  f"commits; {'; '.join(problems) if problems else 'all there once, pushes answered the same'}",
                  flush=True)
            if problems:
                return 1
    finally:
        server.stop()
    print("server crash test passed: " + ", ".join(f"{value} {name}" for name, value in totals.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
