#!/usr/bin/env python3
"""Power-loss simulation for seed-import (scripts/suites/power-loss.sh drives it).

For each cut: the folder is reset from a template, seed-import runs under the powercut library
(powercut.c) and is killed before its N-th file operation; then the power loss is applied to what
it left: every write a file received since its last fsync is taken back, then, by the cut's mode,
none of them is put back (lost), the first few in order are (prefix: a disk that writes in order),
or each 512-byte sector of each is or is not (torn: a disk that reorders and tears writes); the
-shm files, which live in memory, are removed. The database is
then checked: it is absent only where none was there before, it passes integrity_check, and its
rows are exactly the server's rows at the revision it says it is at (never a mixture of two
revisions), as computed from the oldest seed and the server's change sets. Last, seed-import runs
again without the cut and must end equal to the server (compare_tables, done by the shell script).

The server's SQLite store gets the same cuts (`store`): seed-server runs under the library while a
client commits rows one by one through POST /v1/admin/changes; after the cut and the power loss the
store must pass integrity_check, hold every row whose commit was answered (the store syncs each
commit before it answers) at a revision no later than the store's, and a server started on it must
serve and take a commit.

Usage: powerloss.py plan LOG                       the number of operations a run makes
       powerloss.py expect SEED URL TOKEN OUT      the rows at each revision, from SEED on
       powerloss.py cut LOG DIR DATABASE EXPECTED MODE SEED_RANDOM [--had-database] [--sound-only]
       powerloss.py store BIN DIR LIBRARY LOG AT MODE SEED_RANDOM   (AT 0: count the operations)
"""
import json
import os
import random
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request

SECTOR = 512


def records(path):
    """The log's records: (kind, fields, paths, data)."""
    with open(path, "rb") as log:
        blob = log.read()
    at = 0
    while at < len(blob):
        end = blob.index(b"\n", at)
        head = blob[at:end].split()
        at = end + 1
        kind, numbers = head[0].decode(), [int(n) for n in head[1:]]
        if kind == "X":
            yield kind, numbers, [], b""
            return
        if kind == "R":
            old, new = blob[at : at + numbers[0]], blob[at + numbers[0] : at + numbers[0] + numbers[1]]
            at += numbers[0] + numbers[1]
            yield kind, numbers, [old.decode(), new.decode()], b""
            continue
        path = blob[at : at + numbers[-1]].decode()
        at += numbers[-1]
        data = b""
        if kind == "W":
            offset, old_size, length, _ = numbers
            old = max(0, min(length, old_size - offset))
            data = blob[at : at + old + length]
            at += old + length
        elif kind == "T":
            old_size, new_size, _ = numbers
            old = max(0, old_size - new_size)
            data = blob[at : at + old]
            at += old
        yield kind, numbers, [path], data


def pending_writes(log):
    """For each file, the writes and truncations since its last sync, in order; and whether the
    run was cut (rather than finished)."""
    pending, cut = {}, False
    for kind, numbers, paths, data in records(log):
        if kind == "X":
            cut = True
        elif kind in ("W", "T"):
            pending.setdefault(paths[0], []).append((kind, numbers, data))
        elif kind == "S":
            pending.pop(paths[0], None)
        elif kind == "R":
            moved = pending.pop(paths[0], None)
            pending.pop(paths[1], None)
            if moved:
                pending[paths[1]] = moved
        elif kind == "U":
            pending.pop(paths[0], None)
    return pending, cut


def undo(content, operation):
    kind, numbers, data = operation
    if kind == "W":
        offset, old_size, length, _ = numbers
        old = data[: len(data) - length]
        content[offset : offset + len(old)] = old
        del content[old_size:]
    else:
        old_size, new_size, _ = numbers
        if new_size < old_size:
            del content[new_size:]
            content += data
        else:
            del content[old_size:]


def redo(content, operation, mode, rng):
    kind, numbers, data = operation
    if kind == "T":
        size = numbers[1]
        del content[size:]
        content += bytes(max(0, size - len(content)))
        return
    offset, _, length, _ = numbers
    new = data[len(data) - length :]
    if len(content) < offset + length:
        content += bytes(offset + length - len(content))
    if mode != "torn":
        content[offset : offset + length] = new
        return
    for start in range(0, length, SECTOR):  # each sector of the write reached the disk or not
        if rng.random() < 0.5:
            content[offset + start : offset + min(length, start + SECTOR)] = new[start : start + SECTOR]


