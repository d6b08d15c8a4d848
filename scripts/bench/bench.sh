#!/usr/bin/env bash
# Benchmarks SeedSync against plain baselines on identical data and checks the targets of issue 25:
#   1 seed build        seed-build --gzip and seed-build (no gzip) vs sqlite3 .import of CSV, Python
#                       json.load + executemany, and sqlite-utils insert (only when installed), each into
#                       a fresh SQLite file; targets: 1.5x and 1.3x .import, the build without gzip 1.5x
#                       as fast as Python (which writes no .gz either; the --gzip ratio is printed too),
#                       150 MB
#   2 first install     seed-import of a seed at the server's revision vs sha256sum + cp; target 1.2x
#   3 incremental sync  seed-import --once of about --changes row changes: changes per second; and
#                       sqlite3 writing the rows they leave, staged beforehand, in one transaction
#                       (stage_changes): what SQLite itself needs for the same end state
#   4 growth            seed-import --once of 400 change sets at 10,000 events and at --events; the
#                       same sqlite3 baseline at both sizes
#   5 seed size         the seed, gzipped, against the JSON and CSV exports of the same rows
#   6 migration         one text column added to events: the installed app's in-place migration
#                       (seed-import, the column downloaded) vs a full download of the new version
#                       (seed-build): time and bytes received; targets: at most a fifth of each
#   7 pinned seed       a seed 50,000 revisions behind, registered so compaction kept its history:
#                       seed-import installs it and catches up by sync, no snapshot
#   8 edit sessions     the installed app catches up case 3's change sets (40,000 by default) in a
#                       SyncEngine (seed-bench edit) while an edit session opens every 250 ms: the
#                       time beginEdit() takes to return, the engine on its own connection and
#                       through the app's GRDB DatabasePool; target: p99 under 50 ms
#   9 scale             the same at --events and at a tenth of it (--events / 10 events, --locations / 10
#                       locations), each its own server: seed-build (no gzip) time per row and peak memory,
#                       large / small (targets: linear and flat, at most 1.1 each); POST /v1/sync from 100
#                       revisions behind, large / small (as fast: at most 1.2); at the large size, a
#                       snapshot page of 1,000 events 90 % into the table against the first (at most 1.2).
#                       Requests are timed one after another on one connection
#                       (scripts/bench/request_times.py), medians of 200. `--events 10000000` is the
#                       10M-against-1M run.
# Every measured command runs K times under /usr/bin/time -f '%e %M' with its output in OUT/runs/; the
# MEDIAN wall time and median peak resident memory are reported, and ratios are taken of medians.
# Prints an aligned table on stdout, progress on stderr, and writes every number to OUT/bench.json.
# Exits non-zero only when something fails to run, not when a target is missed.
#
# Usage: scripts/bench/bench.sh [--events N] [--locations N] [--repeat K] [--changes N] [--out DIR] [--bin DIR] [--only CASES]
#   --events N     demo events in the server database (default 1000000)
#   --locations N  demo locations (default 50000)
#   --repeat K     runs of each measured command (default 3)
#   --changes N    row changes on the server for the incremental sync (default 100000)
#   --out DIR      databases, exports, run logs and bench.json (default .build/bench, git-ignored);
#                  relative paths here are from the repository's root
#   --bin DIR      folder with seed-server, seed-build, seed-import and seed-verify already built
#                  (default: build them, release)
#   --only CASES   comma-separated cases to run, such as 1,5 (default 1,2,3,4,5,6,7,8,9)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/setup.sh
source scripts/lib/server.sh

usage="usage: scripts/bench/bench.sh [--events N] [--locations N] [--repeat K] [--changes N] [--out DIR] [--bin DIR] [--only CASES]"
events=1000000
locations=50000
repeat=3
changes=100000
out=.build/bench
bin=
only=1,2,3,4,5,6,7,8,9
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || { echo "$usage" >&2; exit 64; } # every option takes a value
    case $1 in
        --events) events=${2:-}; shift 2 ;;
        --locations) locations=${2:-}; shift 2 ;;
        --repeat) repeat=${2:-}; shift 2 ;;
        --changes) changes=${2:-}; shift 2 ;;
        --out) out=${2:-}; shift 2 ;;
        --bin) bin=${2:-}; shift 2 ;;
        --only) only=${2:-}; shift 2 ;;
        *) echo "$usage" >&2; exit 64 ;;
    esac
done
for number in "$events" "$locations" "$repeat" "$changes"; do
    [[ $number =~ ^[1-9][0-9]*$ ]] || { echo "$usage" >&2; exit 64; }
done
if ! [[ $only =~ ^[1-9](,[1-9])*$ ]] || [ -z "$out" ]; then echo "$usage" >&2; exit 64; fi

# The growth case: its small dataset, and the change sets synced at both sizes (same --seed).
GROWTH_EVENTS=10000
GROWTH_LOCATIONS=1000
GROWTH_CHANGE_SETS=400
MUTATE_SEED=1
# The pinned-seed case: change sets between the seed and the server.
PINNED_CHANGE_SETS=50000

# ---------------------------------------------------------------------------------------------------
# Helpers

# wants N: whether case N was asked for with --only.
wants() { [[ ",$only," == *",$1,"* ]]; }

step() { echo "==> $*" >&2; }

# ensure_bench_tools: /usr/bin/time (the measurements), python3 (the Python baseline and bench.json) and
# sqlite3 (exports and the sqlite3 baseline). As root, apt-get installs the missing ones. sqlite-utils is
# optional and never installed: its row says "not installed" when it is not on PATH.
ensure_bench_tools() {
    local missing=()
    [ -x /usr/bin/time ] || missing+=(time)
    command -v python3 >/dev/null 2>&1 || missing+=(python3)
    command -v sqlite3 >/dev/null 2>&1 || missing+=(sqlite3)
    install_packages "${missing[@]}"
}

# measure CASE NAME RUN COMMAND...: runs COMMAND once under /usr/bin/time, its stdout, stderr and time in
# OUT/runs/NAME.RUN.{out,err,time}, and appends a line to runs.tsv. Figures: wall seconds from a
# nanosecond clock around the run (%e has 10 ms steps, too coarse for small runs), time's %e, and %M: the
# peak resident memory in KiB of the process (or of the largest process it waited for, for `sh -c`).
# A failing command stops the benchmark.
measure() {
    local case=$1 name=$2 run=$3 started ended elapsed rss wall
    shift 3
    local log="$out/runs/$name.$run"
    started=$(date +%s.%N)
    if ! /usr/bin/time -f '%e %M' -o "$log.time" "$@" >"$log.out" 2>"$log.err"; then
        echo "$name (run $run) failed: $*" >&2
        tail -n 20 "$log.err" "$log.time" >&2
        exit 1
    fi
    ended=$(date +%s.%N)
    read -r elapsed rss <"$log.time"
    wall=$(awk -v a="$started" -v b="$ended" 'BEGIN { printf "%.3f", b - a }')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$case" "$name" "$run" "$wall" "$elapsed" "$rss" "$log.out" >>"$out/runs.tsv"
    echo "    $name run $run: $wall s, $((rss / 1024)) MB peak" >&2
}

