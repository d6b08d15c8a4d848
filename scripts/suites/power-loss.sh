#!/usr/bin/env bash
# Power-loss simulation of seed-import and of the server's SQLite store (docs/RELIABILITY.md): cuts
# the power at chosen file operations of a run and checks what a restart finds. The program runs
# under the powercut library (scripts/suites/power-loss/powercut.c, LD_PRELOAD), which logs every
# write, truncation, sync, rename and unlink under the watched folder and kills the process
# (SIGKILL) before the N-th; then powerloss.py takes back every write a file received since its last
# fsync and puts back none of them, a prefix of them (a disk that writes in order) or a random part
# of their 512-byte sectors (a disk that reorders and tears writes), and removes the -shm files.
# After each cut the app's database must be absent only where there was none and pass
# integrity_check; in the install, catch-up and replacement it must hold exactly the server's rows
# at the revision it says (never a mixture); a rerun without the cut must end equal to the server,
# row by row. Before the cuts, a run whose syncs the model does not see must fail the checks.
#
# Scenarios, each against a real seed-server on loopback (SQLite store, demo data), the cuts spread
# evenly over the run's operations:
#   install      a fresh app: copy the shipped seed into place, catch up in small transactions
#   catch-up     an installed seed catches up
#   replacement  an app at an old seed gets a newer shipped seed: replaced, then caught up
#   push         an app caught up pushes two queued rows (seed-import write) and catches up: after the
#                restart the server holds each row exactly once
#   migration    the server upgraded to schema version 2 (a field added, 60 change sets in it): an app
#                in version 1, now built for 2, migrates its database in place and catches up
#   store        the server's SQLite store: seed-server starts, takes 40 commits (POST
#                /v1/admin/changes, one row each) and stops; every commit it answered must be
#                there after the power loss (the store syncs each commit before it answers), the
#                file sound, and a server started on it must take a commit
#
# Usage: scripts/suites/power-loss.sh [--cuts N] [--only SCENARIO] [--bin DIR]
#   (N per scenario; default 100: 600 cuts)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/setup.sh
source scripts/lib/server.sh
source scripts/lib/compare.sh

cuts=100
only=
bin=
usage="usage: scripts/suites/power-loss.sh [--cuts N] [--only install|catch-up|replacement|push|migration|store] [--bin DIR]"
while [ $# -gt 0 ]; do
    case $1 in
        --cuts) cuts=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        *) echo "$usage" >&2; exit 64 ;;
    esac
done

work=$(mktemp -d)
trap 'stop_server; rm -rf "$work"' EXIT
ensure_system_packages
bin=$(built_products "$bin" release seed-server seed-build seed-import)
here=scripts/suites/power-loss
# The Swift toolchain's clang (which needs the C library's headers, as Swift itself does), else cc.
command -v clang >/dev/null 2>&1 || command -v cc >/dev/null 2>&1 || install_packages gcc libc6-dev
"$(command -v clang || command -v cc)" -shared -fPIC -O2 -Wall -Werror -o "$work/powercut.so" "$here/powercut.c" -ldl

# The server: a demo store, a seed, changes, a newer seed, more changes.
"$bin/seed-server" init --database "$work/server.sqlite" --demo --events 2000 --locations 100 >/dev/null
new_token "$work/token"
new_token "$work/write-token"
start_server "$bin" "$work/server.sqlite" "$work/token" "$work" "$work/write-token"
token=$(cat "$work/token")
export SEED_TOKEN=$token
"$bin/seed-build" --server "$SERVER_URL" --out "$work/old.sqlite" --quiet
"$bin/seed-server" mutate --database "$work/server.sqlite" --changes 120 --seed 3 >/dev/null
"$bin/seed-build" --server "$SERVER_URL" --out "$work/new.sqlite" --quiet
"$bin/seed-server" mutate --database "$work/server.sqlite" --changes 120 --seed 4 >/dev/null
python3 "$here/powerloss.py" expect "$work/old.sqlite" "$SERVER_URL" "$token" "$work/history.json"

# import APP SEED [ENVIRONMENT...]: seed-import of SEED into APP, many small transactions; an app
# built for EXPECT_VERSION (when set) migrates its database to it.
import() {
    env "${@:3}" "$bin/seed-import" --seed "$2" --database "$1" --server "$SERVER_URL" \
        --sync-limit 10 --rows-per-transaction 20 --quiet ${EXPECT_VERSION:+--expect-schema-version "$EXPECT_VERSION"}
}

