"""Row-by-row comparison of an imported app database (SQLite) with the tables of a PostgreSQL store.

Usage: python3 compare_postgres.py APP_DB  (psql's usual PG* environment names the database)

Every data table of APP_DB must hold exactly the rows of the served table of the same name in
PostgreSQL (schema public), with each row's revision from the store's bookkeeping: same keys, and
values equal by kind (numbers by value, booleans against 0/1, timestamps as instants, bytea as
bytes). Prints a line per table; exits 1 when any differs. Independent of SeedSync's own code.
"""
import datetime
import json
import sqlite3
import subprocess
import sys


def normalize(value):
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, bytes):
        return ("bytes", value)
    if isinstance(value, str):
        if value.startswith("\\x"):
            return ("bytes", bytes.fromhex(value[2:]))
        try:
            if len(value) >= 19 and value[4] == "-" and value[10] in "T ":
                return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(datetime.timezone.utc)
        except ValueError:
            pass
    return value


def main(app_path):
    app = sqlite3.connect(app_path)
    tables = [row[0] for row in app.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' "
        "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    if not tables:
        print(f"no tables in {app_path}", file=sys.stderr)
        return 1
    status = 0
    for table in tables:
        columns = [row[1] for row in app.execute(f"PRAGMA table_info('{table}')") if row[1] != "revision"]
        key = columns[0]
        listed = ", ".join(f't."{column}"' for column in columns)
        sql = (f'SELECT coalesce(json_agg(json_build_array({listed}, r.revision) ORDER BY t."{key}"), \'[]\') '
               f'FROM public."{table}" t JOIN seedsync."_rows_{table}" r ON r.key = t."{key}"')
        server = json.loads(subprocess.check_output(["psql", "-X", "-At", "-c", sql], env=None))
        local = app.execute(
            f'SELECT {", ".join(chr(34) + c + chr(34) for c in columns)}, "revision" FROM "{table}" ORDER BY "{key}"'
        ).fetchall()
        server_rows = {str(row[0]): [normalize(v) for v in row] for row in server}
        local_rows = {str(row[0]): [normalize(v) for v in row] for row in local}
        only_local = sum(1 for k, v in local_rows.items() if server_rows.get(k) != v)
        only_server = sum(1 for k, v in server_rows.items() if local_rows.get(k) != v)
        if only_local == 0 and only_server == 0 and len(local) == len(server):
            print(f"  {table}: {len(local)} rows, equal to the server's")
        else:
            print(f"  {table}: DIFFERS: {len(local)} rows here, {len(server)} on the server; "
                  f"{only_local} only here, {only_server} only on the server")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