# median_of: the median of the numbers on stdin (the mean of the middle two for an even count).
median_of() {
    sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) exit 1
        if (NR % 2) printf "%.3f\n", v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# median_wall NAME, median_mb NAME: median wall seconds, and median peak resident MB (KiB / 1024), of
# NAME's runs in runs.tsv.
median_wall() { awk -F '\t' -v name="$1" '$2 == name { print $4 }' "$out/runs.tsv" | median_of; }
median_mb() { awk -F '\t' -v name="$1" '$2 == name { print $6 / 1024 }' "$out/runs.tsv" | median_of | xargs printf '%.1f\n'; }

# json_field FILE FIELD: a field of the JSON object in FILE, such as seconds.download; A+B+C sums fields.
json_field() {
    python3 -c 'import json, sys
report = json.load(open(sys.argv[1]))
def get(path):
    value = report
    for key in path.split("."):
        value = value[key]
    return value
print(sum(get(path) for path in sys.argv[2].split("+")) if "+" in sys.argv[2] else get(sys.argv[2]))' "$1" "$2"
}
# report_median NAME FIELD: the median of FIELD over the --json reports of NAME's runs.
report_median() {
    local run
    for ((run = 1; run <= repeat; run++)); do json_field "$out/runs/$1.$run.out" "$2"; done | median_of
}

# ratio A B: A / B to 2 decimals ("n/a" when B is 0). verdict VALUE OP TARGET: met or missed.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "n/a"; else printf "%.2f\n", a / b }'; }
# per_second COUNT SECONDS: COUNT / SECONDS, rounded ("n/a" when SECONDS is 0).
per_second() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "n/a"; else printf "%.0f\n", a / b }'; }
verdict() {
    awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN {
        if (v == "n/a") print "n/a"
        else if ((op == "<=" && v + 0 <= t + 0) || (op == ">=" && v + 0 >= t + 0)) print "met"
        else print "missed" }'
}

# result CASE NAME LABEL WALL MB [MEASURE VALUE [OP TARGET]]: one row of the table and of bench.json's
# results; NAME is the contender in runs.tsv (empty for rows that are not runs). With OP and TARGET the
# value is checked against the target.
result() {
    local case=$1 name=$2 label=$3 wall=$4 mb=$5 measure=${6:-} value=${7:-} op=${8:-} target=${9:-} outcome=
    [ -n "$op" ] && outcome=$(verdict "$value" "$op" "$target")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$case" "$name" "$label" "$wall" "$mb" "$measure" "$value" \
        "$op" "$target" "$outcome" >>"$out/results.tsv"
}
# contender CASE NAME LABEL [MEASURE VALUE [OP TARGET]]: a result row with NAME's median wall and MB.
contender() {
    local case=$1 name=$2 label=$3
    shift 3
    result "$case" "$name" "$label" "$(median_wall "$name")" "$(median_mb "$name")" "$@"
}
# fact SECTION KEY VALUE: a figure for bench.json (section machine, parameters, or a case's).
fact() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$out/facts.tsv"; }
# note TEXT: printed under the table and kept in bench.json.
note() { echo "$1" >>"$out/notes.txt"; }

# quoted_columns DATABASE TABLE: TABLE's columns in DATABASE, quoted, comma-separated, in table order.
quoted_columns() {
    sqlite3 "$1" "SELECT group_concat('\"' || name || '\"', ', ') FROM pragma_table_info('$2')"
}