# prepare SCENARIO FOLDER [NAME]: the app's folder as the scenario starts (NAME: the push's rows).
prepare() {
    rm -rf "$2" && mkdir -p "$2"
    case $1 in
        install) ;;
        catch-up | replacement)
            cp "$work/old.sqlite" "$2/app.sqlite"
            sqlite3 "$2/app.sqlite" "PRAGMA journal_mode = WAL" >/dev/null
            ;;
        migration)
            # The app caught up in version 1 (as for push), built now for version 2.
            cp "$work/pushing.sqlite" "$2/app.sqlite"
            ;;
        push)
            # An app caught up (a copy made once), with two new locations queued by `seed-import write`,
            # named after the cut so the server's rows show each was applied exactly once.
            if [ ! -f "$work/pushing.sqlite" ]; then
                import "$work/pushing.sqlite" "$work/old.sqlite"
                sqlite3 "$work/pushing.sqlite" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
            fi
            cp "$work/pushing.sqlite" "$2/app.sqlite"
            local name=${3:-plan}
            printf '[{"types": ["locations"], "locations": {"create": [-1, -2], "attributes": {%s, %s}}}]' \
                "\"-1\": {\"name\": \"push $name a\", \"city\": \"Cut\", \"latitude\": 1, \"longitude\": 2}" \
                "\"-2\": {\"name\": \"push $name b\", \"city\": \"Cut\", \"latitude\": 3, \"longitude\": 4}" \
                >"$work/edits.json"
            "$bin/seed-import" write --database "$2/app.sqlite" --file "$work/edits.json" >/dev/null
            ;;
    esac
}

seed_of() { [ "$1" = replacement ] && echo "$work/new.sqlite" || echo "$work/old.sqlite"; }

# import_plan SCENARIO: the file operations a run of SCENARIO makes, counted by a run without a cut.
import_plan() {
    prepare "$1" "$work/$1"
    rm -f "$work/plan.log"
    if ! import "$work/$1/app.sqlite" "$(seed_of "$1")" LD_PRELOAD="$work/powercut.so" POWERCUT_DIR="$work/$1" \
        POWERCUT_LOG="$work/plan.log"; then
        echo "$1: the run without a cut failed" >&2
        return 1
    fi
    python3 "$here/powerloss.py" plan "$work/plan.log"
}

# pushed_rows INDEX: how many of the two rows the push of cut INDEX queued the server holds.
pushed_rows() {
    sqlite3 "$work/server.sqlite" "SELECT count(*) FROM locations WHERE name IN ('push cut $1 a', 'push cut $1 b')"
}

# import_cut SCENARIO AT MODE INDEX: one cut of seed-import, the checks, a restart; prints where it
# landed, or fails saying why.
import_cut() {
    local scenario=$1 at=$2 mode=$3 index=$4 app=$work/$1 seed status=0 found had=() rows reached=0
    seed=$(seed_of "$scenario")
    [ "$scenario" != install ] && had=(--had-database)
    # A database with queued edits, or one migrating, is not the server's at any revision of the
    # history the check reads: checked for soundness alone, and by the restart.
    case $scenario in push | migration) had+=(--sound-only) ;; esac
    prepare "$scenario" "$app" "cut $index"
    rm -f "$work/cut.log"
    import "$app/app.sqlite" "$seed" LD_PRELOAD="$work/powercut.so" POWERCUT_DIR="$app" \
        POWERCUT_LOG="$work/cut.log" POWERCUT_AT="$at" 2>"$work/cut.err" || status=$?
    if [ "$status" -ne 0 ] && [ "$status" -ne 137 ]; then
        cat "$work/cut.err" >&2
        echo "seed-import failed ($status) before the cut" >&2
        return 1
    fi
    found=$(python3 "$here/powerloss.py" cut "$work/cut.log" "$app" "$app/app.sqlite" "$work/history.json" \
        "$mode" "$index" "${had[@]}") || return 1
    # Whether the pushed rows were on the server before the restart (then it must not push them twice).
    [ "$scenario" = push ] && reached=$(pushed_rows "$index")
    if ! import "$app/app.sqlite" "$seed" 2>"$work/rerun.err" \
        || ! compare_tables "$work/server.sqlite" "$app/app.sqlite" >"$work/compare.txt"; then
        cat "$work/rerun.err" "$work/compare.txt" >&2
        echo "$found; the restart did not end equal to the server" >&2
        return 1
    fi
    if [ "$scenario" = migration ] && [ "$(sqlite3 "$app/app.sqlite" "PRAGMA user_version")" != 2 ]; then
        echo "$found; the restart did not leave the database in version 2" >&2
        return 1
    fi
    if [ "$scenario" = push ]; then
        rows=$(pushed_rows "$index")
        [ "$reached" = 2 ] && found="$found; the push had reached the server before the cut"
        if [ "$rows" != 2 ]; then
            echo "$found; the server holds $rows of the 2 pushed rows after the restart, not each once" >&2
            return 1
        fi
        found="$found; each pushed row on the server once"
    fi
    echo "$found; the restart caught up"
}

