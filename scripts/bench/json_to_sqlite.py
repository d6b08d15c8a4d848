#!/usr/bin/env python3
"""The Python baseline of scripts/bench/bench.sh: loads JSON exports into a fresh SQLite file the plain way.

Usage: json_to_sqlite.py DATABASE TABLES_SQL INDEXES_SQL TABLE=FILE.json...

Creates the tables of TABLES_SQL; then, in one transaction, for each TABLE=FILE in the order given:
json.load of the whole file (an array of objects, as `sqlite3 -json` writes it) and one executemany
INSERT of its rows; commits; then creates the indexes of INDEXES_SQL (after the rows, the cheaper order).
"""
import json
import sqlite3
import sys


def main(argv):
    if len(argv) < 4 or any("=" not in item for item in argv[3:]):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 64
    database, tables_sql, indexes_sql, *loads = argv
    # isolation_level=None: no implicit transactions; BEGIN and COMMIT below are the only ones.
    connection = sqlite3.connect(database, isolation_level=None)
    with open(tables_sql, encoding="utf-8") as file:
        connection.executescript(file.read())
    connection.execute("BEGIN")
    for item in loads:
        table, path = item.split("=", 1)
        with open(path, encoding="utf-8") as file:
            rows = json.load(file)
        if not rows:
            continue
        columns = list(rows[0])
        names = ", ".join('"' + column.replace('"', '""') + '"' for column in columns)
        placeholders = ", ".join("?" for _ in columns)
        connection.executemany(
            f'INSERT INTO "{table}" ({names}) VALUES ({placeholders})',
            (tuple(row[column] for column in columns) for row in rows),
        )
        del rows
    connection.execute("COMMIT")
    with open(indexes_sql, encoding="utf-8") as file:
        connection.executescript(file.read())
    connection.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