# The sqlite3 baseline of cases 3 and 4: SQLite itself bringing the installed database to the server's
# rows, the least work that does it. stage_changes SERVER INSTALLED DIR (untimed) writes DIR/rows.sqlite,
# every row of SERVER's data tables with a revision after INSTALLED's, in key order, DIR/deleted.sqlite,
# the keys INSTALLED has and SERVER does not, and DIR/apply.sql, which applies them with seed-import's
# settings (WAL, synchronous NORMAL, a 32 MiB cache, foreign keys on) in one transaction: one upsert
# per table (locations first), then the deletes; closing checkpoints, as seed-import's does. Each row
# is written once, set-based: no network, no JSON, no checks but SQLite's own.
stage_changes() {
    local server=$1 installed=$2 dir=$3 revision table columns key assignments conflict
    revision=$(sqlite3 "$installed" "SELECT value FROM _seedsync_seed WHERE key = 'revision'")
    remove_db "$dir/rows.sqlite"
    remove_db "$dir/deleted.sqlite"
    {
        echo "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -32768;"
        echo "PRAGMA foreign_keys = ON; ATTACH '$dir/rows.sqlite' AS rows; ATTACH '$dir/deleted.sqlite' AS deleted;"
        echo "BEGIN;"
    } >"$dir/apply.sql"
    local deletes=()
    for table in "${tables[@]}"; do
        columns=$(quoted_columns "$installed" "$table")
        key=$(sqlite3 "$installed" "SELECT '\"' || name || '\"' FROM pragma_table_info('$table') WHERE pk = 1")
        assignments=$(sqlite3 "$installed" "SELECT group_concat('\"' || name || '\" = excluded.\"' || name || '\"', ', ')
            FROM pragma_table_info('$table') WHERE pk = 0")
        sqlite3 -bail "$dir/rows.sqlite" "ATTACH '$server' AS server;
            CREATE TABLE \"$table\" AS SELECT $columns FROM server.\"$table\" WHERE revision > $revision ORDER BY $key"
        sqlite3 -bail "$dir/deleted.sqlite" "ATTACH '$server' AS server; ATTACH '$installed' AS installed;
            CREATE TABLE \"$table\" AS SELECT $key FROM installed.\"$table\" EXCEPT SELECT $key FROM server.\"$table\" ORDER BY 1"
        # A table of keys alone has nothing to update.
        conflict="DO UPDATE SET $assignments"
        [ -n "$assignments" ] || conflict="DO NOTHING"
        echo "INSERT INTO main.\"$table\" ($columns) SELECT $columns FROM rows.\"$table\" WHERE true
            ON CONFLICT ($key) $conflict;" >>"$dir/apply.sql"
        deletes=("DELETE FROM main.\"$table\" WHERE $key IN (SELECT $key FROM deleted.\"$table\");" "${deletes[@]}")
    done
    printf '%s\n' "${deletes[@]}" "COMMIT;" >>"$dir/apply.sql"
}
# staged_rows DIR: the rows DIR/apply.sql writes or deletes.
staged_rows() {
    local dir=$1 table total=0
    for table in "${tables[@]}"; do
        total=$((total + $(sqlite3 "$dir/rows.sqlite" "SELECT count(*) FROM \"$table\"") + $(sqlite3 "$dir/deleted.sqlite" "SELECT count(*) FROM \"$table\"")))
    done
    echo "$total"
}
# sqlite3_apply_runs CASE NAME INSTALLED DIR: times sqlite3 running DIR/apply.sql on a copy of INSTALLED,
# repeat times, and fails unless its data tables end as seed-import's did in DIR/app.sqlite.
sqlite3_apply_runs() {
    local case=$1 name=$2 installed=$3 dir=$4 run table
    for ((run = 1; run <= repeat; run++)); do
        copy_db "$installed" "$dir/sqlite3.sqlite"
        measure "$case" "$name" "$run" sqlite3 -bail "$dir/sqlite3.sqlite" ".read '$dir/apply.sql'"
    done
    for table in "${tables[@]}"; do
        [ "$(sqlite3 "$dir/sqlite3.sqlite" "ATTACH '$dir/app.sqlite' AS app; SELECT
            (SELECT count(*) FROM (SELECT * FROM main.\"$table\" EXCEPT SELECT * FROM app.\"$table\")) +
            (SELECT count(*) FROM (SELECT * FROM app.\"$table\" EXCEPT SELECT * FROM main.\"$table\"))")" = 0 ] || {
            echo "$name: $table differs from seed-import's in $dir/app.sqlite" >&2
            exit 1
        }
    done
}

# remove_db PATH: a database and the files SQLite and seed-import keep beside it.
# mutated_copy DIR: DIR/server.sqlite, a copy of the server database with about --changes row changes
# after the seed's revision (cases 3 and 8). mutate writes change sets of about 2.5 row changes each
# (creates, updates, deletes): ceil(changes / 2.5), in $change_sets.
mutated_copy() {
    mkdir -p "$1"
    copy_db "$out/server.sqlite" "$1/server.sqlite"
    change_sets=$(((changes * 2 + 4) / 5))
    echo "    mutate: $change_sets change sets" >&2
    "$bin/seed-server" mutate --database "$1/server.sqlite" --changes "$change_sets" --seed "$MUTATE_SEED" >&2
}

remove_db() { rm -f "$1" "$1-wal" "$1-shm" "$1-journal" "$1.lock"; }
# copy_db FROM TO: a closed database, with its -wal when it has one, over a removed TO.
copy_db() {
    remove_db "$2"
    cp "$1" "$2"
    if [ -e "$1-wal" ]; then cp "$1-wal" "$2-wal"; fi
}
# serve DATABASE: (re)starts seed-server on DATABASE; SERVER_URL is where it listens. Every snapshot
# page is read from the store (--snapshot-max-age 0), as for a build's first run: repeated runs of a
# case would otherwise get the pages the server kept from the run before (load.sh measures those).
serve() {
    stop_server
    start_server "$bin" "$1" "$work/token" "$work" "" "" --snapshot-max-age 0
    echo "    serving $1 at $SERVER_URL (pid $SERVER_PID)" >&2
}
# install_or_sync SEED DATABASE: seed-import --once --json with the benchmark's token and server.
install_or_sync() {
    "$bin/seed-import" --seed "$1" --database "$2" --server "$SERVER_URL" --token-file "$work/token" --once --json
}
# same_counts DATABASE: fails unless every data table of DATABASE has as many rows as in the seed.
same_counts() {
    local table expected actual
    for table in "${tables[@]}"; do
        expected=$(sqlite3 "$out/seed.sqlite" "SELECT count(*) FROM \"$table\"")
        actual=$(sqlite3 "$1" "SELECT count(*) FROM \"$table\"")
        [ "$expected" = "$actual" ] || { echo "$1: $table has $actual rows, the seed $expected" >&2; exit 1; }
    done
}
size() { stat -c %s "$1"; }
mb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

# ---------------------------------------------------------------------------------------------------
# Tools, machine, data

step "tools"
ensure_bench_tools
if [ -z "$bin" ]; then
    ensure_system_packages
    ensure_swift
    for product in seed-server seed-build seed-import seed-verify seed-bench; do
        swift build -c release --product "$product" >&2
    done
    bin=$(swift build -c release --show-bin-path)
fi
for tool in seed-server seed-build seed-import seed-verify seed-bench; do
    [ -x "$bin/$tool" ] || { echo "$bin/$tool: not found" >&2; exit 1; }
done
python=$(python3 -c 'import sys; print(sys.executable)') # the interpreter itself, not a pyenv shim

# Everything this script makes in OUT, removed first; anything else in OUT is left alone.
mkdir -p "$out"
rm -rf "$out/data" "$out/runs" "$out/build" "$out/install" "$out/installed" "$out/incremental" "$out/growth" \
    "$out/migration" "$out/pinned" "$out/scale" \
    "$out/baseline" "$out/runs.tsv" "$out/results.tsv" "$out/facts.tsv" "$out/notes.txt" "$out/bench.json"
remove_db "$out/server.sqlite"
rm -f "$out/seed.sqlite" "$out"/seed.sqlite.*
mkdir -p "$out/data" "$out/runs" "$out/baseline" "$out/install" "$out/installed"
: >"$out/runs.tsv"
: >"$out/results.tsv"

work=$(mktemp -d)
trap 'stop_server; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
new_token "$work/token"

fact machine nproc "$(nproc)"
fact machine cpu "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
fact machine memoryKiB "$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)"
fact machine uname "$(uname -sr)"
fact machine sqlite3 "$(sqlite3 --version)"
fact machine swift "$( (ensure_swift 2>/dev/null && swift --version 2>&1 | head -n 1) || echo 'not found')"
fact machine python3 "$("$python" --version 2>&1)"
fact machine sqliteUtils "$(sqlite-utils --version 2>/dev/null || echo 'not installed')"
fact machine commit "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
fact machine bin "$bin"
fact parameters events "$events"
fact parameters locations "$locations"
fact parameters repeat "$repeat"
fact parameters changes "$changes"
fact parameters only "$only"

step "server database: $events events, $locations locations"
"$bin/seed-server" init --database "$out/server.sqlite" --demo --events "$events" --locations "$locations" >&2
serve "$out/server.sqlite"

# The reference seed: built once, untimed (it also warms the server and the page cache for case 1). It
# is the seed of cases 1 to 8, and its data tables give the baselines their schema and rows; case 9
# makes its own.
if [ "$only" != 9 ]; then
    step "reference seed (untimed)"
    "$bin/seed-build" --server "$SERVER_URL" --token-file "$work/token" --out "$out/seed.sqlite" --gzip --quiet
    "$bin/seed-verify" "$out/seed.sqlite" >/dev/null
    revision=$(json_field "$out/seed.sqlite.manifest.json" revision)
    fact parameters seedRevision "$revision"
    # Data tables in creation order (locations first): all but _seedsync_* and sqlite_*.
    mapfile -t tables < <(sqlite3 "$out/seed.sqlite" "SELECT name FROM sqlite_schema WHERE type = 'table'
        AND name NOT LIKE '\_%' ESCAPE '\' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY rowid")
    [ ${#tables[@]} -gt 0 ] || { echo "$out/seed.sqlite: no data tables" >&2; exit 1; }
fi

if wants 1 || wants 5; then
    # The seed's schema, as `.schema` shows it minus the _seedsync_* tables: tables.sql, and indexes.sql,
    # which the baselines run after loading the rows (the cheaper order for them).
    step "schema and exports of the seed's rows"
    sqlite3 "$out/seed.sqlite" "SELECT sql || ';' FROM sqlite_schema WHERE type = 'table'
        AND name NOT LIKE '\_%' ESCAPE '\' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY rowid" >"$out/data/tables.sql"
    sqlite3 "$out/seed.sqlite" "SELECT sql || ';' FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL
        AND tbl_name NOT LIKE '\_%' ESCAPE '\' ORDER BY rowid" >"$out/data/indexes.sql"
    : >"$out/data/import.sql"
    for table in "${tables[@]}"; do
        columns=$(quoted_columns "$out/seed.sqlite" "$table")
        # CSV without header (NULL comes out as an empty field), and JSON: an array of objects.
        sqlite3 -csv "$out/seed.sqlite" "SELECT $columns FROM \"$table\" ORDER BY id" >"$out/data/$table.csv"
        sqlite3 -json "$out/seed.sqlite" "SELECT $columns FROM \"$table\" ORDER BY id" >"$out/data/$table.json"
        [ -s "$out/data/$table.json" ] || echo '[]' >"$out/data/$table.json"
        echo ".import --csv '$out/data/$table.csv' $table" >>"$out/data/import.sql"
    done
fi

# The seed installed by seed-import while the server is at the seed's revision, kept as it was when
# seed-import exited: cases 3 and 4 start every run from a copy of it.
if wants 3 || wants 4 || wants 6 || wants 8; then
    step "installed app database (untimed)"
    install_or_sync "$out/seed.sqlite" "$out/installed/app.sqlite" >"$work/install.json"
    [ "$(json_field "$work/install.json" installed)" = True ] || { echo "seed-import did not install the seed" >&2; exit 1; }
fi

# ---------------------------------------------------------------------------------------------------
# Case 1: seed build. seed-build downloads every row over loopback into a fresh seed and gzips it; each
# baseline loads the same rows from local files into a fresh SQLite file with the seed's data tables.

if wants 1; then
    step "case 1: seed build"
    for ((run = 1; run <= repeat; run++)); do
        rm -rf "$out/build" && mkdir -p "$out/build"
        measure 1 seed-build "$run" "$bin/seed-build" --server "$SERVER_URL" --token-file "$work/token" \
            --out "$out/build/seed.sqlite" --gzip --json
    done
    for ((run = 1; run <= repeat; run++)); do
        rm -rf "$out/build" && mkdir -p "$out/build"
        measure 1 seed-build-plain "$run" "$bin/seed-build" --server "$SERVER_URL" --token-file "$work/token" \
            --out "$out/build/seed.sqlite" --json
    done
    # sqlite3 shell: one invocation, tables, .import --csv of each table (locations first), indexes.
    for ((run = 1; run <= repeat; run++)); do
        remove_db "$out/baseline/sqlite3.sqlite"
        measure 1 sqlite3-import "$run" sqlite3 -bail "$out/baseline/sqlite3.sqlite" \
            ".read '$out/data/tables.sql'" ".read '$out/data/import.sql'" ".read '$out/data/indexes.sql'"
    done
    same_counts "$out/baseline/sqlite3.sqlite"
    # Python: json.load of each file, executemany in one transaction (scripts/bench/json_to_sqlite.py).
    loads=()
    for table in "${tables[@]}"; do loads+=("$table=$out/data/$table.json"); done
    for ((run = 1; run <= repeat; run++)); do
        remove_db "$out/baseline/python.sqlite"
        measure 1 python-json "$run" "$python" scripts/bench/json_to_sqlite.py "$out/baseline/python.sqlite" \
            "$out/data/tables.sql" "$out/data/indexes.sql" "${loads[@]}"
    done
    same_counts "$out/baseline/python.sqlite"
    # sqlite-utils insert of each JSON file into the same tables, when it is installed.
    if command -v sqlite-utils >/dev/null 2>&1; then
        for ((run = 1; run <= repeat; run++)); do
            remove_db "$out/baseline/sqlite-utils.sqlite"
            # shellcheck disable=SC2016 # expanded by the inner shell
            measure 1 sqlite-utils "$run" sh -c 'db=$1 data=$2; shift 2
                sqlite3 -bail "$db" <"$data/tables.sql" || exit 1
                for table; do sqlite-utils insert "$db" "$table" "$data/$table.json" || exit 1; done
                sqlite3 -bail "$db" <"$data/indexes.sql"' sh "$out/baseline/sqlite-utils.sqlite" "$out/data" "${tables[@]}"
        done
        same_counts "$out/baseline/sqlite-utils.sqlite"
    fi

    build=$(median_wall seed-build)
    contender "1 seed build" seed-build "seed-build --gzip" "seed-build / sqlite3" \
        "$(ratio "$build" "$(median_wall sqlite3-import)")" "<=" 1.5
    result "1 seed build" "" "  seed-build peak memory" "" "" "peak MB" "$(median_mb seed-build)" "<=" 150
    # seed-build's own --json report: seconds spent downloading pages, catching up with /v1/sync, and
    # finishing (indexes, checks, manifest, gzip); medians over the runs.
    for part in download catchUp finish total; do
        seconds=$(report_median seed-build "seconds.$part")
        fact seedBuild "medianSeconds.$part" "$seconds"
        result "1 seed build" "" "  - $part (its --json)" "$seconds" ""
    done
    contender "1 seed build" seed-build-plain "seed-build (no gzip)" "seed-build / sqlite3" \
        "$(ratio "$(median_wall seed-build-plain)" "$(median_wall sqlite3-import)")" "<=" 1.3
    contender "1 seed build" sqlite3-import "sqlite3 .import --csv"
    # Like for like: the Python baseline writes no .gz either.
    contender "1 seed build" python-json "python json + executemany" "python / seed-build (no gzip)" \
        "$(ratio "$(median_wall python-json)" "$(median_wall seed-build-plain)")" ">=" 1.5
    result "1 seed build" "" "  the same against seed-build --gzip" "" "" "python / seed-build" \
        "$(ratio "$(median_wall python-json)" "$build")"
    if command -v sqlite-utils >/dev/null 2>&1; then
        contender "1 seed build" sqlite-utils "sqlite-utils insert" "sqlite-utils / seed-build (no gzip)" \
            "$(ratio "$(median_wall sqlite-utils)" "$(median_wall seed-build-plain)")"
    else
        result "1 seed build" sqlite-utils "sqlite-utils insert" "" "" "not installed"
    fi
    note "case 1: CSV cannot express NULL, so the sqlite3 .import baseline stores '' for NULL, and keeps REALs to 15 significant digits: a small advantage for that baseline."
    note "case 1: the baselines load local files into a fresh file: tables, rows, then indexes; seed-build downloads the rows from the server over loopback and also writes the .gz and the manifest."
fi

# ---------------------------------------------------------------------------------------------------
# Case 2: first install. The server is at the seed's revision, so seed-import only installs: copy,
# SHA-256 against the manifest, checks. The baseline hashes and copies the same file.

if wants 2; then
    step "case 2: first install"
    for ((run = 1; run <= repeat; run++)); do
        remove_db "$out/install/app.sqlite"
        # Untimed: the writeback of earlier cases' files would otherwise land in the install's fsync.
        sync
        measure 2 seed-import-install "$run" "$bin/seed-import" --seed "$out/seed.sqlite" --database "$out/install/app.sqlite" \
            --server "$SERVER_URL" --token-file "$work/token" --once --json
    done
    if [ "$(json_field "$out/runs/seed-import-install.1.out" installed)" != True ] ||
        [ "$(json_field "$out/runs/seed-import-install.1.out" changeSets)" != 0 ]; then
        echo "case 2: seed-import did not just install the seed: $(cat "$out/runs/seed-import-install.1.out")" >&2
        exit 1
    fi
    for ((run = 1; run <= repeat; run++)); do
        remove_db "$out/install/app.sqlite"
        sync
        # shellcheck disable=SC2016 # expanded by the inner shell
        measure 2 sha256-cp "$run" sh -c 'sha256sum "$1" && cp "$1" "$2"' sh "$out/seed.sqlite" "$out/install/app.sqlite"
    done
    contender "2 first install" seed-import-install "seed-import (install only)" "seed-import / sha256+cp" \
        "$(ratio "$(median_wall seed-import-install)" "$(median_wall sha256-cp)")" "<=" 1.2
    contender "2 first install" sha256-cp "sha256sum && cp"
fi

# ---------------------------------------------------------------------------------------------------
# Case 3: incremental sync. A copy of the server database gets about --changes row changes after the
# seed's revision; every run starts from the installed app database and applies them all.

if wants 3; then
    step "case 3: incremental sync"
    stop_server
    mutated_copy "$out/incremental"
    serve "$out/incremental/server.sqlite"
    for ((run = 1; run <= repeat; run++)); do
        copy_db "$out/installed/app.sqlite" "$out/incremental/app.sqlite"
        measure 3 seed-import-sync "$run" "$bin/seed-import" --seed "$out/seed.sqlite" --database "$out/incremental/app.sqlite" \
            --server "$SERVER_URL" --token-file "$work/token" --once --json
    done
    stop_server
    stage_changes "$out/incremental/server.sqlite" "$out/installed/app.sqlite" "$out/incremental"
    sqlite3_apply_runs 3 sqlite3-apply "$out/installed/app.sqlite" "$out/incremental"
    report="$out/runs/seed-import-sync.1.out"
    applied_sets=$(json_field "$report" changeSets)
    applied=$(json_field "$report" inserted+updated+deleted) # row changes applied: the same every run
    wall=$(median_wall seed-import-sync)
    own=$(report_median seed-import-sync seconds) # seed-import's own seconds, without process start
    fact incremental changeSetsWritten "$change_sets"
    fact incremental changeSets "$applied_sets"
    fact incremental changes "$applied"
    fact incremental inserted "$(json_field "$report" inserted)"
    fact incremental updated "$(json_field "$report" updated)"
    fact incremental deleted "$(json_field "$report" deleted)"
    fact incremental medianWallSeconds "$wall"
    fact incremental medianReportSeconds "$own"
    fact incremental changesPerSecondWall "$(per_second "$applied" "$wall")"
    fact incremental changesPerSecondReport "$(per_second "$applied" "$own")"
    contender "3 incremental" seed-import-sync "seed-import --once ($applied_sets sets, $applied changes)" \
        "changes/s (wall)" "$(per_second "$applied" "$wall")" ">=" 100000
    result "3 incremental" "" "  - its --json seconds" "$own" "" "changes/s (own seconds)" \
        "$(per_second "$applied" "$own")"
    staged=$(staged_rows "$out/incremental")
    baseline=$(median_wall sqlite3-apply)
    fact incremental sqlite3Rows "$staged"
    fact incremental sqlite3MedianWallSeconds "$baseline"
    contender "3 incremental" sqlite3-apply "sqlite3, the same end rows ($staged rows)" \
        "changes/s (wall)" "$(per_second "$applied" "$baseline")"
    result "3 incremental" "" "  seed-import against it" "" "" "seed-import / sqlite3" "$(ratio "$wall" "$baseline")"
    note "case 3: --changes $changes row changes asked; mutate writes about 2.5 a change set, so $change_sets change sets (ceil(changes / 2.5)) were written; $applied row changes in $applied_sets change sets were applied."
    note "case 3: the sqlite3 baseline writes the $staged rows (and deletes) those changes leave, staged beforehand from the server's tables in key order, with seed-import's settings in one transaction (see stage_changes); its changes/s counts the same $applied changes."
fi

# ---------------------------------------------------------------------------------------------------
# Case 4: growth. The same $GROWTH_CHANGE_SETS change sets (mutate --seed $MUTATE_SEED) synced into a
# small and a large installed database: the time should not grow much with the data already there.

# growth_runs NAME SERVER_DB SEED INSTALLED: mutates SERVER_DB, serves it, and times seed-import --once
# from a copy of INSTALLED, repeat times.
growth_runs() {
    local name=$1 server=$2 seed=$3 installed=$4 dir run
    dir=$(dirname "$server")
    stop_server
    "$bin/seed-server" mutate --database "$server" --changes "$GROWTH_CHANGE_SETS" --seed "$MUTATE_SEED" >&2
    serve "$server"
    for ((run = 1; run <= repeat; run++)); do
        copy_db "$installed" "$dir/app.sqlite"
        measure 4 "$name" "$run" "$bin/seed-import" --seed "$seed" --database "$dir/app.sqlite" \
            --server "$SERVER_URL" --token-file "$work/token" --once --json
    done
    stop_server
    stage_changes "$server" "$installed" "$dir"
    sqlite3_apply_runs 4 "$name-sqlite3" "$installed" "$dir"
}

if wants 4; then
    step "case 4: growth"
    mkdir -p "$out/growth/small" "$out/growth/large"
    # Small: its own server database, seed and installed database (untimed).
    small=$out/growth/small
    "$bin/seed-server" init --database "$small/server.sqlite" --demo --events "$GROWTH_EVENTS" --locations "$GROWTH_LOCATIONS" >&2
    serve "$small/server.sqlite"
    "$bin/seed-build" --server "$SERVER_URL" --token-file "$work/token" --out "$small/seed.sqlite" --quiet
    install_or_sync "$small/seed.sqlite" "$small/installed.sqlite" >/dev/null
    growth_runs growth-small "$small/server.sqlite" "$small/seed.sqlite" "$small/installed.sqlite"
    # Large: a copy of the untouched server database, whose seed and installed database are the reference
    # ones (built from the same data at the same revision).
    copy_db "$out/server.sqlite" "$out/growth/large/server.sqlite"
    growth_runs growth-large "$out/growth/large/server.sqlite" "$out/seed.sqlite" "$out/installed/app.sqlite"
    for name in growth-small growth-large; do
        fact growth "$name.changeSets" "$(json_field "$out/runs/$name.1.out" changeSets)"
        fact growth "$name.changes" "$(json_field "$out/runs/$name.1.out" inserted+updated+deleted)"
        fact growth "$name.medianWallSeconds" "$(median_wall "$name")"
    done
    contender "4 growth" growth-small "sync at $GROWTH_EVENTS events"
    contender "4 growth" growth-large "sync at $events events" "large / small" \
        "$(ratio "$(median_wall growth-large)" "$(median_wall growth-small)")" "<=" 1.5
    contender "4 growth" growth-small-sqlite3 "sqlite3, the same end rows, at $GROWTH_EVENTS events"
    contender "4 growth" growth-large-sqlite3 "sqlite3, the same end rows, at $events events" "large / small" \
        "$(ratio "$(median_wall growth-large-sqlite3)" "$(median_wall growth-small-sqlite3)")"
    note "case 4: $GROWTH_CHANGE_SETS change sets (mutate --seed $MUTATE_SEED) at each size: $(json_field "$out/runs/growth-small.1.out" inserted+updated+deleted) row changes at $GROWTH_EVENTS events, $(json_field "$out/runs/growth-large.1.out" inserted+updated+deleted) at $events; the large size reuses the reference seed and its installed database (same data, same revision)."
fi

# ---------------------------------------------------------------------------------------------------
# Case 5: seed size, in bytes: the seed, its .gz, and the JSON and CSV exports of the same rows.

if wants 5; then
    step "case 5: seed size"
    seed_bytes=$(size "$out/seed.sqlite")
    gz_bytes=$(size "$out/seed.sqlite.gz")
    json_bytes=0
    csv_bytes=0
    for table in "${tables[@]}"; do
        json_bytes=$((json_bytes + $(size "$out/data/$table.json")))
        csv_bytes=$((csv_bytes + $(size "$out/data/$table.csv")))
    done
    fact sizes seedBytes "$seed_bytes"
    fact sizes gzipBytes "$gz_bytes"
    fact sizes jsonBytes "$json_bytes"
    fact sizes csvBytes "$csv_bytes"
    result "5 seed size" "" "seed.sqlite: $(mb "$seed_bytes") MB" "" "" "seed / JSON" "$(ratio "$seed_bytes" "$json_bytes")"
    result "5 seed size" "" "seed.sqlite.gz: $(mb "$gz_bytes") MB" "" "" "gz / JSON" "$(ratio "$gz_bytes" "$json_bytes")"
    result "5 seed size" "" "JSON exports: $(mb "$json_bytes") MB" "" "" "" ""
    result "5 seed size" "" "CSV exports: $(mb "$csv_bytes") MB" "" "" "CSV / JSON" "$(ratio "$csv_bytes" "$json_bytes")"
fi

# ---------------------------------------------------------------------------------------------------
# Case 6: migration. A copy of the server database is upgraded to a version 2 with one more text
# field on events, `notes`, non-null with a default (every row has a value to download). The
# installed app database (version 1, at the server's revision) migrates in place: seed-import
# downloads the key and `notes` of every event; the baseline downloads the whole new version
# (seed-build). Time and bytes received, each against the other.

if wants 6; then
    step "case 6: migration"
    stop_server
    mkdir -p "$out/migration"
    copy_db "$out/server.sqlite" "$out/migration/server.sqlite"
    "$python" - "$out/seed.sqlite" "$out/migration/schema-v2.json" <<'PY'
import json, sqlite3, sys
schema = json.loads(sqlite3.connect(sys.argv[1]).execute("SELECT value FROM _seedsync_seed WHERE key = 'schema'").fetchone()[0])
schema["schemaVersion"] += 1
events = next(t for t in schema["types"] if t["name"] == "events")
events["fields"].append({"name": "notes", "type": "text", "nullable": False, "default": "no notes yet"})
json.dump(schema, open(sys.argv[2], "w"))
PY
    "$bin/seed-server" schema upgrade --database "$out/migration/server.sqlite" --schema "$out/migration/schema-v2.json" >&2
    serve "$out/migration/server.sqlite"
    for ((run = 1; run <= repeat; run++)); do
        copy_db "$out/installed/app.sqlite" "$out/migration/app.sqlite"
        measure 6 seed-import-migrate "$run" "$bin/seed-import" --seed "$out/seed.sqlite" --database "$out/migration/app.sqlite" \
            --server "$SERVER_URL" --token-file "$work/token" --once --json
    done
    [ "$(sqlite3 "$out/migration/app.sqlite" "PRAGMA user_version")" = 2 ] || { echo "case 6: the app was not migrated" >&2; exit 1; }
    for ((run = 1; run <= repeat; run++)); do
        rm -rf "$out/migration/build" && mkdir -p "$out/migration/build"
        measure 6 seed-build-v2 "$run" "$bin/seed-build" --server "$SERVER_URL" --token-file "$work/token" \
            --out "$out/migration/build/seed.sqlite" --json
    done
    stop_server
    migrate_wall=$(median_wall seed-import-migrate)
    migrate_bytes=$(report_median seed-import-migrate migration.bytesDownloaded)
    build_wall=$(median_wall seed-build-v2)
    build_bytes=$(report_median seed-build-v2 bytesDownloaded)
    fact migration rowsDownloaded "$(json_field "$out/runs/seed-import-migrate.1.out" migration.rowsDownloaded)"
    fact migration medianBytes "$migrate_bytes"
    fact migration fullDownloadMedianBytes "$build_bytes"
    contender "6 migration" seed-import-migrate "seed-import: migrate in place" "migrate / full (time)" \
        "$(ratio "$migrate_wall" "$build_wall")" "<=" 0.2
    result "6 migration" "" "  bytes received: $(mb "$migrate_bytes") MB" "" "" "migrate / full (bytes)" \
        "$(ratio "$migrate_bytes" "$build_bytes")" "<=" 0.2
    contender "6 migration" seed-build-v2 "seed-build of version 2 (full)"
    result "6 migration" "" "  bytes received: $(mb "$build_bytes") MB" "" ""
    note "case 6: version 2 adds events.notes (text, default 'no notes yet') to every one of $events events; the app database migrates from version 1 at the server's revision; the baseline is a full seed-build of version 2."
fi

# ---------------------------------------------------------------------------------------------------
# Case 7: a pinned seed. $PINNED_CHANGE_SETS change sets after the reference seed, which is
# registered; compaction asked to keep 1,000 revisions keeps its history instead. seed-import installs
# the seed and catches up by sync (no snapshot download).

if wants 7; then
    step "case 7: pinned seed"
    stop_server
    mkdir -p "$out/pinned"
    copy_db "$out/server.sqlite" "$out/pinned/server.sqlite"
    new_token "$work/admin-token"
    start_server "$bin" "$out/pinned/server.sqlite" "$work/token" "$work" "" "$work/admin-token" --snapshot-max-age 0
    sha=$(json_field "$out/seed.sqlite.manifest.json" sha256)
    "$python" - "$SERVER_URL" "$(cat "$work/admin-token")" "$sha" "$revision" <<'PY'
import json, sys, urllib.request
url, token, sha, revision = sys.argv[1:]
body = json.dumps({"sha256": sha, "revision": int(revision), "schemaVersion": 1}).encode()
request = urllib.request.Request(url + "/v1/admin/seeds", data=body, headers={"Authorization": "Bearer " + token})
urllib.request.urlopen(request, timeout=30).read()
PY
    stop_server
    "$bin/seed-server" mutate --database "$out/pinned/server.sqlite" --changes "$PINNED_CHANGE_SETS" --seed "$MUTATE_SEED" >&2
    "$bin/seed-server" compact --database "$out/pinned/server.sqlite" --keep-revisions 1000 >"$work/compact.txt"
    grep -q "kept back to revision $revision" "$work/compact.txt" || { echo "case 7: compaction was not held back: $(cat "$work/compact.txt")" >&2; exit 1; }
    serve "$out/pinned/server.sqlite"
    for ((run = 1; run <= repeat; run++)); do
        remove_db "$out/pinned/app.sqlite"
        measure 7 seed-import-pinned "$run" "$bin/seed-import" --seed "$out/seed.sqlite" --database "$out/pinned/app.sqlite" \
            --server "$SERVER_URL" --token-file "$work/token" --once --json
    done
    stop_server
    report="$out/runs/seed-import-pinned.1.out"
    if [ "$(json_field "$report" installed)" != True ] || [ "$(json_field "$report" changeSets)" != "$PINNED_CHANGE_SETS" ] ||
        grep -q '"replacements":\[{' "$report"; then
        echo "case 7: the pinned seed was not installed and caught up by sync: $(cat "$report")" >&2
        exit 1
    fi
    fact pinned changeSets "$PINNED_CHANGE_SETS"
    contender "7 pinned seed" seed-import-pinned "seed-import: install + $PINNED_CHANGE_SETS change sets" "snapshot downloads" "0"
    note "case 7: the reference seed registered, $PINNED_CHANGE_SETS change sets written after it, compact --keep-revisions 1000 kept back to the seed's revision; every run installs the seed and syncs, none downloads a snapshot."
fi

# ---------------------------------------------------------------------------------------------------
# Case 8: edit sessions during a catch-up. The installed app, case 3's change sets behind (mutated
# here the same way, --seed $MUTATE_SEED), catches up in a SyncEngine (seed-bench edit) while the app
# opens an edit session every 250 ms and cancels it 20 ms later: how long beginEdit() takes to
# return (it waits for the engine's current transaction to end). Each run times every edit of one
# whole catch-up; p99 and max are over the edits of all runs. Twice: the engine on its own connection,
# and writing through a GRDB DatabasePool of the app's (--app-pool). The WAL's largest size during
# each run is sampled every 20 ms.

# wal_peak FILE OUT: FILE's largest size so far in OUT, sampled every 20 ms while this script runs
# (kill it when done).
wal_peak() {
    local peak=0 size parent=$$
    echo 0 >"$2"
    while kill -0 "$parent" 2>/dev/null; do
        size=$(stat -c %s "$1" 2>/dev/null || echo 0)
        if ((size > peak)); then peak=$size; echo "$peak" >"$2"; fi
        sleep 0.02
    done
}

if wants 8; then
    step "case 8: edit sessions during a catch-up"
    stop_server
    mutated_copy "$out/editing"
    serve "$out/editing/server.sqlite"
    for mode in own pool; do
        flags=()
        if [ "$mode" = pool ]; then flags=(--app-pool); fi
        for ((run = 1; run <= repeat; run++)); do
            copy_db "$out/installed/app.sqlite" "$out/editing/app.sqlite"
            wal_peak "$out/editing/app.sqlite-wal" "$out/runs/seed-bench-edit-$mode.$run.wal" &
            sampler=$!
            measure 8 "seed-bench-edit-$mode" "$run" "$bin/seed-bench" edit --seed "$out/seed.sqlite" \
                --database "$out/editing/app.sqlite" --server "$SERVER_URL" --token-file "$work/token" "${flags[@]}"
            kill "$sampler"
            wait "$sampler" 2>/dev/null || true
        done
    done
    stop_server
    for mode in own pool; do
        "$python" - "$out" "$repeat" "$mode" >"$work/edits.tsv" <<'PY'
import json, sys
out, repeat, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
name = f"{out}/runs/seed-bench-edit-{mode}"
runs = [json.load(open(f"{name}.{run}.out")) for run in range(1, repeat + 1)]
wal = max(int(open(f"{name}.{run}.wal").read()) for run in range(1, repeat + 1))
print("\t".join(str(value) for value in (
    sum(run["edits"] for run in runs), max(run["p99Ms"] for run in runs), max(run["maxMs"] for run in runs),
    sorted(run["p50Ms"] for run in runs)[len(runs) // 2], runs[0]["changeSets"], round(wal / 1048576, 1))))
PY
        read -r edits p99 worst p50 applied_sets wal_mb <"$work/edits.tsv"
        label=$([ "$mode" = pool ] && echo "through the app's DatabasePool" || echo "own connection")
        fact "editing-$mode" editSessions "$edits"
        fact "editing-$mode" changeSets "$applied_sets"
        fact "editing-$mode" beginEditP50Ms "$p50"
        fact "editing-$mode" beginEditP99Ms "$p99"
        fact "editing-$mode" beginEditMaxMs "$worst"
        fact "editing-$mode" walPeakMB "$wal_mb"
        contender "8 edit sessions" "seed-bench-edit-$mode" "SyncEngine catch-up, $label ($applied_sets sets), $edits edits" \
            "beginEdit p99 ms" "$p99" "<=" 50
        result "8 edit sessions" "" "  - beginEdit p50 / max ms, WAL peak MB" "" "" "ms, MB" "$p50 / $worst, $wal_mb"
        note "case 8 ($label): $applied_sets change sets caught up by a SyncEngine in each of $repeat runs while an edit session opened every 250 ms (held 20 ms); beginEdit() p50 $p50 ms (median of the runs), p99 $p99 ms and max $worst ms (the worst run's); the WAL reached $wal_mb MB at most."
    done
fi

# ---------------------------------------------------------------------------------------------------
# Case 9: scale. Two servers' databases, one of --events events and --locations locations (a copy of
# the reference server database) and one a tenth of each, both given SCALE_CHANGE_SETS more change
# sets: seed-build of each (no gzip), then at each size POST /v1/sync from SCALE_CHANGE_SETS
# revisions behind, and at the large size a snapshot page of 1,000 events 90 % into the table against
# the first page. What should not grow with the data: build time per row, build memory, a sync from a
# recent revision, a page's cost by its position. After the warm-up the sync's change sets come from the
# server's cache, so that row compares a request's own cost (state read, answer), not the log's range
# scan; time per row includes each run's fixed start (≈ 0.1 s), which favours the small size when it
# is small.

SCALE_CHANGE_SETS=100
SCALE_REQUESTS=200

# scale_size NAME DIR: builds DIR/server.sqlite's seed repeat times (scale-build-NAME runs) and times
# POST /v1/sync from $SCALE_CHANGE_SETS behind into DIR/sync.json; serves DIR/server.sqlite meanwhile.
scale_size() {
    local name=$1 dir=$2 run newest
    "$bin/seed-server" mutate --database "$dir/server.sqlite" --changes "$SCALE_CHANGE_SETS" --seed "$MUTATE_SEED" >&2
    serve "$dir/server.sqlite"
    for ((run = 1; run <= repeat; run++)); do
        rm -rf "$dir/build" && mkdir -p "$dir/build"
        measure 9 "scale-build-$name" "$run" "$bin/seed-build" --server "$SERVER_URL" --token-file "$work/token" \
            --out "$dir/build/seed.sqlite" --json
    done
    newest=$(sqlite3 "$dir/server.sqlite" "SELECT revision FROM _seedsync_state")
    "$python" scripts/bench/request_times.py "$SERVER_URL/v1/sync" "$work/token" "$SCALE_REQUESTS" \
        "{\"maxRevision\": $((newest - SCALE_CHANGE_SETS)), \"changeSets\": []}" >"$dir/sync.json"
}

if wants 9; then
    step "case 9: scale"
    stop_server
    small_events=$((events / 10 > 0 ? events / 10 : 1))
    small_locations=$((locations / 10 > 0 ? locations / 10 : 1))
    mkdir -p "$out/scale/small" "$out/scale/large"
    "$bin/seed-server" init --database "$out/scale/small/server.sqlite" --demo --events "$small_events" \
        --locations "$small_locations" >&2
    scale_size small "$out/scale/small"
    stop_server
    copy_db "$out/server.sqlite" "$out/scale/large/server.sqlite"
    scale_size large "$out/scale/large"
    offset=$(sqlite3 "$out/scale/large/server.sqlite" "SELECT count(*) * 9 / 10 FROM events")
    deep=$(sqlite3 "$out/scale/large/server.sqlite" "SELECT id FROM events ORDER BY id LIMIT 1 OFFSET $offset")
    "$python" scripts/bench/request_times.py "$SERVER_URL/v1/snapshot/events?limit=1000" "$work/token" \
        "$SCALE_REQUESTS" >"$out/scale/first-page.json"
    "$python" scripts/bench/request_times.py "$SERVER_URL/v1/snapshot/events?limit=1000&after=$deep" "$work/token" \
        "$SCALE_REQUESTS" >"$out/scale/deep-page.json"
    stop_server
    rows_ratio=$(ratio $((events + locations)) $((small_events + small_locations)))
    time_ratio=$(ratio "$(median_wall scale-build-large)" "$(median_wall scale-build-small)")
    sync_small=$(json_field "$out/scale/small/sync.json" median_ms)
    sync_large=$(json_field "$out/scale/large/sync.json" median_ms)
    first=$(json_field "$out/scale/first-page.json" median_ms)
    deep_ms=$(json_field "$out/scale/deep-page.json" median_ms)
    for name in small large; do
        fact scale "$name.syncMedianMs" "$(json_field "$out/scale/$name/sync.json" median_ms)"
        fact scale "$name.syncP99Ms" "$(json_field "$out/scale/$name/sync.json" p99_ms)"
        fact scale "$name.syncBytes" "$(json_field "$out/scale/$name/sync.json" bytes)"
        fact scale "$name.buildMedianWallSeconds" "$(median_wall "scale-build-$name")"
        fact scale "$name.buildMedianPeakMB" "$(median_mb "scale-build-$name")"
    done
    fact scale firstPageMedianMs "$first"
    fact scale deepPageMedianMs "$deep_ms"
    fact scale deepPageAfter "$deep"
    contender "9 scale" scale-build-small "seed-build, $small_events events"
    contender "9 scale" scale-build-large "seed-build, $events events" "time per row, large / small" \
        "$(ratio "$time_ratio" "$rows_ratio")" "<=" 1.1
    result "9 scale" "" "  peak memory" "" "" "peak MB, large / small" \
        "$(ratio "$(median_mb scale-build-large)" "$(median_mb scale-build-small)")" "<=" 1.1
    result "9 scale" "" "/v1/sync $SCALE_CHANGE_SETS behind: $sync_small / $sync_large ms" "" "" \
        "median, large / small" "$(ratio "$sync_large" "$sync_small")" "<=" 1.2
    result "9 scale" "" "page 90 % in / first: $deep_ms / $first ms" "" "" "median, deep / first" \
        "$(ratio "$deep_ms" "$first")" "<=" 1.2
    note "case 9: $small_events events + $small_locations locations against $events + $locations (rows x$rows_ratio, build time x$time_ratio); each server then got $SCALE_CHANGE_SETS change sets (mutate --seed $MUTATE_SEED); requests are medians of $SCALE_REQUESTS sent one after another on one connection, after 20 untimed; the deep page starts after event $deep."
fi

# ---------------------------------------------------------------------------------------------------
# Report

note "wall s and peak MB are medians of $repeat runs; ratios are of medians. Peak MB is /usr/bin/time's %M / 1024."
"$python" scripts/bench/write_json.py "$out"

echo
echo "SeedSync benchmark: $events events, $locations locations, $repeat runs each ($(nproc) cores, $(uname -sr))"
echo
# results.tsv: case, contender, label, wall, MB, measure, value, op, target, outcome; each case's name
# on its first row only.
awk -F '\t' -v format='%-16s %-44s %8s %8s  %-24s %9s %9s  %s\n' '
    NR == 1 { printf format, "case", "contender", "wall s", "peak MB", "measure", "value", "target", "result" }
    { name = ($1 == shown) ? "" : $1; shown = $1
      printf format, name, $3, $4, $5, $6, $7, ($8 == "" ? "" : $8 " " $9), $10 }' "$out/results.tsv"
echo
sed 's/^/  /' "$out/notes.txt"
echo
echo "all numbers: $out/bench.json"