# store_cut AT MODE INDEX: one cut of a server on the SQLite store (AT 0: none, to count), the checks.
store_cut() {
    rm -rf "$work/store" && cp -r "$work/store-template" "$work/store" && rm -f "$work/store.log"
    python3 "$here/powerloss.py" store "$bin" "$work/store" "$work/powercut.so" "$work/store.log" "$@"
}

# campaign NAME OPERATIONS CUT [ARGUMENTS...]: `cuts` cuts of NAME at operations spread evenly over
# OPERATIONS, taking turns between the three ways a disk may have written what was not synced; each
# runs `CUT ARGUMENTS... AT MODE INDEX`. Stops the suite at the first failure.
total=0
campaign() {
    local name=$1 operations=$2 index at mode found landed=0
    shift 2
    echo "$name: a run makes $operations file operations; $cuts cuts"
    for ((index = 0; index < cuts; index++)); do
        at=$((1 + index * operations / cuts))
        mode=$(case $((index % 3)) in 0) echo lost ;; 1) echo prefix ;; 2) echo torn ;; esac)
        if ! found=$("$@" "$at" "$mode" "$index"); then
            echo "$name, cut at operation $at of $operations ($mode): failed (above)" >&2
            exit 1
        fi
        echo "$name, cut at operation $at ($mode): $found"
        [ "${found%%;*}" = cut ] && landed=$((landed + 1))
    done
    total=$((total + cuts))
    echo "$name: $cuts cuts, $landed before the run's end, $((cuts - landed)) after it; all passed"
}

# The checks themselves: a run whose syncs the model does not see (as if the program never synced)
# must be caught, importer and store alike, or the cuts would prove nothing.
prepare install "$work/install"
rm -f "$work/unsynced.log"
import "$work/install/app.sqlite" "$work/old.sqlite" LD_PRELOAD="$work/powercut.so" POWERCUT_DIR="$work/install" \
    POWERCUT_LOG="$work/unsynced.log" POWERCUT_UNSYNCED=1
if found=$(python3 "$here/powerloss.py" cut "$work/unsynced.log" "$work/install" "$work/install/app.sqlite" \
    "$work/history.json" lost 0 2>&1); then
    echo "the check passed a run that never synced ($found): it would catch nothing" >&2
    exit 1
fi
echo "self-check: a run that never synced is caught: ${found#FAIL: }"
new_token "$work/admin-token"
mkdir -p "$work/store-template"
"$bin/seed-server" init --database "$work/store-template/server.sqlite" --demo --events 300 --locations 20 >/dev/null
if found=$(POWERCUT_UNSYNCED=1 store_cut 150 lost 0 2>&1); then
    echo "the check passed a server that never synced ($found): it would catch nothing" >&2
    exit 1
fi
echo "self-check: a server that never synced is caught: ${found#FAIL: }"

# upgrade_server: schema version 2 (events gain a nullable field), then change sets written in it.
upgrade_server() {
    sqlite3 "$work/old.sqlite" "SELECT value FROM _seedsync_seed WHERE key = 'schema'" | python3 -c '
import json, sys
schema = json.load(sys.stdin)
schema["schemaVersion"] = 2
next(t for t in schema["types"] if t["name"] == "events")["fields"].append(
    {"name": "note", "type": "text", "nullable": True})
print(json.dumps(schema))' >"$work/schema-v2.json"
    "$bin/seed-server" schema upgrade --database "$work/server.sqlite" --schema "$work/schema-v2.json" >/dev/null
    "$bin/seed-server" mutate --database "$work/server.sqlite" --changes 60 --seed 5 >/dev/null
}

for scenario in install catch-up replacement push migration; do
    # Pushes and the upgrade write the server: after the scenarios its history is read for. Pushes
    # need a token that may push.
    [ "$scenario" = push ] && SEED_TOKEN=$(cat "$work/write-token")
    [ "$scenario" = migration ] && upgrade_server && export EXPECT_VERSION=2
    [ -n "$only" ] && [ "$only" != "$scenario" ] && continue
    operations=$(import_plan "$scenario") || exit 1
    campaign "$scenario" "$operations" import_cut "$scenario"
done
if [ -z "$only" ] || [ "$only" = store ]; then
    store_cut 0 lost 0
    campaign store "$(python3 "$here/powerloss.py" plan "$work/store.log")" store_cut
fi
echo "power loss: $total cuts, none left a damaged database, a mixture of revisions or a lost answered commit"