def power_loss(log, folder, mode, rng):
    """Takes back what a power loss would; returns what it did, and whether the run was cut."""
    pending, cut = pending_writes(log)
    unsynced = kept_whole = 0
    for path, operations in pending.items():
        if not os.path.exists(path):
            continue
        with open(path, "rb") as file:
            content = bytearray(file.read())
        for operation in reversed(operations):
            undo(content, operation)
        # lost: none reached the disk; prefix: the first k did (a disk that writes in order);
        # torn: each sector of each write did or did not (a disk that reorders and tears).
        kept = {"lost": 0, "prefix": rng.randint(0, len(operations))}.get(mode, len(operations))
        for operation in operations[:kept]:
            redo(content, operation, mode, rng)
        unsynced += len(operations)
        kept_whole += kept if mode == "prefix" else 0
        with open(path, "wb") as file:
            file.write(content)
    for name in os.listdir(folder):
        if name.endswith("-shm"):
            os.remove(os.path.join(folder, name))
    what = {"lost": "all taken back", "prefix": f"the first {kept_whole} kept", "torn": "torn at 512-byte sectors"}
    return f"{unsynced} unsynced writes in {len(pending)} files, {what[mode]}", cut


def data_tables(db):
    return [
        name
        for (name,) in db.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' "
            "AND name NOT LIKE 'sqlite_%' ORDER BY name"
        )
    ]


def key_column(db, table):
    return next(row[1] for row in db.execute(f'PRAGMA table_info("{table}")') if row[5] == 1)


def fingerprint(db):
    """The database's rows as {table: {key: revision}}."""
    rows = {}
    for table in data_tables(db):
        key = key_column(db, table)
        rows[table] = {str(k): r for k, r in db.execute(f'SELECT "{key}", "revision" FROM "{table}"')}
    return rows


