#!/usr/bin/env python3
"""The teams step of scripts/pipeline.sh: a dataset split by team (scope_line.py's `clubs` schema and
history), served to apps of different teams.

Usage: teams_demo.py commit URL ADMIN_TOKEN FIRST LAST  commits scope_line.COMMITS[FIRST:LAST] (admin endpoint)
       teams_demo.py token KEY_PEM TEAM               prints a JWT (ES256, kid k1) granting TEAM for 15 minutes
       teams_demo.py check APP_DB SERVER_DB TEAM      the app holds the server's rows of TEAM and the shared
                                                      rows, row by row, and nothing else; prints a line per type
"""
import json
import os
import sqlite3
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jwt_keys  # noqa: E402
import scope_line  # noqa: E402


def commit(url, token, first, last):
    for change in scope_line.COMMITS[int(first):int(last)]:
        request = urllib.request.Request(
            url + "/v1/admin/changes", data=json.dumps(scope_line.admin_body(change)).encode(), method="POST",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            if answer.status != 200:
                raise SystemExit(f"admin commit answered {answer.status}")


def token(key_path, team):
    claims = {"exp": int(time.time()) + 900, "role": "read", "teams": [int(team)]}
    print(jwt_keys.sign(jwt_keys.load_key(key_path), {"alg": "ES256", "kid": "k1"}, claims))


def rows(path, type_name, team):
    """The rows of `type_name` in the file at `path` a reader of `team` reads, in key order."""
    scoped_by = scope_line.SCOPED_BY[type_name]
    columns = ", ".join(["id"] + scope_line.FIELDS[type_name])
    where = f" WHERE {scoped_by} = {int(team)}" if scoped_by and team is not None else ""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute(f"SELECT {columns} FROM {type_name}{where} ORDER BY id").fetchall()


def check(app, server, team):
    failed = False
    for type_name in scope_line.TYPES:
        held, expected = rows(app, type_name, None), rows(server, type_name, team)
        if held != expected:
            failed = True
            print(f"  {type_name}: the app of team {team} holds {len(held)} rows, which differ from the server's "
                  f"{len(expected)} rows for it", file=sys.stderr)
        else:
            print(f"  {type_name:8} {len(held):4} rows, equal to the server's for team {team}")
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    commands = {"commit": commit, "token": token, "check": check}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        raise SystemExit(__doc__)
    commands[sys.argv[1]](*sys.argv[2:])
