#!/usr/bin/env python3
"""The cases of scripts/bench/bench.sh (which installs the tools, builds the commands and runs this).

Each case measures SeedSync and a plain baseline on identical data; the cases, their targets and the
options are described at the top of bench.sh. Every measured command runs --repeat times under
/usr/bin/time -f '%e %M' with its output in OUT/runs/; the median wall time and median peak resident
memory are reported, and ratios are taken of medians. Prints an aligned table on stdout, progress on
stderr, and writes every number to OUT/bench.json (write_json.py). Exits non-zero only when something
fails to run, not when a target is missed.

Usage: bench.py --bin DIR [--events N] [--locations N] [--repeat K] [--changes N] [--out DIR] [--only CASES]
"""
import argparse
import gzip
import json
import os
import platform
import re
import secrets
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import write_json  # noqa: E402  (beside this file)

USAGE = (
    "usage: scripts/bench/bench.sh [--events N] [--locations N] [--repeat K] [--changes N] [--out DIR] [--bin DIR]"
    " [--only CASES] [--teams N] [--team-events N] [--team-changes N]"
)

# The growth case: its small dataset, and the change sets synced at both sizes (same --seed).
GROWTH_EVENTS = 10000
GROWTH_LOCATIONS = 1000
GROWTH_CHANGE_SETS = 400
MUTATE_SEED = 1
# The pinned-seed case: change sets between the seed and the server.
PINNED_CHANGE_SETS = 50000
# The scale case: change sets after each size's data, and requests timed for each figure.
SCALE_CHANGE_SETS = 100
SCALE_REQUESTS = 200


class BenchError(Exception):
    """A step that failed to run: the benchmark stops, saying which."""


def step(text):
    print(f"==> {text}", file=sys.stderr, flush=True)


