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
#  10 one team       a dataset split by team (PROTOCOL.md §10): --teams teams of --team-events events,
#                       --team-changes change sets per team after the seeds, one team per revision; team 1's
#                       app (its seed cut by seed-build --scope team=1, a JWT of team 1) catches up, against
#                       a single-dataset server of team 1's rows alone and the same change sets; target: 1.2x.
#                       With --postgres, both sides run again on a PostgreSQL store (a throwaway PostgreSQL
#                       this script starts and stops): the same ratio there
#  11 team seeds      case 10's dataset: one seed-build --every-scope (a seed per team from one download)
#                       against a seed-build per team with its JWT, each cut seed equal to its team's build;
#                       run once each (no repeats), no target
#  12 scope index     case 10's dataset with and without its scope: 2,000 one-row admin commits each, what the
#                       SQLite store's index of its log by scope value costs a commit; no target
#  13 published seed  a fresh app with no shipped seed, the server at the seed's revision: seed-import
#                       --seed-url of the reference seed's .gz from seed-server --seeds over loopback against
#                       seed-import with no seed (snapshot pages); time and bytes received; no target
#  14 history chain  on a copy of the server database without its chain: the chain computed over the whole
#                       log (read, hash, store) against reading the log alone, per change set; an answer's
#                       1,000 chain values against its change sets (seed-bench chain); no target
# The cases are Python (scripts/bench/bench.py); this script installs the tools they need, builds the
# commands unless --bin names them, and runs it. Every measured command runs K times under /usr/bin/time -f '%e %M' with its output in OUT/runs/; the
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
#   --only CASES   comma-separated cases to run, such as 1,5 (default 1,2,3,4,5,6,7,8,9,10,11,12,13,14)
#   --teams N, --team-events N, --team-changes N
#                  case 10: teams in the dataset split by team (default 1000), events per team (1000),
#                  change sets per team after the seeds (20)
#   --postgres     case 10 on a PostgreSQL store too
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/setup.sh

usage="usage: scripts/bench/bench.sh [--events N] [--locations N] [--repeat K] [--changes N] [--out DIR] [--bin DIR] [--only CASES] [--teams N] [--team-events N] [--team-changes N] [--postgres]"
bin=
args=()
postgres=0
while [ $# -gt 0 ]; do
    if [ "$1" = --postgres ]; then postgres=1; shift; continue; fi
    [ $# -ge 2 ] || { echo "$usage" >&2; exit 64; } # every other option takes a value
    case $1 in
        --bin) bin=$2 ;;
        --events | --locations | --repeat | --changes | --out | --only | --teams | --team-events | --team-changes)
            args+=("$1" "$2") ;;
        *) echo "$usage" >&2; exit 64 ;;
    esac
    shift 2
done

# /usr/bin/time (the measurements), python3 (the cases) and sqlite3 (exports and the sqlite3 baselines).
# As root, apt-get installs the missing ones. sqlite-utils is optional and never installed: its row says
# "not installed" when it is not on PATH.
missing=()
[ -x /usr/bin/time ] || missing+=(time)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v sqlite3 >/dev/null 2>&1 || missing+=(sqlite3)
install_packages "${missing[@]}"
if [ -z "$bin" ]; then
    ensure_system_packages
    ensure_swift
    for product in seed-server seed-build seed-import seed-verify seed-bench; do
        swift build -c release --product "$product" >&2
    done
    bin=$(swift build -c release --show-bin-path)
fi
ensure_swift 2>/dev/null || true # swift on PATH for the machine's facts, when it is installed
# The interpreter itself, not a pyenv shim: the Python baseline is timed with it.
python=$(python3 -c 'import sys; print(sys.executable)')
if [ "$postgres" = 1 ]; then
    source scripts/lib/postgres.sh
    trap stop_postgres EXIT
    POSTGRES_DURABLE=1 start_postgres
    "$python" scripts/bench/bench.py --bin "$bin" --postgres-url "$SEEDSYNC_POSTGRES_URL" "${args[@]}"
else
    exec "$python" scripts/bench/bench.py --bin "$bin" "${args[@]}"
fi