def expect(seed, url, token, out):
    """Writes the seed's rows and revision, and the server's change sets after it (the keys each
    deletes and writes), from which check() computes the rows at any revision."""
    db = sqlite3.connect(f"file:{seed}?mode=ro", uri=True)
    revision = int(db.execute("SELECT value FROM _seedsync_seed WHERE key = 'revision'").fetchone()[0])
    history = {"revision": revision, "rows": fingerprint(db), "changeSets": []}
    db.close()
    while True:
        body = json.dumps({"maxRevision": revision, "limit": 1000}).encode()
        request = urllib.request.Request(
            url + "/v1/sync", body, {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            page = json.load(answer)
        for change_set in page["changeSets"]:
            revision = change_set["revision"]
            changes = [
                [table, [str(k) for k in change_set[table]["delete"]],
                 [str(k) for k in change_set[table]["create"] + change_set[table]["update"]]]
                for table in change_set["types"]
            ]
            history["changeSets"].append([revision, changes])
        if not page["hasMore"]:
            break
    with open(out, "w") as file:
        json.dump(history, file)


def rows_at(history, revision):
    """The server's rows ({table: {key: revision}}) at `revision`, or None when the history does not
    reach it."""
    if revision < history["revision"]:
        return None
    rows = {table: dict(keys) for table, keys in history["rows"].items()}
    reached = history["revision"]
    for change_revision, changes in history["changeSets"]:
        if change_revision > revision:
            break
        for table, deleted, written in changes:
            table_rows = rows.setdefault(table, {})
            for key in deleted:
                table_rows.pop(key, None)
            for key in written:
                table_rows[key] = change_revision
        reached = change_revision
    return rows if reached == revision else None


def check(database, expected_path, had_database, sound_only=False):
    """Fails (exit 1, saying why) unless the database is absent where allowed, sound, and exactly
    the server's rows at its revision. Prints where it stands."""
    if not os.path.exists(database):
        if had_database:
            sys.exit(f"FAIL: {database} is gone after the power loss; there was one before the run")
        return "no database"
    try:
        db = sqlite3.connect(database)
        result = db.execute("PRAGMA integrity_check").fetchall()
        if result != [("ok",)]:
            sys.exit(f"FAIL: {database} fails integrity_check after the power loss: {result[:5]}")
        revision = int(db.execute("SELECT value FROM _seedsync_seed WHERE key = 'revision'").fetchone()[0])
        rows = fingerprint(db)
        db.close()
    except sqlite3.DatabaseError as error:
        sys.exit(f"FAIL: {database} cannot be read as a seed database after the power loss: {error}")
    if sound_only:
        db = sqlite3.connect(database)
        version = db.execute("PRAGMA user_version").fetchone()[0]
        db.close()
        return f"revision {revision} in version {version}, sound"
    with open(expected_path) as file:
        wanted = rows_at(json.load(file), revision)
    if wanted is None:
        sys.exit(f"FAIL: {database} says revision {revision}, which is not one the server had from the seed on")
    for table in sorted(set(wanted) | set(rows)):
        here, there = rows.get(table, {}), wanted.get(table, {})
        if here != there:
            extra = sorted(set(here.items()) - set(there.items()))[:3]
            missing = sorted(set(there.items()) - set(here.items()))[:3]
            sys.exit(
                f"FAIL: {database} at revision {revision}: table {table} is not the server's at that revision "
                f"(a mixture): rows here not there {extra}, there not here {missing}"
            )
    return f"revision {revision}"


STORE_COMMITS = 40
FIRST_KEY = 1_000_000


def start_server(bin, folder, environment):
    """seed-server serving the store in `folder`; returns (process, its URL or None when it ended
    before it listened)."""
    server = subprocess.Popen(
        [f"{bin}/seed-server", "serve", "--database", f"{folder}/server.sqlite", "--host", "127.0.0.1",
         "--port", "0", "--token-file", f"{folder}/../token", "--admin-token-file", f"{folder}/../admin-token"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=environment, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = server.stdout.readline()
        if not line:
            return server, None
        if line.startswith("listening on "):
            return server, line[len("listening on "):].strip()
    server.kill()
    sys.exit("FAIL: seed-server did not listen within 30 s")


def commit(url, token, key):
    """Commits one location; its revision, or None when the server did not answer."""
    change = {"types": ["locations"], "locations": {"create": [key], "attributes": {
        str(key): {"name": f"power {key}", "city": "Cut", "latitude": 1.5, "longitude": 2.5}}}}
    request = urllib.request.Request(
        url + "/v1/admin/changes", json.dumps(change).encode(),
        {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.load(answer)["revision"]
    except (urllib.error.URLError, ConnectionError, OSError):
        return None


def store(bin, folder, library, log, at, mode, seed):
    """One cut of the server's store (see the module's text); prints where it landed."""
    admin = open(f"{folder}/../admin-token").read().strip()
    environment = dict(os.environ, LD_PRELOAD=library, POWERCUT_DIR=folder, POWERCUT_LOG=log, POWERCUT_AT=str(at))
    server, url = start_server(bin, folder, environment)
    answered = {}
    if url:
        for key in range(FIRST_KEY, FIRST_KEY + STORE_COMMITS):
            revision = commit(url, admin, key)
            if revision is None:
                break
            answered[key] = revision
    if server.poll() is None:
        server.terminate()  # a graceful end: its checkpoint and close get cut too
    server.wait(timeout=60)
    if at == 0:
        return
    loss, cut = power_loss(log, folder, mode, random.Random(seed))
    database = f"{folder}/server.sqlite"
    try:
        db = sqlite3.connect(database)
        result = db.execute("PRAGMA integrity_check").fetchall()
        revision = db.execute("SELECT revision FROM _seedsync_state").fetchone()[0]
        kept = {k: r for k, r in db.execute("SELECT id, revision FROM locations WHERE id >= ?", (FIRST_KEY,))}
        db.close()
    except sqlite3.DatabaseError as error:
        sys.exit(f"FAIL: the store {database} cannot be read after the power loss: {error}")
    if result != [("ok",)]:
        sys.exit(f"FAIL: the store {database} fails integrity_check after the power loss: {result[:5]}")
    lost = sorted(k for k in answered if kept.get(k) != answered[k])
    if lost:
        sys.exit(f"FAIL: commits answered before the cut are gone after the power loss: keys {lost[:5]}")
    if any(r > revision for r in kept.values()):
        sys.exit(f"FAIL: rows at revisions after the store's own ({revision}): a mixture")
    server, url = start_server(bin, folder, dict(os.environ))
    try:
        if not url or commit(url, admin, FIRST_KEY + STORE_COMMITS + 1) is None:
            sys.exit("FAIL: a server started on the store after the power loss does not take a commit")
    finally:
        server.terminate()
        server.wait(timeout=60)
    print(f"{'cut' if cut else 'finished'}; {loss}; {len(answered)} commits answered, all kept; "
          f"store at revision {revision}")


def main():
    command = sys.argv[1]
    if command == "plan":
        print(sum(1 for record in records(sys.argv[2]) if record[0] != "X"))
    elif command == "expect":
        expect(*sys.argv[2:6])
    elif command == "store":
        bin, folder, library, log, at, mode, seed = sys.argv[2:9]
        store(bin, folder, library, log, int(at), mode, int(seed))
    elif command == "cut":
        log, folder, database, expected, mode, seed = sys.argv[2:8]
        rng = random.Random(int(seed))
        loss, cut = power_loss(log, folder, mode, rng)
        where = check(database, expected, "--had-database" in sys.argv, "--sound-only" in sys.argv)
        print(f"{'cut' if cut else 'finished'}; {loss}; {where}")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