def say(text):
    print(f"    {text}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------
# Numbers


def ratio(a, b):
    """a / b to 2 decimals, "n/a" when b is 0."""
    return "n/a" if float(b) == 0 else f"{float(a) / float(b):.2f}"


def per_second(count, seconds):
    return "n/a" if float(seconds) == 0 else f"{float(count) / float(seconds):.0f}"


def verdict(value, op, target):
    if value == "n/a":
        return "n/a"
    met = float(value) <= float(target) if op == "<=" else float(value) >= float(target)
    return "met" if met else "missed"


def median(values):
    values = [float(v) for v in values]
    if not values:
        raise BenchError("no value to take the median of")
    return f"{statistics.median(values):.3f}"


def mb(size):
    return f"{size / 1048576:.1f}"


def json_field(path, field):
    """A field of the JSON object in PATH (a dotted path); A+B+C sums fields."""
    with open(path, encoding="utf-8") as file:
        report = json.load(file)

    def get(dotted):
        value = report
        for key in dotted.split("."):
            value = value[key]
        return value

    return sum(get(part) for part in field.split("+")) if "+" in field else get(field)


# ---------------------------------------------------------------------------------------------------
# Databases


def query(database, sql, *parameters):
    """The rows of SQL in DATABASE (read-only work: the baselines' writes go through the sqlite3 shell)."""
    connection = sqlite3.connect(database)
    try:
        return connection.execute(sql, parameters).fetchall()
    finally:
        connection.close()


def scalar(database, sql, *parameters):
    return query(database, sql, *parameters)[0][0]


def remove_db(path):
    """A database and the files SQLite and seed-import keep beside it."""
    for suffix in ("", "-wal", "-shm", "-journal", ".lock"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


def copy_db(source, destination):
    """A closed database, with its -wal when it has one, over a removed destination."""
    remove_db(destination)
    shutil.copyfile(source, destination)
    if os.path.exists(source + "-wal"):
        shutil.copyfile(source + "-wal", destination + "-wal")


def quote(name):
    return '"' + name.replace('"', '""') + '"'


def quoted_columns(database, table):
    """TABLE's columns in DATABASE, quoted, comma-separated, in table order."""
    return ", ".join(quote(row[1]) for row in query(database, f"PRAGMA table_info({quote(table)})"))


def data_tables(database):
    """The data tables in creation order (locations first): all but _seedsync_* and sqlite_*."""
    return [
        row[0]
        for row in query(
            database,
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' "
            "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid",
        )
    ]


def unscoped(schema):
    """SCHEMA without its scope: the same types, every one shared."""
    single = {**schema, "types": [{name: value for name, value in entry.items() if name != "scopedBy"}
                                  for entry in schema["types"]]}
    del single["scope"]
    return single


def sqlite3_shell(*arguments):
    subprocess.run(["sqlite3", "-bail", *arguments], check=True, stdout=subprocess.DEVNULL)


# ---------------------------------------------------------------------------------------------------
# The benchmark


class Bench:
    def __init__(self, options):
        self.options = options
        self.bin = options.bin
        self.out = options.out
        self.repeat = options.repeat
        self.python = sys.executable
        self.work = None
        self.token = None
        self.server = None
        self.server_url = None
        self.tables = []
        self.revision = None
        self.change_sets = 0
        self.results = []
        self.facts = []
        self.notes = []

    def path(self, *parts):
        return os.path.join(self.out, *parts)

    def wants(self, case):
        return case in self.options.only

    # Records ---------------------------------------------------------------------------------------

    def measure(self, case, name, run, command):
        """Runs COMMAND once under /usr/bin/time, its stdout, stderr and time in OUT/runs/NAME.RUN.*,
        and appends a line to runs.tsv: wall seconds from a nanosecond clock around the run (%e has 10 ms
        steps, too coarse for small runs), time's %e, and %M, the peak resident memory in KiB of the
        process (or of the largest process it waited for, for `sh -c`). A failing command stops the
        benchmark."""
        log = self.path("runs", f"{name}.{run}")
        started = time.monotonic_ns()
        with open(log + ".out", "wb") as out, open(log + ".err", "wb") as err:
            code = subprocess.run(
                ["/usr/bin/time", "-f", "%e %M", "-o", log + ".time", *command], stdout=out, stderr=err
            ).returncode
        wall = (time.monotonic_ns() - started) / 1e9
        if code != 0:
            for file in (log + ".err", log + ".time"):
                if os.path.exists(file):
                    with open(file, encoding="utf-8", errors="replace") as lines:
                        print("".join(lines.readlines()[-20:]), file=sys.stderr)
            raise BenchError(f"{name} (run {run}) failed: {' '.join(command)}")
        with open(log + ".time", encoding="utf-8") as file:
            elapsed, rss = file.read().split()[-2:]
        with open(self.path("runs.tsv"), "a", encoding="utf-8") as file:
            file.write("\t".join([str(case), name, str(run), f"{wall:.3f}", elapsed, rss, log + ".out"]) + "\n")
        say(f"{name} run {run}: {wall:.3f} s, {int(rss) // 1024} MB peak")

    def runs(self, name):
        with open(self.path("runs.tsv"), encoding="utf-8") as file:
            return [line.rstrip("\n").split("\t") for line in file if line.split("\t")[1] == name]

    def median_wall(self, name):
        return median(run[3] for run in self.runs(name))

    def median_mb(self, name):
        return f"{float(median(int(run[5]) / 1024 for run in self.runs(name))):.1f}"

    def report_median(self, name, field):
        """The median of FIELD over the --json reports of NAME's runs."""
        return median(json_field(self.path("runs", f"{name}.{run}.out"), field) for run in self.run_numbers())

    def run_numbers(self):
        return range(1, self.repeat + 1)

    def result(self, case, name, label, wall="", peak="", measure="", value="", op="", target=""):
        """One row of the table and of bench.json's results; NAME is the contender in runs.tsv (empty
        for rows that are not runs). With OP and TARGET the value is checked against the target."""
        outcome = verdict(value, op, target) if op else ""
        self.results.append([case, name, label, wall, peak, measure, str(value), op, str(target), outcome])

    def contender(self, case, name, label, *rest):
        """A result row with NAME's median wall and MB."""
        self.result(case, name, label, self.median_wall(name), self.median_mb(name), *rest)

    def fact(self, section, key, value):
        self.facts.append([section, key, str(value)])

    def note(self, text):
        self.notes.append(text)

    # Servers ---------------------------------------------------------------------------------------

    def new_token(self, name):
        path = os.path.join(self.work, name)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(secrets.token_hex(32))
        return path

    def serve(self, database, admin_token=None, extra=()):
        """(Re)starts seed-server on DATABASE, every snapshot page read from the store (--snapshot-max-age
        0), as for a build's first run: repeated runs of a case would otherwise get the pages the server
        kept from the run before (load.sh measures those)."""
        self.stop_server()
        command = [
            f"{self.bin}/seed-server", "serve", "--database", database, "--host", "127.0.0.1", "--port", "0",
            "--token-file", self.token, "--snapshot-max-age", "0",
        ]
        if admin_token:
            command += ["--admin-token-file", admin_token]
        command += list(extra)
        out_path, err_path = os.path.join(self.work, "server.out"), os.path.join(self.work, "server.err")
        with open(out_path, "w") as out, open(err_path, "w") as err:
            self.server = subprocess.Popen(command, stdout=out, stderr=err)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with open(out_path, encoding="utf-8") as file:
                match = re.search(r"^listening on (\S+)", file.read(), re.MULTILINE)
            if match:
                self.server_url = match.group(1)
                say(f"serving {database} at {self.server_url} (pid {self.server.pid})")
                return
            if self.server.poll() is not None:
                break
            time.sleep(0.05)
        with open(err_path, encoding="utf-8", errors="replace") as file:
            print(file.read()[-2000:], file=sys.stderr)
        raise BenchError(f"seed-server did not start on {database}")

    def stop_server(self):
        if self.server and self.server.poll() is None:
            self.server.terminate()
            self.server.wait()
        self.server = None

    def seed_import(self, seed, database):
        """seed-import --once --json with the benchmark's token and server."""
        return [
            f"{self.bin}/seed-import", "--seed", seed, "--database", database, "--server", self.server_url,
            "--token-file", self.token, "--once", "--json",
        ]

    def seed_build(self, output, *flags):
        return [
            f"{self.bin}/seed-build", "--server", self.server_url, "--token-file", self.token, "--out", output,
            *flags,
        ]

    def tool(self, *arguments, stdout=sys.stderr):
        """Runs one of the commands, untimed, its output on stderr (progress) unless STDOUT says."""
        subprocess.run([f"{self.bin}/{arguments[0]}", *arguments[1:]], check=True, stdout=stdout)

    def mutate(self, database, change_sets):
        self.tool("seed-server", "mutate", "--database", database, "--changes", str(change_sets),
                  "--seed", str(MUTATE_SEED))

    def same_counts(self, database):
        """Fails unless every data table of DATABASE has as many rows as in the seed."""
        for table in self.tables:
            expected = scalar(self.path("seed.sqlite"), f"SELECT count(*) FROM {quote(table)}")
            actual = scalar(database, f"SELECT count(*) FROM {quote(table)}")
            if expected != actual:
                raise BenchError(f"{database}: {table} has {actual} rows, the seed {expected}")

    # The sqlite3 baseline of cases 3 and 4 --------------------------------------------------------

    def stage_changes(self, server, installed, folder):
        """SQLite itself bringing INSTALLED to SERVER's rows, the least work that does it. Writes (untimed)
        FOLDER/rows.sqlite, every row of SERVER's data tables with a revision after INSTALLED's, in key
        order, FOLDER/deleted.sqlite, the keys INSTALLED has and SERVER does not, and FOLDER/apply.sql,
        which applies them with seed-import's settings (WAL, synchronous NORMAL, a 32 MiB cache, foreign
        keys on) in one transaction: one upsert per table (locations first), then the deletes; closing
        checkpoints, as seed-import's does. Each row is written once, set-based: no network, no JSON, no
        checks but SQLite's own."""
        revision = scalar(installed, "SELECT value FROM _seedsync_seed WHERE key = 'revision'")
        rows, deleted = os.path.join(folder, "rows.sqlite"), os.path.join(folder, "deleted.sqlite")
        remove_db(rows)
        remove_db(deleted)
        apply = [
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -32768;",
            f"PRAGMA foreign_keys = ON; ATTACH '{rows}' AS rows; ATTACH '{deleted}' AS deleted;",
            "BEGIN;",
        ]
        deletes = []
        for table in self.tables:
            info = query(installed, f"PRAGMA table_info({quote(table)})")
            columns = ", ".join(quote(row[1]) for row in info)
            key = next(quote(row[1]) for row in info if row[5] == 1)
            assignments = ", ".join(f"{quote(row[1])} = excluded.{quote(row[1])}" for row in info if row[5] == 0)
            sqlite3_shell(rows, f"ATTACH '{server}' AS server; CREATE TABLE {quote(table)} AS SELECT {columns} "
                          f"FROM server.{quote(table)} WHERE revision > {revision} ORDER BY {key}")
            sqlite3_shell(deleted, f"ATTACH '{server}' AS server; ATTACH '{installed}' AS installed; "
                          f"CREATE TABLE {quote(table)} AS SELECT {key} FROM installed.{quote(table)} "
                          f"EXCEPT SELECT {key} FROM server.{quote(table)} ORDER BY 1")
            # A table of keys alone has nothing to update.
            conflict = f"DO UPDATE SET {assignments}" if assignments else "DO NOTHING"
            apply.append(f"INSERT INTO main.{quote(table)} ({columns}) SELECT {columns} FROM rows.{quote(table)} "
                         f"WHERE true ON CONFLICT ({key}) {conflict};")
            deleted_keys = f"SELECT {key} FROM deleted.{quote(table)}"
            deletes.insert(0, f"DELETE FROM main.{quote(table)} WHERE {key} IN ({deleted_keys});")
        with open(os.path.join(folder, "apply.sql"), "w", encoding="utf-8") as file:
            file.write("\n".join(apply + deletes + ["COMMIT;"]) + "\n")

    def staged_rows(self, folder):
        """The rows FOLDER/apply.sql writes or deletes."""
        return sum(
            scalar(os.path.join(folder, part), f"SELECT count(*) FROM {quote(table)}")
            for table in self.tables
            for part in ("rows.sqlite", "deleted.sqlite")
        )

    def sqlite3_apply_runs(self, case, name, installed, folder):
        """Times sqlite3 running FOLDER/apply.sql on a copy of INSTALLED, repeat times, and fails unless its
        data tables end as seed-import's did in FOLDER/app.sqlite."""
        target, app = os.path.join(folder, "sqlite3.sqlite"), os.path.join(folder, "app.sqlite")
        for run in self.run_numbers():
            copy_db(installed, target)
            self.measure(case, name, run, ["sqlite3", "-bail", target, f".read '{folder}/apply.sql'"])
        for table in self.tables:
            if self.differing(target, app, quote(table)) != 0:
                raise BenchError(f"{name}: {table} differs from seed-import's in {app}")

    @staticmethod
    def differing(database, other, table):
        connection = sqlite3.connect(database)
        try:
            connection.execute("ATTACH ? AS app", (other,))
            return connection.execute(
                f"SELECT (SELECT count(*) FROM (SELECT * FROM main.{table} EXCEPT SELECT * FROM app.{table})) "
                f"+ (SELECT count(*) FROM (SELECT * FROM app.{table} EXCEPT SELECT * FROM main.{table}))"
            ).fetchone()[0]
        finally:
            connection.close()

    def mutated_copy(self, folder):
        """FOLDER/server.sqlite, a copy of the server database with about --changes row changes after the
        seed's revision (cases 3 and 8). mutate writes change sets of about 2.5 row changes each (creates,
        updates, deletes): ceil(changes / 2.5)."""
        os.makedirs(folder, exist_ok=True)
        copy_db(self.path("server.sqlite"), os.path.join(folder, "server.sqlite"))
        self.change_sets = (self.options.changes * 2 + 4) // 5
        say(f"mutate: {self.change_sets} change sets")
        self.mutate(os.path.join(folder, "server.sqlite"), self.change_sets)

    # Set-up ----------------------------------------------------------------------------------------

    def prepare(self):
        """Everything this benchmark makes in OUT, removed first (anything else in OUT is left alone), the
        machine's facts, the server database, the reference seed and what the cases share."""
        os.makedirs(self.out, exist_ok=True)
        for name in ("data", "runs", "build", "install", "installed", "incremental", "growth", "migration",
                     "pinned", "scale", "editing", "baseline", "teams", "published"):
            shutil.rmtree(self.path(name), ignore_errors=True)
        for name in ("runs.tsv", "results.tsv", "facts.tsv", "notes.txt", "bench.json", "seed.sqlite"):
            if os.path.exists(self.path(name)):
                os.remove(self.path(name))
        for name in os.listdir(self.out):
            if name.startswith("seed.sqlite."):
                os.remove(self.path(name))
        remove_db(self.path("server.sqlite"))
        for name in ("data", "runs", "baseline", "install", "installed"):
            os.makedirs(self.path(name))
        open(self.path("runs.tsv"), "w").close()
        self.token = self.new_token("token")
        self.machine_facts()
        step(f"server database: {self.options.events} events, {self.options.locations} locations")
        self.tool("seed-server", "init", "--database", self.path("server.sqlite"), "--demo",
                  "--events", str(self.options.events), "--locations", str(self.options.locations))
        self.serve(self.path("server.sqlite"))
        # The reference seed: built once, untimed (it also warms the server and the page cache for case
        # 1). It is the seed of cases 1 to 8, and its data tables give the baselines their schema and
        # rows; case 9 makes its own.
        if any(case not in (9, 10) for case in self.options.only):
            step("reference seed (untimed)")
            seed = self.path("seed.sqlite")
            subprocess.run(self.seed_build(seed, "--gzip", "--quiet"), check=True)
            self.tool("seed-verify", seed, stdout=subprocess.DEVNULL)
            self.revision = json_field(seed + ".manifest.json", "revision")
            self.fact("parameters", "seedRevision", self.revision)
            self.tables = data_tables(seed)
            if not self.tables:
                raise BenchError(f"{seed}: no data tables")
        if self.wants(1) or self.wants(5):
            self.export_seed_rows()
        # The seed installed by seed-import while the server is at the seed's revision, kept as it was
        # when seed-import exited: cases 3, 4, 6 and 8 start every run from a copy of it.
        if any(self.wants(case) for case in (3, 4, 6, 8)):
            step("installed app database (untimed)")
            report = subprocess.run(self.seed_import(self.path("seed.sqlite"), self.path("installed", "app.sqlite")),
                                    check=True, capture_output=True, text=True).stdout
            if json.loads(report)["installed"] is not True:
                raise BenchError("seed-import did not install the seed")

    def machine_facts(self):
        def output(command):
            try:
                return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()
            except (OSError, subprocess.CalledProcessError):
                return None

        with open("/proc/cpuinfo") as file:
            cpu = next((line.split(":", 1)[1].strip() for line in file if line.startswith("model name")), "")
        memory = next(line.split()[1] for line in open("/proc/meminfo") if line.startswith("MemTotal:"))
        self.fact("machine", "nproc", os.cpu_count())
        self.fact("machine", "cpu", cpu)
        self.fact("machine", "memoryKiB", memory)
        self.fact("machine", "uname", f"{platform.system()} {platform.release()}")
        self.fact("machine", "sqlite3", output(["sqlite3", "--version"]))
        self.fact("machine", "swift", (output(["swift", "--version"]) or "not found").splitlines()[0])
        self.fact("machine", "python3", f"Python {platform.python_version()}")
        self.fact("machine", "sqliteUtils", output(["sqlite-utils", "--version"]) or "not installed")
        self.fact("machine", "commit", output(["git", "rev-parse", "--short", "HEAD"]) or "unknown")
        self.fact("machine", "bin", self.bin)
        for key in ("events", "locations", "repeat", "changes"):
            self.fact("parameters", key, getattr(self.options, key))
        self.fact("parameters", "only", ",".join(map(str, self.options.only)))

    def export_seed_rows(self):
        """The seed's schema, as `.schema` shows it minus the _seedsync_* tables: tables.sql, and
        indexes.sql, which the baselines run after loading the rows (the cheaper order for them); each
        table's rows as CSV without header (NULL comes out as an empty field) and as JSON (an array of
        objects), and import.sql, the sqlite3 shell's .import of each CSV."""
        step("schema and exports of the seed's rows")
        seed, data = self.path("seed.sqlite"), self.path("data")
        tables = query(seed, "SELECT sql || ';' FROM sqlite_schema WHERE type = 'table' "
                       "AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid")
        indexes = query(seed, "SELECT sql || ';' FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL "
                        "AND tbl_name NOT LIKE '\\_%' ESCAPE '\\' ORDER BY rowid")
        with open(os.path.join(data, "tables.sql"), "w") as file:
            file.writelines(row[0] + "\n" for row in tables)
        with open(os.path.join(data, "indexes.sql"), "w") as file:
            file.writelines(row[0] + "\n" for row in indexes)
        with open(os.path.join(data, "import.sql"), "w") as imports:
            for table in self.tables:
                select = f"SELECT {quoted_columns(seed, table)} FROM {quote(table)} ORDER BY id"
                with open(os.path.join(data, f"{table}.csv"), "w") as file:
                    subprocess.run(["sqlite3", "-csv", seed, select], check=True, stdout=file)
                with open(os.path.join(data, f"{table}.json"), "w") as file:
                    subprocess.run(["sqlite3", "-json", seed, select], check=True, stdout=file)
                if os.path.getsize(os.path.join(data, f"{table}.json")) == 0:
                    with open(os.path.join(data, f"{table}.json"), "w") as file:
                        file.write("[]\n")
                imports.write(f".import --csv '{data}/{table}.csv' {table}\n")

    # Case 1: seed build ----------------------------------------------------------------------------

    def case1(self):
        """seed-build downloads every row over loopback into a fresh seed and gzips it; each baseline
        loads the same rows from local files into a fresh SQLite file with the seed's data tables."""
        step("case 1: seed build")
        build, data, baseline = self.path("build"), self.path("data"), self.path("baseline")
        for name, flags in (("seed-build", ["--gzip", "--json"]), ("seed-build-plain", ["--json"]),
                            ("seed-build-gzip1", ["--gzip-level", "1", "--json"]),
                            ("seed-build-gzip9", ["--gzip-level", "9", "--json"])):
            for run in self.run_numbers():
                shutil.rmtree(build, ignore_errors=True)
                os.makedirs(build)
                self.measure(1, name, run, self.seed_build(os.path.join(build, "seed.sqlite"), *flags))
        # sqlite3 shell: one invocation, tables, .import --csv of each table (locations first), indexes.
        target = os.path.join(baseline, "sqlite3.sqlite")
        for run in self.run_numbers():
            remove_db(target)
            self.measure(1, "sqlite3-import", run, ["sqlite3", "-bail", target, f".read '{data}/tables.sql'",
                                                    f".read '{data}/import.sql'", f".read '{data}/indexes.sql'"])
        self.same_counts(target)
        # Python: json.load of each file, executemany in one transaction (json_to_sqlite.py).
        target = os.path.join(baseline, "python.sqlite")
        loads = [f"{table}={data}/{table}.json" for table in self.tables]
        here = os.path.dirname(os.path.abspath(__file__))
        for run in self.run_numbers():
            remove_db(target)
            self.measure(1, "python-json", run, [self.python, os.path.join(here, "json_to_sqlite.py"), target,
                                                 f"{data}/tables.sql", f"{data}/indexes.sql", *loads])
        self.same_counts(target)
        # sqlite-utils insert of each JSON file into the same tables, when it is installed.
        has_sqlite_utils = shutil.which("sqlite-utils") is not None
        if has_sqlite_utils:
            target = os.path.join(baseline, "sqlite-utils.sqlite")
            script = ('db=$1 data=$2; shift 2; sqlite3 -bail "$db" <"$data/tables.sql" || exit 1; '
                      'for table; do sqlite-utils insert "$db" "$table" "$data/$table.json" || exit 1; done; '
                      'sqlite3 -bail "$db" <"$data/indexes.sql"')
            for run in self.run_numbers():
                remove_db(target)
                self.measure(1, "sqlite-utils", run, ["sh", "-c", script, "sh", target, data, *self.tables])
            self.same_counts(target)
        self.report_case1(has_sqlite_utils)

    def report_case1(self, has_sqlite_utils):
        case, wall = "1 seed build", self.median_wall
        # gzip level 6 stays the default (issue 44: every app's download is smaller); level 1 is the
        # fast build, held to 1.5x the sqlite3 shell. Each level's .gz size beside its time.
        self.contender(case, "seed-build", "seed-build --gzip (level 6, the default)", "seed-build / sqlite3",
                       ratio(wall("seed-build"), wall("sqlite3-import")))
        self.contender(case, "seed-build-gzip1", "seed-build --gzip-level 1", "seed-build / sqlite3",
                       ratio(wall("seed-build-gzip1"), wall("sqlite3-import")), "<=", 1.5)
        self.contender(case, "seed-build-gzip9", "seed-build --gzip-level 9", "seed-build / sqlite3",
                       ratio(wall("seed-build-gzip9"), wall("sqlite3-import")))
        for name, level in (("seed-build-gzip1", 1), ("seed-build", 6), ("seed-build-gzip9", 9)):
            size = self.report_median(name, "manifest.gzip.size")
            self.fact("seedBuild", f"gzipBytes.level{level}", size)
            self.result(case, "", f"  .gz at level {level}", "", "", "MB", f"{float(size) / 1e6:.1f}")
        self.result(case, "", "  seed-build peak memory", "", "", "peak MB", self.median_mb("seed-build"), "<=", 150)
        # seed-build's own --json report: seconds spent downloading pages, catching up with /v1/sync, and
        # finishing (indexes, checks, manifest, gzip); medians over the runs.
        for part in ("download", "catchUp", "finish", "total"):
            seconds = self.report_median("seed-build", f"seconds.{part}")
            self.fact("seedBuild", f"medianSeconds.{part}", seconds)
            self.result(case, "", f"  - {part} (its --json)", seconds, "")
        self.contender(case, "seed-build-plain", "seed-build (no gzip)", "seed-build / sqlite3",
                       ratio(wall("seed-build-plain"), wall("sqlite3-import")), "<=", 1.3)
        self.contender(case, "sqlite3-import", "sqlite3 .import --csv")
        # Like for like: the Python baseline writes no .gz either.
        self.contender(case, "python-json", "python json + executemany", "python / seed-build (no gzip)",
                       ratio(wall("python-json"), wall("seed-build-plain")), ">=", 1.5)
        self.result(case, "", "  the same against seed-build --gzip", "", "", "python / seed-build",
                    ratio(wall("python-json"), wall("seed-build")))
        if has_sqlite_utils:
            self.contender(case, "sqlite-utils", "sqlite-utils insert", "sqlite-utils / seed-build (no gzip)",
                           ratio(wall("sqlite-utils"), wall("seed-build-plain")))
        else:
            self.result(case, "sqlite-utils", "sqlite-utils insert", "", "", "not installed")
        self.note("case 1: CSV cannot express NULL, so the sqlite3 .import baseline stores '' for NULL, and keeps REALs to 15 significant digits: a small advantage for that baseline.")
        self.note("case 1: the baselines load local files into a fresh file: tables, rows, then indexes; seed-build downloads the rows from the server over loopback and also writes the .gz and the manifest.")

    # Case 2: first install -------------------------------------------------------------------------

    def case2(self):
        """The server is at the seed's revision, so seed-import only installs: copy, SHA-256 against the
        manifest, checks. The baseline hashes and copies the same file."""
        step("case 2: first install")
        app, seed = self.path("install", "app.sqlite"), self.path("seed.sqlite")
        for run in self.run_numbers():
            remove_db(app)
            # Untimed: the writeback of earlier cases' files would otherwise land in the install's fsync.
            os.sync()
            self.measure(2, "seed-import-install", run, self.seed_import(seed, app))
        first = self.path("runs", "seed-import-install.1.out")
        if json_field(first, "installed") is not True or json_field(first, "changeSets") != 0:
            raise BenchError(f"case 2: seed-import did not just install the seed: {open(first).read()}")
        for run in self.run_numbers():
            remove_db(app)
            os.sync()
            self.measure(2, "sha256-cp", run, ["sh", "-c", 'sha256sum "$1" && cp "$1" "$2"', "sh", seed, app])
        self.contender("2 first install", "seed-import-install", "seed-import (install only)",
                       "seed-import / sha256+cp",
                       ratio(self.median_wall("seed-import-install"), self.median_wall("sha256-cp")), "<=", 1.2)
        self.contender("2 first install", "sha256-cp", "sha256sum && cp")

    # Case 3: incremental sync ----------------------------------------------------------------------

    def case3(self):
        """A copy of the server database gets about --changes row changes after the seed's revision; every
        run starts from the installed app database and applies them all."""
        step("case 3: incremental sync")
        self.stop_server()
        folder, installed = self.path("incremental"), self.path("installed", "app.sqlite")
        self.mutated_copy(folder)
        self.serve(os.path.join(folder, "server.sqlite"))
        for run in self.run_numbers():
            copy_db(installed, os.path.join(folder, "app.sqlite"))
            app = os.path.join(folder, "app.sqlite")
            self.measure(3, "seed-import-sync", run, self.seed_import(self.path("seed.sqlite"), app))
        self.stop_server()
        self.stage_changes(os.path.join(folder, "server.sqlite"), installed, folder)
        self.sqlite3_apply_runs(3, "sqlite3-apply", installed, folder)
        self.report_case3(folder)

    def report_case3(self, folder):
        report = self.path("runs", "seed-import-sync.1.out")
        applied_sets = json_field(report, "changeSets")
        applied = json_field(report, "inserted+updated+deleted")  # row changes applied: the same every run
        wall = self.median_wall("seed-import-sync")
        own = self.report_median("seed-import-sync", "seconds")  # seed-import's own seconds, without process start
        for key, value in (("changeSetsWritten", self.change_sets), ("changeSets", applied_sets), ("changes", applied),
                           ("inserted", json_field(report, "inserted")), ("updated", json_field(report, "updated")),
                           ("deleted", json_field(report, "deleted")), ("medianWallSeconds", wall),
                           ("medianReportSeconds", own), ("changesPerSecondWall", per_second(applied, wall)),
                           ("changesPerSecondReport", per_second(applied, own))):
            self.fact("incremental", key, value)
        case = "3 incremental"
        self.contender(case, "seed-import-sync", f"seed-import --once ({applied_sets} sets, {applied} changes)",
                       "changes/s (wall)", per_second(applied, wall), ">=", 100000)
        self.result(case, "", "  - its --json seconds", own, "", "changes/s (own seconds)", per_second(applied, own))
        staged = self.staged_rows(folder)
        baseline = self.median_wall("sqlite3-apply")
        self.fact("incremental", "sqlite3Rows", staged)
        self.fact("incremental", "sqlite3MedianWallSeconds", baseline)
        self.contender(case, "sqlite3-apply", f"sqlite3, the same end rows ({staged} rows)", "changes/s (wall)",
                       per_second(applied, baseline))
        self.result(case, "", "  seed-import against it", "", "", "seed-import / sqlite3", ratio(wall, baseline))
        self.note(f"case 3: --changes {self.options.changes} row changes asked; mutate writes about 2.5 a change set, so {self.change_sets} change sets (ceil(changes / 2.5)) were written; {applied} row changes in {applied_sets} change sets were applied.")
        self.note(f"case 3: the sqlite3 baseline writes the {staged} rows (and deletes) those changes leave, staged beforehand from the server's tables in key order, with seed-import's settings in one transaction (see stage_changes); its changes/s counts the same {applied} changes.")

    # Case 4: growth --------------------------------------------------------------------------------

    def growth_runs(self, name, server, seed, installed):
        """Mutates SERVER, serves it, and times seed-import --once from a copy of INSTALLED, repeat times;
        then the sqlite3 baseline of the same end rows."""
        folder = os.path.dirname(server)
        self.stop_server()
        self.mutate(server, GROWTH_CHANGE_SETS)
        self.serve(server)
        for run in self.run_numbers():
            copy_db(installed, os.path.join(folder, "app.sqlite"))
            self.measure(4, name, run, self.seed_import(seed, os.path.join(folder, "app.sqlite")))
        self.stop_server()
        self.stage_changes(server, installed, folder)
        self.sqlite3_apply_runs(4, f"{name}-sqlite3", installed, folder)

    def case4(self):
        """The same GROWTH_CHANGE_SETS change sets (mutate --seed MUTATE_SEED) synced into a small and a
        large installed database: the time should not grow much with the data already there."""
        step("case 4: growth")
        small, large = self.path("growth", "small"), self.path("growth", "large")
        os.makedirs(small)
        os.makedirs(large)
        # Small: its own server database, seed and installed database (untimed).
        self.tool("seed-server", "init", "--database", f"{small}/server.sqlite", "--demo",
                  "--events", str(GROWTH_EVENTS), "--locations", str(GROWTH_LOCATIONS))
        self.serve(f"{small}/server.sqlite")
        subprocess.run(self.seed_build(f"{small}/seed.sqlite", "--quiet"), check=True)
        subprocess.run(self.seed_import(f"{small}/seed.sqlite", f"{small}/installed.sqlite"), check=True,
                       stdout=subprocess.DEVNULL)
        self.growth_runs("growth-small", f"{small}/server.sqlite", f"{small}/seed.sqlite", f"{small}/installed.sqlite")
        # Large: a copy of the untouched server database, whose seed and installed database are the
        # reference ones (built from the same data at the same revision).
        copy_db(self.path("server.sqlite"), f"{large}/server.sqlite")
        self.growth_runs("growth-large", f"{large}/server.sqlite", self.path("seed.sqlite"),
                         self.path("installed", "app.sqlite"))
        changes = {}
        for name in ("growth-small", "growth-large"):
            first = self.path("runs", f"{name}.1.out")
            changes[name] = json_field(first, "inserted+updated+deleted")
            self.fact("growth", f"{name}.changeSets", json_field(first, "changeSets"))
            self.fact("growth", f"{name}.changes", changes[name])
            self.fact("growth", f"{name}.medianWallSeconds", self.median_wall(name))
        wall, events = self.median_wall, self.options.events
        self.contender("4 growth", "growth-small", f"sync at {GROWTH_EVENTS} events")
        self.contender("4 growth", "growth-large", f"sync at {events} events", "large / small",
                       ratio(wall("growth-large"), wall("growth-small")), "<=", 1.5)
        self.contender("4 growth", "growth-small-sqlite3", f"sqlite3, the same end rows, at {GROWTH_EVENTS} events")
        self.contender("4 growth", "growth-large-sqlite3", f"sqlite3, the same end rows, at {events} events",
                       "large / small", ratio(wall("growth-large-sqlite3"), wall("growth-small-sqlite3")))
        self.note(f"case 4: {GROWTH_CHANGE_SETS} change sets (mutate --seed {MUTATE_SEED}) at each size: {changes['growth-small']} row changes at {GROWTH_EVENTS} events, {changes['growth-large']} at {events}; the large size reuses the reference seed and its installed database (same data, same revision).")

    # Case 5: seed size -----------------------------------------------------------------------------

    def case5(self):
        """The seed, its .gz, and the JSON and CSV exports of the same rows, in bytes."""
        step("case 5: seed size")
        seed_bytes = os.path.getsize(self.path("seed.sqlite"))
        gz_bytes = os.path.getsize(self.path("seed.sqlite.gz"))
        json_bytes = sum(os.path.getsize(self.path("data", f"{table}.json")) for table in self.tables)
        csv_bytes = sum(os.path.getsize(self.path("data", f"{table}.csv")) for table in self.tables)
        for key, value in (("seedBytes", seed_bytes), ("gzipBytes", gz_bytes), ("jsonBytes", json_bytes),
                           ("csvBytes", csv_bytes)):
            self.fact("sizes", key, value)
        case = "5 seed size"
        self.result(case, "", f"seed.sqlite: {mb(seed_bytes)} MB", "", "", "seed / JSON", ratio(seed_bytes, json_bytes))
        self.result(case, "", f"seed.sqlite.gz: {mb(gz_bytes)} MB", "", "", "gz / JSON", ratio(gz_bytes, json_bytes))
        self.result(case, "", f"JSON exports: {mb(json_bytes)} MB", "", "", "", "")
        self.result(case, "", f"CSV exports: {mb(csv_bytes)} MB", "", "", "CSV / JSON", ratio(csv_bytes, json_bytes))

    # Case 6: migration -----------------------------------------------------------------------------

    def case6(self):
        """A copy of the server database is upgraded to a version 2 with one more text field on events,
        `notes`, non-null with a default. The installed app database (version 1, at the server's revision)
        migrates in place: the server says every row holds the default (GET /v1/snapshot/events/uniform),
        so seed-import fills it in and downloads no column; the baseline downloads the whole new version
        (seed-build). Time and bytes received, each against the other. Then the column is backfilled with
        a distinct value per row (written into the server database directly, as an operator's backfill
        script would, outside the change log) and the migration downloads the key and `notes` of every
        event: its figure against a full download of the backfilled version."""
        step("case 6: migration")
        self.stop_server()
        folder = self.path("migration")
        os.makedirs(folder)
        copy_db(self.path("server.sqlite"), f"{folder}/server.sqlite")
        schema = json.loads(scalar(self.path("seed.sqlite"), "SELECT value FROM _seedsync_seed WHERE key = 'schema'"))
        schema["schemaVersion"] += 1
        events = next(t for t in schema["types"] if t["name"] == "events")
        events["fields"].append({"name": "notes", "type": "text", "nullable": False, "default": "no notes yet"})
        with open(f"{folder}/schema-v2.json", "w") as file:
            json.dump(schema, file)
        self.tool("seed-server", "schema", "upgrade", "--database", f"{folder}/server.sqlite",
                  "--schema", f"{folder}/schema-v2.json")
        self.migrate_and_build(folder, "")
        self.stop_server()
        # The backfill: a distinct note per row, in the table, not in the log (the apps' revision stays).
        connection = sqlite3.connect(f"{folder}/server.sqlite")
        connection.execute("UPDATE events SET notes = 'note ' || id")
        connection.commit()
        connection.close()
        self.migrate_and_build(folder, "-backfilled")
        self.stop_server()
        case = "6 migration"
        for suffix, label in (("", "default"), ("-backfilled", "backfilled")):
            migrate_bytes = self.report_median(f"seed-import-migrate{suffix}", "migration.bytesDownloaded")
            build_bytes = self.report_median(f"seed-build-v2{suffix}", "bytesDownloaded")
            first = self.path("runs", f"seed-import-migrate{suffix}.1.out")
            self.fact("migration", f"{label}.rowsDownloaded", json_field(first, "migration.rowsDownloaded"))
            self.fact("migration", f"{label}.fieldsFilled", json_field(first, "migration.fieldsFilled"))
            self.fact("migration", f"{label}.medianBytes", migrate_bytes)
            self.fact("migration", f"{label}.fullDownloadMedianBytes", build_bytes)
            targets = ("<=", 0.2) if not suffix else ()
            self.contender(case, f"seed-import-migrate{suffix}", f"seed-import: migrate in place ({label} column)",
                           "migrate / full (time)",
                           ratio(self.median_wall(f"seed-import-migrate{suffix}"), self.median_wall(f"seed-build-v2{suffix}")),
                           *targets)
            self.result(case, "", f"  bytes received: {mb(float(migrate_bytes))} MB", "", "", "migrate / full (bytes)",
                        ratio(migrate_bytes, build_bytes), *(("<=", 0.05) if not suffix else ()))
            self.contender(case, f"seed-build-v2{suffix}", f"seed-build of version 2 (full, {label} column)")
            self.result(case, "", f"  bytes received: {mb(float(build_bytes))} MB", "", "")
        self.note(f"case 6: version 2 adds events.notes (text, default 'no notes yet') to every one of {self.options.events} events; the app database migrates from version 1 at the server's revision, filling the default in (the server's uniform-fields answer); the baseline is a full seed-build of version 2. Then notes is backfilled with 'note <id>' in the server's table (outside the log) and the migration downloads the column: no target, its figure against a full build of the backfilled version.")

    def migrate_and_build(self, folder, suffix):
        """Serves the upgraded copy; the installed app migrates in place K times (a fresh copy each), then
        seed-build of version 2 runs K times."""
        self.serve(f"{folder}/server.sqlite")
        for run in self.run_numbers():
            copy_db(self.path("installed", "app.sqlite"), f"{folder}/app.sqlite")
            command = self.seed_import(self.path("seed.sqlite"), f"{folder}/app.sqlite")
            self.measure(6, f"seed-import-migrate{suffix}", run, command)
        if scalar(f"{folder}/app.sqlite", "PRAGMA user_version") != 2:
            raise BenchError("case 6: the app was not migrated")
        for run in self.run_numbers():
            shutil.rmtree(f"{folder}/build", ignore_errors=True)
            os.makedirs(f"{folder}/build")
            self.measure(6, f"seed-build-v2{suffix}", run, self.seed_build(f"{folder}/build/seed.sqlite", "--json"))

    # Case 7: pinned seed ---------------------------------------------------------------------------

    def case7(self):
        """PINNED_CHANGE_SETS change sets after the reference seed, which is registered; compaction asked
        to keep 1,000 revisions keeps its history instead. seed-import installs the seed and catches up
        by sync (no snapshot download)."""
        step("case 7: pinned seed")
        self.stop_server()
        folder = self.path("pinned")
        os.makedirs(folder)
        copy_db(self.path("server.sqlite"), f"{folder}/server.sqlite")
        admin = self.new_token("admin-token")
        self.serve(f"{folder}/server.sqlite", admin_token=admin)
        body = json.dumps({"sha256": json_field(self.path("seed.sqlite.manifest.json"), "sha256"),
                           "revision": self.revision, "schemaVersion": 1}).encode()
        with open(admin) as file:
            request = urllib.request.Request(self.server_url + "/v1/admin/seeds", data=body,
                                             headers={"Authorization": "Bearer " + file.read()})
        urllib.request.urlopen(request, timeout=30).read()
        self.stop_server()
        self.mutate(f"{folder}/server.sqlite", PINNED_CHANGE_SETS)
        compact = subprocess.run([f"{self.bin}/seed-server", "compact", "--database", f"{folder}/server.sqlite",
                                  "--keep-revisions", "1000"], check=True, capture_output=True, text=True).stdout
        if f"kept back to revision {self.revision}" not in compact:
            raise BenchError(f"case 7: compaction was not held back: {compact}")
        self.serve(f"{folder}/server.sqlite")
        for run in self.run_numbers():
            remove_db(f"{folder}/app.sqlite")
            command = self.seed_import(self.path("seed.sqlite"), f"{folder}/app.sqlite")
            self.measure(7, "seed-import-pinned", run, command)
        self.stop_server()
        with open(self.path("runs", "seed-import-pinned.1.out")) as file:
            report = json.load(file)
        if report["installed"] is not True or report["changeSets"] != PINNED_CHANGE_SETS or report["replacements"]:
            raise BenchError(f"case 7: the pinned seed was not installed and caught up by sync: {report}")
        self.fact("pinned", "changeSets", PINNED_CHANGE_SETS)
        label = f"seed-import: install + {PINNED_CHANGE_SETS} change sets"
        self.contender("7 pinned seed", "seed-import-pinned", label, "snapshot downloads", "0")
        self.note(f"case 7: the reference seed registered, {PINNED_CHANGE_SETS} change sets written after it, compact --keep-revisions 1000 kept back to the seed's revision; every run installs the seed and syncs, none downloads a snapshot.")

    # Case 8: edit sessions during a catch-up -------------------------------------------------------

    def case8(self):
        """The installed app, case 3's change sets behind (mutated here the same way), catches up in a
        SyncEngine (seed-bench edit) while the app opens an edit session every 250 ms and cancels it 20 ms
        later: how long beginEdit() takes to return (it waits for the engine's current transaction to
        end). Each run times every edit of one whole catch-up; p99 and max are over the edits of all
        runs. Twice: the engine on its own connection, and writing through a GRDB DatabasePool of the
        app's (--app-pool). The WAL's largest size during each run is sampled every 20 ms."""
        step("case 8: edit sessions during a catch-up")
        self.stop_server()
        folder = self.path("editing")
        self.mutated_copy(folder)
        self.serve(f"{folder}/server.sqlite")
        for mode, flags in (("own", []), ("pool", ["--app-pool"])):
            for run in self.run_numbers():
                copy_db(self.path("installed", "app.sqlite"), f"{folder}/app.sqlite")
                with WALPeak(f"{folder}/app.sqlite-wal", self.path("runs", f"seed-bench-edit-{mode}.{run}.wal")):
                    self.measure(8, f"seed-bench-edit-{mode}", run, [
                        f"{self.bin}/seed-bench", "edit", "--seed", self.path("seed.sqlite"), "--database",
                        f"{folder}/app.sqlite", "--server", self.server_url, "--token-file", self.token, *flags])
        self.stop_server()
        for mode in ("own", "pool"):
            self.report_case8(mode)

    def report_case8(self, mode):
        name = self.path("runs", f"seed-bench-edit-{mode}")
        runs = []
        for run in self.run_numbers():
            with open(f"{name}.{run}.out", encoding="utf-8") as file:
                runs.append(json.load(file))
        wal = max(int(open(f"{name}.{run}.wal").read()) for run in self.run_numbers())
        edits = sum(run["edits"] for run in runs)
        p99, worst = max(run["p99Ms"] for run in runs), max(run["maxMs"] for run in runs)
        p50 = sorted(run["p50Ms"] for run in runs)[len(runs) // 2]
        applied_sets, wal_mb = runs[0]["changeSets"], round(wal / 1048576, 1)
        label = "through the app's DatabasePool" if mode == "pool" else "own connection"
        section = f"editing-{mode}"
        for key, value in (("editSessions", edits), ("changeSets", applied_sets), ("beginEditP50Ms", p50),
                           ("beginEditP99Ms", p99), ("beginEditMaxMs", worst), ("walPeakMB", wal_mb)):
            self.fact(section, key, value)
        case = "8 edit sessions"
        self.contender(case, f"seed-bench-edit-{mode}",
                       f"SyncEngine catch-up, {label} ({applied_sets} sets), {edits} edits", "beginEdit p99 ms", p99,
                       "<=", 50)
        self.result(case, "", "  - beginEdit p50 / max ms, WAL peak MB", "", "", "ms, MB", f"{p50} / {worst}, {wal_mb}")
        self.note(f"case 8 ({label}): {applied_sets} change sets caught up by a SyncEngine in each of {self.repeat} runs while an edit session opened every 250 ms (held 20 ms); beginEdit() p50 {p50} ms (median of the runs), p99 {p99} ms and max {worst} ms (the worst run's); the WAL reached {wal_mb} MB at most.")

    # Case 9: scale ---------------------------------------------------------------------------------

    def scale_size(self, name, folder):
        """Builds FOLDER/server.sqlite's seed repeat times (scale-build-NAME runs) and times POST /v1/sync
        from SCALE_CHANGE_SETS behind into FOLDER/sync.json; serves FOLDER/server.sqlite meanwhile."""
        self.mutate(f"{folder}/server.sqlite", SCALE_CHANGE_SETS)
        self.serve(f"{folder}/server.sqlite")
        for run in self.run_numbers():
            shutil.rmtree(f"{folder}/build", ignore_errors=True)
            os.makedirs(f"{folder}/build")
            self.measure(9, f"scale-build-{name}", run, self.seed_build(f"{folder}/build/seed.sqlite", "--json"))
        newest = scalar(f"{folder}/server.sqlite", "SELECT revision FROM _seedsync_state")
        body = json.dumps({"maxRevision": newest - SCALE_CHANGE_SETS, "changeSets": []})
        self.request_times(f"{self.server_url}/v1/sync", f"{folder}/sync.json", body)

    def request_times(self, url, output, body=None):
        here = os.path.dirname(os.path.abspath(__file__))
        with open(output, "w") as file:
            subprocess.run([self.python, os.path.join(here, "request_times.py"), url, self.token, str(SCALE_REQUESTS),
                            *([body] if body else [])], check=True, stdout=file)

    def case9(self):
        """Two servers' databases, one of --events events and --locations locations (a copy of the
        reference server database) and one a tenth of each, both given SCALE_CHANGE_SETS more change sets:
        seed-build of each (no gzip), then at each size POST /v1/sync from SCALE_CHANGE_SETS revisions
        behind, and at the large size a snapshot page of 1,000 events 90 % into the table against the
        first page. What should not grow with the data: build time per row, build memory, a sync from a
        recent revision, a page's cost by its position. After the warm-up the sync's change sets come
        from the server's cache, so that row compares a request's own cost (state read, answer), not the
        log's range scan; time per row includes each run's fixed start (about 0.1 s), which favours the
        small size when it is small."""
        step("case 9: scale")
        self.stop_server()
        events, locations = self.options.events, self.options.locations
        small_events, small_locations = max(events // 10, 1), max(locations // 10, 1)
        small, large = self.path("scale", "small"), self.path("scale", "large")
        os.makedirs(small)
        os.makedirs(large)
        self.tool("seed-server", "init", "--database", f"{small}/server.sqlite", "--demo",
                  "--events", str(small_events), "--locations", str(small_locations))
        self.scale_size("small", small)
        self.stop_server()
        copy_db(self.path("server.sqlite"), f"{large}/server.sqlite")
        self.scale_size("large", large)
        offset = scalar(f"{large}/server.sqlite", "SELECT count(*) * 9 / 10 FROM events")
        deep = scalar(f"{large}/server.sqlite", "SELECT id FROM events ORDER BY id LIMIT 1 OFFSET ?", offset)
        self.request_times(f"{self.server_url}/v1/snapshot/events?limit=1000", self.path("scale", "first-page.json"))
        self.request_times(f"{self.server_url}/v1/snapshot/events?limit=1000&after={deep}",
                           self.path("scale", "deep-page.json"))
        self.stop_server()
        rows_ratio = ratio(events + locations, small_events + small_locations)
        time_ratio = ratio(self.median_wall("scale-build-large"), self.median_wall("scale-build-small"))
        sync = {name: json_field(self.path("scale", name, "sync.json"), "median_ms") for name in ("small", "large")}
        first = json_field(self.path("scale", "first-page.json"), "median_ms")
        deep_ms = json_field(self.path("scale", "deep-page.json"), "median_ms")
        for name in ("small", "large"):
            figures = self.path("scale", name, "sync.json")
            self.fact("scale", f"{name}.syncMedianMs", sync[name])
            self.fact("scale", f"{name}.syncP99Ms", json_field(figures, "p99_ms"))
            self.fact("scale", f"{name}.syncBytes", json_field(figures, "bytes"))
            self.fact("scale", f"{name}.buildMedianWallSeconds", self.median_wall(f"scale-build-{name}"))
            self.fact("scale", f"{name}.buildMedianPeakMB", self.median_mb(f"scale-build-{name}"))
        self.fact("scale", "firstPageMedianMs", first)
        self.fact("scale", "deepPageMedianMs", deep_ms)
        self.fact("scale", "deepPageAfter", deep)
        case = "9 scale"
        self.contender(case, "scale-build-small", f"seed-build, {small_events} events")
        self.contender(case, "scale-build-large", f"seed-build, {events} events", "time per row, large / small",
                       ratio(time_ratio, rows_ratio), "<=", 1.1)
        self.result(case, "", "  peak memory", "", "", "peak MB, large / small",
                    ratio(self.median_mb("scale-build-large"), self.median_mb("scale-build-small")), "<=", 1.1)
        self.result(case, "", f"/v1/sync {SCALE_CHANGE_SETS} behind: {sync['small']} / {sync['large']} ms", "", "",
                    "median, large / small", ratio(sync["large"], sync["small"]), "<=", 1.2)
        self.result(case, "", f"page 90 % in / first: {deep_ms} / {first} ms", "", "", "median, deep / first",
                    ratio(deep_ms, first), "<=", 1.2)
        self.note(f"case 9: {small_events} events + {small_locations} locations against {events} + {locations} (rows x{rows_ratio}, build time x{time_ratio}); each server then got {SCALE_CHANGE_SETS} change sets (mutate --seed {MUTATE_SEED}); requests are medians of {SCALE_REQUESTS} sent one after another on one connection, after 20 untimed; the deep page starts after event {deep}.")

    # Case 10: the catch-up of one team among many ----------------------------------------------------

    def case10(self):
        """A dataset split by team (scope_line.py's clubs schema, PROTOCOL.md §10): --teams teams of
        --team-events events each, then --team-changes rounds of one change set per team, each
        retitling one event of its team alone (so team 1's change sets are one revision in --teams).
        Team 1's app, installed from its seed (cut with seed-build --scope team=1) with a JWT granting
        team 1, catches up its --team-changes change sets; against it, a single-dataset server of team
        1's rows alone (the same schema without the scope) and its app catching up the same change sets.
        Target: at most 1.2 times the single-dataset catch-up. On the SQLite store, and with
        --postgres-url on a PostgreSQL store as well."""
        teams, events, rounds = self.options.teams, self.options.team_events, self.options.team_changes
        step(f"case 10: one team's catch-up among {teams} teams of {events} events, {rounds} change sets each")
        folder, key, admin = self.teams_folder("teams")
        self.team_catch_up(folder, key, admin, "sqlite")
        if self.options.postgres_url:
            self.team_catch_up(folder, key, admin, "postgres")
        self.fact("teams", "teams", teams)
        self.fact("teams", "eventsPerTeam", events)
        self.fact("teams", "changeSetsPerTeam", rounds)

    def team_catch_up(self, folder, key, admin, store):
        """Case 10 on STORE (sqlite or postgres): both sides served, their change sets committed,
        each app's catch-up measured, and the ratio reported."""
        import jwt_keys
        import scope_line
        teams, events, rounds = self.options.teams, self.options.team_events, self.options.team_changes
        scoped, single = scope_line.SCHEMA, unscoped(scope_line.SCHEMA)
        sides = {"scoped": (scoped, range(1, teams + 1)), "single": (single, range(1, 2))}
        suffix = "" if store == "sqlite" else "-postgres"
        for side, (schema, side_teams) in sides.items():
            name = side + suffix
            self.serve_teams(folder, name, schema, side_teams, events, admin, jwks=side == "scoped",
                             database=self.team_database(folder, name, store))
            seed = f"{folder}/{name}-seed.sqlite"
            scope_flags = ("--scope", "team=1") if side == "scoped" else ()
            subprocess.run(self.seed_build(seed, "--quiet", *scope_flags), check=True)
            with AdminCommits(self.server_url, admin) as commits:
                for round_ in range(rounds):
                    for team in side_teams:
                        event_key = (team - 1) * events + 1 + round_ % events
                        commits.send({"events": {"update": {
                            event_key: scope_line.event(team, f"event {event_key} edit {round_}", 1)}}})
            team_seed = f"{folder}/{name}-seed.team-1.sqlite" if side == "scoped" else seed
            token = f"{folder}/{name}-token"
            with open(token, "w") as file:
                claims = {"exp": int(time.time()) + 3600, "teams": [1]}
                file.write(jwt_keys.sign(key, {"alg": "ES256", "kid": "k1"}, claims) if side == "scoped"
                           else open(self.token).read())
            for run in self.run_numbers():
                remove_db(f"{folder}/{name}-app.sqlite")
                command = [f"{self.bin}/seed-import", "--seed", team_seed, "--database", f"{folder}/{name}-app.sqlite",
                           "--server", self.server_url, "--token-file", token, "--once", "--json"]
                self.measure(10, f"seed-import-team-{name}", run, command)
            with open(self.path("runs", f"seed-import-team-{name}.1.out")) as file:
                report = json.load(file)
            if report["changeSets"] < rounds or report["replacements"]:
                raise BenchError(f"case 10: the {name} app did not catch up by sync: {report}")
            self.stop_server()
        scoped_wall = self.median_wall(f"seed-import-team-scoped{suffix}")
        single_wall = self.median_wall(f"seed-import-team-single{suffix}")
        case = "10 one team's catch-up" + ("" if store == "sqlite" else ", PostgreSQL")
        self.contender(case, f"seed-import-team-single{suffix}",
                       f"single dataset of {events} events: install + {rounds} change sets")
        self.contender(case, f"seed-import-team-scoped{suffix}",
                       f"team 1 of {teams} ({teams * rounds} revisions in the log)", "x single",
                       f"{float(scoped_wall) / float(single_wall):.2f}", "<=", "1.2")
        self.note(f"case 10 ({store}): team 1's app reads its {rounds} change sets out of {teams * rounds} revisions through the store's index of the log by scope value; its seed was cut by seed-build --scope team=1.")

    def team_database(self, folder, name, store):
        """Where case 10's side NAME lives: FOLDER/NAME.sqlite, or a new database bench_NAME on
        --postgres-url (dropped first when a run before left it)."""
        if store == "sqlite":
            return f"{folder}/{name}.sqlite"
        database = "bench_" + name.replace("-", "_")
        base = self.options.postgres_url.rsplit("/", 1)[0]
        for sql in (f"DROP DATABASE IF EXISTS {database}", f"CREATE DATABASE {database}"):
            subprocess.run(["psql", "-q", "-d", f"{base}/postgres", "-c", sql], check=True, stdout=subprocess.DEVNULL,
                           env={**os.environ, "PGOPTIONS": "-c client_min_messages=warning"})
        return f"{base}/{database}"

    def teams_folder(self, name):
        """The server stopped, then OUT/NAME made with a new ES256 key in its jwks.json (kid k1) and an
        admin token: the folder, the key and the token's path."""
        import jwt_keys
        self.stop_server()
        folder = self.path(name)
        os.makedirs(folder)
        key = jwt_keys.new_key()
        with open(f"{folder}/jwks.json", "w") as file:
            json.dump(jwt_keys.jwks(key, "k1"), file)
        return folder, key, self.new_token(f"{name}-admin-token")

    def serve_teams(self, folder, side, schema, side_teams, events, admin, jwks, database=None):
        """Makes DATABASE (default FOLDER/SIDE.sqlite) of SCHEMA (scope_line.py's clubs schema, or it
        without the scope) holding teams SIDE_TEAMS of EVENTS events each and venue 1, and serves it,
        taking JWTs of FOLDER/jwks.json when JWKS."""
        import scope_line
        database = database or f"{folder}/{side}.sqlite"
        with open(f"{folder}/{side}.json", "w") as file:
            json.dump(schema, file)
        self.tool("seed-server", "init", "--database", database, "--schema", f"{folder}/{side}.json")
        extra = ["--jwks-file", f"{folder}/jwks.json", "--jwt-scope-claim", "teams"] if jwks else []
        self.serve(database, admin_token=admin, extra=extra)
        say(f"{side}: {len(side_teams) * events} events")
        with AdminCommits(self.server_url, admin) as commits:
            commits.send({"teams": {"create": {team: {"name": f"Team {team}"} for team in side_teams}},
                          "venues": {"create": {1: {"name": "Hall"}}}})
            for first in range(0, len(side_teams) * events, 10000):
                keys = range(first, min(first + 10000, len(side_teams) * events))
                commits.send({"events": {"create": {
                    k + 1: scope_line.event(side_teams[k // events], f"event {k + 1}", 1) for k in keys}}})

    def case11(self):
        """A seed per team of --teams teams of --team-events events (case 10's scoped dataset): one
        `seed-build --every-scope` with the static token (one download, a cut per team) against a
        `seed-build` per team with that team's JWT, run one after the other. Every cut seed must be
        byte for byte the team's own build. No target: the figure says what the one pass saves."""
        import jwt_keys
        import scope_line
        teams, events = self.options.teams, self.options.team_events
        step(f"case 11: a seed per team of {teams} teams of {events} events, one pass against {teams} builds")
        folder, key, admin = self.teams_folder("team-seeds")
        self.serve_teams(folder, "scoped", scope_line.SCHEMA, range(1, teams + 1), events, admin, jwks=True)
        os.makedirs(f"{folder}/one-pass")
        self.measure(11, "seed-build-every-scope", 1, self.seed_build(
            f"{folder}/one-pass/clubs.sqlite", "--every-scope", "--quiet"))
        # Each team's build with its own token, in one shell script timed as a whole.
        os.makedirs(f"{folder}/each")
        script = f"{folder}/each.sh"
        with open(script, "w") as file:
            file.write("set -e\n")
            for team in range(1, teams + 1):
                token = f"{folder}/each/token-{team}"
                with open(token, "w") as secret:
                    secret.write(jwt_keys.sign(key, {"alg": "ES256", "kid": "k1"},
                                               {"exp": int(time.time()) + 7200, "teams": [team]}))
                file.write(f"{self.bin}/seed-build --server {self.server_url} --token-file {token} "
                           f"--out {folder}/each/clubs.team-{team}.sqlite --quiet\n")
        self.measure(11, "seed-build-each-team", 1, ["bash", script])
        self.stop_server()
        differing = [team for team in range(1, teams + 1)
                     if json_field(f"{folder}/one-pass/clubs.team-{team}.sqlite.manifest.json", "sha256")
                     != json_field(f"{folder}/each/clubs.team-{team}.sqlite.manifest.json", "sha256")]
        if differing:
            raise BenchError(f"case 11: the cut seeds of teams {differing[:10]} differ from their own builds")
        one_pass, each = self.median_wall("seed-build-every-scope"), self.median_wall("seed-build-each-team")
        self.contender("11 a seed per team", "seed-build-each-team", f"{teams} builds, one per team's JWT")
        self.contender("11 a seed per team", "seed-build-every-scope", f"one --every-scope build of {teams} seeds",
                       "x the builds", f"{float(one_pass) / float(each):.2f}")
        self.note(f"case 11: every one of the {teams} cut seeds is byte for byte its team's own build (SHA-256).")

    def case12(self):
        """What the SQLite store's index of its log by scope value costs commits: case 10's dataset
        (--teams teams of --team-events events) with its scope and without it (the same rows, every
        type shared), each served, then 2,000 admin commits of one change set each, one after the
        other on one connection, each retitling an event of the next team. Median of --repeat runs of
        the 2,000. No target: the figure says what the index costs."""
        import scope_line
        teams, events, commits_per_run = self.options.teams, self.options.team_events, 2000
        step(f"case 12: {commits_per_run} commits into {teams} teams of {events} events, with and without the scope")
        folder, _, admin = self.teams_folder("team-commits")
        scoped, single = scope_line.SCHEMA, unscoped(scope_line.SCHEMA)
        seconds = {}
        for side, schema in (("scoped", scoped), ("single", single)):
            self.serve_teams(folder, side, schema, range(1, teams + 1), events, admin, jwks=False)
            runs = []
            with AdminCommits(self.server_url, admin) as commits:
                for run in self.run_numbers():
                    started = time.monotonic()
                    for index in range(commits_per_run):
                        team = index % teams + 1
                        event_key = (team - 1) * events + 1 + (index // teams + run) % events
                        commits.send({"events": {"update": {
                            event_key: scope_line.event(team, f"event {event_key} run {run} edit {index}", 1)}}})
                    runs.append(time.monotonic() - started)
                    say(f"{side} run {run}: {commits_per_run} commits in {runs[-1]:.3f} s")
            seconds[side] = float(median(runs))
            self.stop_server()
        label = f"{commits_per_run} commits of one row, {teams} teams × {events} events"
        for side in ("single", "scoped"):
            rate = commits_per_run / seconds[side]
            self.result("12 commits, scope index", f"commits-{side}",
                        f"{'with the scope (indexed)' if side == 'scoped' else 'without a scope'}: {label}",
                        f"{seconds[side]:.3f}", "", "commits/s", f"{rate:.0f}")
        self.result("12 commits, scope index", "", "with the scope against without", "", "", "x time",
                    f"{seconds['scoped'] / seconds['single']:.2f}")

    # Report ----------------------------------------------------------------------------------------

    def snapshot_wire_bytes(self, limit=10000):
        """The bytes on the wire of every snapshot page of the data tables, asked for with
        Accept-Encoding: gzip (the server compresses JSON answers), LIMIT rows each as seed-build asks."""
        with open(self.token) as file:
            token = file.read().strip()
        total = 0
        for table in self.tables:
            after = None
            while True:
                query = f"limit={limit}" + ("" if after is None else "&after=" + urllib.parse.quote(str(after)))
                request = urllib.request.Request(
                    f"{self.server_url}/v1/snapshot/{table}?{query}",
                    headers={"Authorization": "Bearer " + token, "Accept-Encoding": "gzip"})
                with urllib.request.urlopen(request, timeout=60) as answer:
                    body = answer.read()
                    coded = answer.headers.get("Content-Encoding") == "gzip"
                total += len(body)
                after = json.loads(gzip.decompress(body) if coded else body).get("next")
                if after is None:
                    break
        return total

    def sizes(self, query=""):
        """GET /v1/sizes (PROTOCOL.md §9.7) and the seconds it took, median of 5."""
        with open(self.token) as file:
            token = file.read().strip()
        times = []
        for _ in range(5):
            request = urllib.request.Request(f"{self.server_url}/v1/sizes?{query}",
                                             headers={"Authorization": "Bearer " + token})
            started = time.perf_counter()
            with urllib.request.urlopen(request, timeout=60) as answer:
                body = json.loads(answer.read())
            times.append(time.perf_counter() - started)
        return body, statistics.median(times)

    # Case 13: a first install from the published seed against snapshot pages ------------------------

    def case13(self):
        """A fresh app with no shipped seed, the server at the reference seed's revision. seed-import
        --seed-url downloads the published .gz seed from seed-server --seeds over loopback, checks it
        (SHA-256) and installs it; seed-import with no seed at all, nothing registered, installs a
        snapshot (every page downloaded and written). Time, and bytes: the .gz file's size for the
        published seed (each run downloads all of it), seed-build's bytesDownloaded for the snapshot
        (the same pages the importer's snapshot reads, as sent, after HTTP decompression)."""
        step("case 13: first install, published seed vs snapshot pages")
        folder = self.path("published")
        os.makedirs(f"{folder}/seeds")
        for suffix in ("", ".gz", ".manifest.json"):
            shutil.copy(self.path("seed.sqlite" + suffix), f"{folder}/seeds/seed.sqlite{suffix}")
        self.serve(self.path("server.sqlite"), extra=("--seeds", f"{folder}/seeds"))
        sha256 = json_field(self.path("seed.sqlite.manifest.json"), "sha256")
        url = f"{self.server_url}/v1/seeds/{sha256}/seed.sqlite.gz"
        fresh = [f"{self.bin}/seed-import", "--database", f"{folder}/app.sqlite", "--server", self.server_url,
                 "--token-file", self.token, "--once", "--json"]
        for run in self.run_numbers():
            remove_db(f"{folder}/app.sqlite")
            os.sync()
            self.measure(13, "seed-import-published", run, [*fresh, "--seed-url", url])
        self.same_counts(f"{folder}/app.sqlite")
        for run in self.run_numbers():
            remove_db(f"{folder}/app.sqlite")
            os.sync()
            self.measure(13, "seed-import-snapshot", run, fresh)
        self.same_counts(f"{folder}/app.sqlite")
        for name, kind in (("seed-import-published", "published-seed"), ("seed-import-snapshot", "snapshot")):
            source = json_field(self.path("runs", f"{name}.1.out"), "installedFrom.kind")
            if source != kind:
                raise BenchError(f"case 13: {name} installed from {source}, not {kind}")
        with open(f"{folder}/pages.json", "w") as pages:
            subprocess.run(self.seed_build(f"{folder}/pages.sqlite", "--json"), check=True, stdout=pages)
        wire_bytes = self.snapshot_wire_bytes()
        sizes, sizes_seconds = self.sizes("schemaVersion=1")
        estimate = sizes["snapshot"]["gzipped"]
        self.fact("published", "snapshotGzipEstimate", estimate)
        self.fact("published", "sizesSeconds", round(sizes_seconds, 4))
        self.stop_server()
        self.serve(self.path("server.sqlite"))
        seed_bytes = json_field(self.path("seed.sqlite.manifest.json"), "gzip.size")
        page_bytes = json_field(f"{folder}/pages.json", "bytesDownloaded")
        self.fact("published", "seedGzipBytes", seed_bytes)
        self.fact("published", "snapshotBytes", page_bytes)
        self.fact("published", "snapshotGzipWireBytes", wire_bytes)
        case = "13 published seed"
        self.contender(case, "seed-import-published", "seed-import --seed-url (.gz, loopback)",
                       "published / snapshot (time)",
                       ratio(self.median_wall("seed-import-published"), self.median_wall("seed-import-snapshot")))
        self.result(case, "", f"  bytes received: {mb(float(seed_bytes))} MB", "", "", "published / snapshot (bytes)",
                    ratio(seed_bytes, page_bytes))
        self.contender(case, "seed-import-snapshot", "seed-import, no seed: snapshot pages")
        self.result(case, "", f"  bytes received: {mb(float(page_bytes))} MB", "", "")
        self.result(case, "", f"  the same pages gzipped on the wire: {mb(float(wire_bytes))} MB", "", "",
                    "published / gzipped pages", ratio(seed_bytes, wire_bytes))
        self.result(case, "", f"  GET /v1/sizes estimates them at {mb(float(estimate))} MB, in {sizes_seconds * 1000:.0f} ms",
                    "", "", "estimate / gzipped pages", ratio(estimate, wire_bytes))
        self.note("case 13: a fresh app, the server at the seed's revision; the published seed is the reference seed's .gz served by seed-server --seeds; the snapshot's bytes are seed-build's bytesDownloaded for the same pages (as decoded), and the same pages asked for with Accept-Encoding: gzip, as sent. No target: the figures say what the download saves.")

    def case14(self):
        """What the history chain costs (PROTOCOL.md §11): on a copy of the server database with its
        chain removed (and its log made 20,000 change sets long when it is shorter), seed-bench chain computes the chain over the whole log once (read, hash and
        store each revision: what a commit costs, once, at its first read) against reading the log
        alone, then the chain values of an answer of 1,000 revisions against reading its change sets
        (what every answer costs), median of 200. One run each; no target."""
        step("case 14: the history chain, computed over the log and read per answer")
        database = self.path("chain.sqlite")
        copy_db(self.path("server.sqlite"), database)
        logged = scalar(database, "SELECT count(*) FROM _seedsync_changes")
        if logged < 20000:
            subprocess.run([f"{self.bin}/seed-server", "mutate", "--database", database, "--changes",
                            str(20000 - logged), "--seed", "14"], check=True, stdout=subprocess.DEVNULL)
        with sqlite3.connect(database) as connection:
            connection.execute("DELETE FROM _seedsync_chain")
        connection.close()
        result = subprocess.run([f"{self.bin}/seed-bench", "chain", "--database", database], check=True,
                                capture_output=True, text=True)
        figures = json.loads(result.stdout.strip().splitlines()[-1])
        remove_db(database)
        for name, value in figures.items():
            self.fact("chain", name, value)
        case = "14 history chain"
        count = figures["changeSets"]
        self.result(case, "", f"the log alone: {count} change sets read", f"{figures['logSeconds']:.3f}", "", "", "")
        self.result(case, "", "the chain computed over it (read, hash, store)", f"{figures['chainSeconds']:.3f}", "",
                    "µs per change set", f"{figures['perChangeSetMicros']:.1f}")
        self.result(case, "", "an answer of 1,000 revisions: its chain values", "", "", "ms",
                    f"{figures['answerLookupMs']:.2f}")
        self.result(case, "", "  its change sets (the store's cache warm)", "", "", "ms",
                    f"{figures['answerReadMs']:.2f}")
        self.note("case 14: seed-bench chain on a copy of the server database without its chain; one run; the chain of a revision is computed once, at its first read, and stored.")

    def write_report(self):
        """bench.json (write_json.py, from the tab-separated files) and the table on stdout."""
        self.note(f"wall s and peak MB are medians of {self.repeat} runs; ratios are of medians. Peak MB is /usr/bin/time's %M / 1024.")
        for name, lines in (("results.tsv", self.results), ("facts.tsv", self.facts)):
            with open(self.path(name), "w", encoding="utf-8") as file:
                file.writelines("\t".join(str(cell) for cell in line) + "\n" for line in lines)
        with open(self.path("notes.txt"), "w", encoding="utf-8") as file:
            file.writelines(note + "\n" for note in self.notes)
        write_json.main([self.out])
        print()
        print(f"SeedSync benchmark: {self.options.events} events, {self.options.locations} locations, "
              f"{self.repeat} runs each ({os.cpu_count()} cores, {platform.system()} {platform.release()})")
        print()
        row = "{:<16} {:<44} {:>8} {:>8}  {:<24} {:>9} {:>9}  {}"
        print(row.format("case", "contender", "wall s", "peak MB", "measure", "value", "target", "result"))
        shown = None
        for case, _, label, wall, peak, measure, value, op, target, outcome in self.results:
            print(row.format("" if case == shown else case, label, wall, peak, measure, value,
                             f"{op} {target}" if op else "", outcome).rstrip())
            shown = case
        print()
        for note in self.notes:
            print(f"  {note}")
        print()
        print(f"all numbers: {self.path('bench.json')}")

    def run(self):
        self.work = tempfile.mkdtemp()
        try:
            self.prepare()
            for case in self.options.only:
                getattr(self, f"case{case}")()
            self.write_report()
        finally:
            self.stop_server()
            shutil.rmtree(self.work, ignore_errors=True)


class AdminCommits:
    """POST /v1/admin/changes of scope_line.py-shaped changes on one kept-alive connection."""

    def __init__(self, url, token_path):
        import http.client
        import urllib.parse
        parsed = urllib.parse.urlparse(url)
        self.connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
        with open(token_path) as file:
            self.headers = {"Authorization": "Bearer " + file.read().strip(), "Content-Type": "application/json"}

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.connection.close()

    def send(self, change):
        import scope_line
        self.connection.request("POST", "/v1/admin/changes", json.dumps(scope_line.admin_body(change)), self.headers)
        answer = self.connection.getresponse()
        body = answer.read()
        if answer.status != 200:
            raise BenchError(f"admin commit answered {answer.status}: {body[:300]!r}")


class WALPeak:
    """The largest size of a file while the block runs, sampled every 20 ms, written to OUTPUT."""

    def __init__(self, path, output):
        self.path, self.output = path, output
        self.peak, self.done = 0, threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def sample(self):
        while not self.done.wait(0.02):
            try:
                self.peak = max(self.peak, os.path.getsize(self.path))
            except OSError:
                pass

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *_):
        self.done.set()
        self.thread.join()
        with open(self.output, "w") as file:
            file.write(f"{self.peak}\n")


def positive(text):
    if not re.fullmatch(r"[1-9][0-9]*", text):
        raise argparse.ArgumentTypeError(f"not a positive whole number: {text}")
    return int(text)


def cases(text):
    if not re.fullmatch(r"[1-9][0-9]*(,[1-9][0-9]*)*", text) or any(int(case) > 14 for case in text.split(",")):
        raise argparse.ArgumentTypeError(f"not a list of cases such as 1,5: {text}")
    return sorted(set(int(case) for case in text.split(",")))


def parse(argv):
    parser = argparse.ArgumentParser(prog="scripts/bench/bench.sh", usage=USAGE.removeprefix("usage: "))
    parser.add_argument("--bin", required=True)
    parser.add_argument("--events", type=positive, default=1000000)
    parser.add_argument("--locations", type=positive, default=50000)
    parser.add_argument("--repeat", type=positive, default=3)
    parser.add_argument("--changes", type=positive, default=100000)
    parser.add_argument("--out", default=".build/bench")
    parser.add_argument("--only", type=cases, default=list(range(1, 15)))
    parser.add_argument("--teams", type=positive, default=1000)
    parser.add_argument("--team-events", type=positive, default=1000)
    parser.add_argument("--team-changes", type=positive, default=20)
    parser.add_argument("--postgres-url", help="case 10 on PostgreSQL too: a server where the bench may create databases")
    options = parser.parse_args(argv)
    if not options.out:
        parser.error("--out is empty")
    options.bin = os.path.abspath(options.bin)
    return options


def main(argv):
    options = parse(argv)
    for tool in ("seed-server", "seed-build", "seed-import", "seed-verify", "seed-bench"):
        if not os.access(os.path.join(options.bin, tool), os.X_OK):
            print(f"{options.bin}/{tool}: not found", file=sys.stderr)
            return 1
    try:
        Bench(options).run()
    except (BenchError, subprocess.CalledProcessError, OSError) as error:
        print(f"bench: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
