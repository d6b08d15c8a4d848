#!/usr/bin/env bash
# The main job: build SeedSync in release mode (with --install, also install it with its man pages
# and completions into a temporary prefix: scripts/test.sh does so once), create a demo server database (the embedded store by
# default; with --backend postgres, plain tables in a throwaway PostgreSQL written by psql, printed
# as a schema and attached), serve it on a free loopback port with a generated token, build a seed from it with seed-build, prove it
# with seed-verify, change the server, install the seed into a fresh app folder with seed-import and
# catch up, run seed-import again (nothing to do), prove the app database equals the server's tables row
# by row; publish the seed (signed with a key made by seed-build keygen) in the server's seeds folder and
# install a second fresh app from its URL alone, with the key trusted, equal to the server row by row; then show write-back (two more app folders edit locally, one creates a location and an event at
# it with temporary keys, both update the same event; both sync, one conflict is reported, and both app
# databases equal the server's tables row by row), then a schema upgrade without an outage (on
# PostgreSQL a column added by psql mid-run while an app syncs, then the rest of the change read
# from the tables; on the embedded store from a schema file), an old app (expecting version 1) and a
# new app syncing side by side, the new one migrating right after its install, and the old one
# migrating in place on its "update", both equal to the server row by row; stop the server; then a
# dataset split by team on a second server: a seed per team cut from one build, two apps of different
# teams, each equal to its team's rows and holding nothing else; and print a summary. Any failure stops it with a non-zero status.
#
# Usage: scripts/pipeline.sh [--backend sqlite|postgres] [--events N] [--locations N] [--changes N] [--out DIR] [--install]
#   --backend B    sqlite (default: nothing to install) or postgres
#   --events N     demo events in the server database (default 100000)
#   --locations N  demo locations (default 2000)
#   --changes N    change sets written to the server after the seed is built (default 5000)
#   --out DIR      where the server database, the seed, its manifest and app/ go (default .build/pipeline)
#   --install      also install the commands with their man pages and completions (scripts/tools/install.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/setup.sh
source scripts/lib/server.sh
source scripts/lib/compare.sh
source scripts/lib/postgres.sh

backend=sqlite
events=100000
locations=2000
changes=5000
out=.build/pipeline
install=false
while [ $# -gt 0 ]; do
    case $1 in
        --backend) backend=$2; shift 2 ;;
        --events) events=$2; shift 2 ;;
        --locations) locations=$2; shift 2 ;;
        --changes) changes=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --install) install=true; shift ;;
        *) echo "usage: scripts/pipeline.sh [--backend sqlite|postgres] [--events N] [--locations N] [--changes N] [--out DIR] [--install]" >&2; exit 64 ;;
    esac
done
case $backend in
    sqlite | postgres) ;;
    *) echo "--backend must be sqlite or postgres" >&2; exit 64 ;;
esac

steps=()
step_started=0
begin() {
    echo "==> $1" >&2
    step_name=$1
    step_started=$(date +%s.%N)
}
end() {
    steps+=("$(printf '%-28s %8.2f s' "$step_name" "$(echo "$(date +%s.%N) $step_started" | awk '{print $1 - $2}')")")
}

# compare_app APP_DB: the app database against the server's tables, row by row (one line per table).
compare_app() {
    if [ "$backend" = sqlite ]; then
        compare_tables "$database" "$1"
    else
        python3 scripts/lib/compare_postgres.py "$1"
    fi
}

work=$(mktemp -d)
trap 'stop_server; stop_postgres; rm -rf "$work"' EXIT

begin "install and check tools"
ensure_system_packages
ensure_swift
end

begin "release build"
swift build -c release >&2
bin=$(swift build -c release --show-bin-path)
end

if $install; then
    begin "install with man pages"
    scripts/tools/install.sh --prefix "$work/prefix"
    end
fi

begin "create server database"
mkdir -p "$out"
rm -f "$out/server.sqlite" "$out/demo-rows.sqlite"
if [ "$backend" = sqlite ]; then
    database=$out/server.sqlite
    "$bin/seed-server" init --database "$database" --demo --events "$events" --locations "$locations" >&2
else
    start_postgres
    database=$SEEDSYNC_POSTGRES_URL
    # The team's side: plain tables, filled by psql (with the demo rows, made here by the embedded store).
    "$bin/seed-server" init --database "$out/demo-rows.sqlite" --demo --events "$events" --locations "$locations" >/dev/null
    export PGHOST=127.0.0.1 PGPORT=${database##*:} PGUSER=seedsync PGDATABASE=seedsync PGTZ=UTC
    PGPORT=${PGPORT%%/*}
    psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE TABLE locations (id bigint PRIMARY KEY, name text NOT NULL, city text NOT NULL,
  latitude double precision NOT NULL, longitude double precision NOT NULL);
CREATE TABLE events (id bigint PRIMARY KEY, title text NOT NULL, starts_at timestamptz NOT NULL, ends_at timestamptz,
  location_id bigint REFERENCES locations (id), capacity integer NOT NULL, cancelled boolean NOT NULL, description text);
SQL
    for table in locations events; do
        columns=$(sqlite3 "$out/demo-rows.sqlite" "SELECT group_concat('\"' || name || '\"', ', ') FROM pragma_table_info('$table') WHERE name <> 'revision'")
        sqlite3 -csv "$out/demo-rows.sqlite" "SELECT $columns FROM \"$table\"" |
            psql -X -q -v ON_ERROR_STOP=1 -c "\\copy $table FROM pstdin WITH (FORMAT csv)"
    done
    rm -f "$out/demo-rows.sqlite"
    "$bin/seed-server" schema --database "$database" --tables locations,events --dataset demo >"$out/schema.json"
    "$bin/seed-server" init --database "$database" --schema "$out/schema.json" --attach >&2
fi
end

begin "start server"
new_token "$work/token"
new_token "$work/write-token"
new_token "$work/admin-token"
# The server also serves the seeds published in $out/published (GET /v1/seeds/SHA256/FILE).
rm -rf "$out/published" && mkdir -p "$out/published"
start_server "$bin" "$database" "$work/token" "$work" "$work/write-token" "$work/admin-token" --seeds "$out/published"
echo "serving $SERVER_URL (pid $SERVER_PID)" >&2
end

begin "seed-build (signed)"
mkdir -p "$work/keys"
"$bin/seed-build" keygen --out "$work/keys/seeds.pem" | tee "$work/keygen.txt" >&2
# Registered (an admin token): compaction keeps its history, and GET /v1/seeds offers it to fresh apps.
"$bin/seed-build" --server "$SERVER_URL" --token-file "$work/admin-token" --out "$out/demo.sqlite" --gzip \
    --signing-key "$work/keys/seeds.pem" --register >&2
end

begin "seed-verify"
"$bin/seed-verify" "$out/demo.sqlite" --trust "$work/keys/seeds.pub.pem" >&2
"$bin/seed-verify" "$out/demo.sqlite.gz" --trust "$work/keys/seeds.pub.pem" >/dev/null
end

begin "publish"
cp "$out/demo.sqlite" "$out/demo.sqlite.gz" "$out/demo.sqlite.manifest.json" "$out/published/"
seed_sha256=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["sha256"])' "$out/demo.sqlite.manifest.json")
seed_url="$SERVER_URL/v1/seeds/$seed_sha256/demo.sqlite.gz"
echo "published $seed_url" >&2
end

begin "mutate server"
"$bin/seed-server" mutate --database "$database" --changes "$changes" --seed 1 >&2
end

begin "seed-import (install + sync)"
rm -rf "$out/app"
SEED_TOKEN=$(cat "$work/token") "$bin/seed-import" --seed "$out/demo.sqlite.gz" --database "$out/app/demo.sqlite" \
    --server "$SERVER_URL" --json >"$work/import-1.json"
end

begin "seed-import (again)"
SEED_TOKEN=$(cat "$work/token") "$bin/seed-import" --seed "$out/demo.sqlite.gz" --database "$out/app/demo.sqlite" \
    --server "$SERVER_URL" --json >"$work/import-2.json"
end

begin "compare with the server"
compare_app "$out/app/demo.sqlite" >"$work/compare.txt" || {
    cat "$work/compare.txt" >&2
    echo "the imported database differs from the server" >&2
    exit 1
}
end

begin "seed-import (fresh app from the published seed, no shipped seed)"
rm -rf "$out/app-url"
SEED_TOKEN=$(cat "$work/token") "$bin/seed-import" --seed-url "$seed_url" --trust "$work/keys/seeds.pub.pem" \
    --database "$out/app-url/demo.sqlite" --server "$SERVER_URL" --json >"$work/import-url.json"
compare_app "$out/app-url/demo.sqlite" >"$work/compare-url.txt" || {
    cat "$work/compare-url.txt" >&2
    echo "the app installed from the published seed differs from the server" >&2
    exit 1
}
[ ! -e "$out/app-url/demo.sqlite.seed" ] || { echo "the seed download was left behind" >&2; exit 1; }
end

begin "seed-import (fresh app with no seed at all: the server offers the published one)"
rm -rf "$out/app-found"
SEED_TOKEN=$(cat "$work/token") "$bin/seed-import" --trust "$work/keys/seeds.pub.pem" \
    --database "$out/app-found/demo.sqlite" --server "$SERVER_URL" --json >"$work/import-found.json"
python3 - "$work/import-found.json" "$seed_url" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
source = report.get("installedFrom") or {}
if source.get("kind") != "published-seed" or source.get("location") != sys.argv[2]:
    sys.exit(f"the app with no seed was installed from {source}, not the published seed {sys.argv[2]}")
# It weighed the offered seed against snapshot pages by their bytes, and says so.
way = report.get("wayIn") or {}
weighed = {option["source"]["kind"]: option for option in way.get("weighed", [])}
if way.get("taken", {}).get("source") != source or set(weighed) != {"published-seed", "snapshot"}:
    sys.exit(f"the app with no seed did not weigh the published seed against a snapshot: {way}")
for kind, option in weighed.items():
    print(f"way in: {kind}, {option['fileBytes'] + option['catchUpBytes']} bytes", file=sys.stderr)
PY
compare_app "$out/app-found/demo.sqlite" >"$work/compare-found.txt" || {
    cat "$work/compare-found.txt" >&2
    echo "the app installed from the seed the server offered differs from the server" >&2
    exit 1
}
end

begin "write-back"
# Two app folders at the server's revision, each editing locally (the same event in both).
for app in app-a app-b; do
    rm -rf "${out:?}/$app"
    SEED_TOKEN=$(cat "$work/token") "$bin/seed-import" --seed "$out/demo.sqlite.gz" --database "$out/$app/demo.sqlite" \
        --server "$SERVER_URL" --quiet
done
edited=$(sqlite3 "$out/app-a/demo.sqlite" "SELECT min(id) FROM events")
cat >"$work/changes-a.json" <<JSON
[{"types": ["locations", "events"],
  "locations": {"create": [-1], "attributes": {"-1": {"name": "Pop-up hall", "city": "Lyon", "latitude": 45.76, "longitude": 4.84}}},
  "events": {"create": [-2], "update": [$edited], "attributes": {
    "-2": {"title": "Opening night", "starts_at": "2026-12-01T18:00:00Z", "location_id": -1, "capacity": 80, "cancelled": false},
    "$edited": {"title": "Edited in app A", "location_id": -1}}}}]
JSON
cat >"$work/changes-b.json" <<JSON
[{"types": ["events"], "events": {"update": [$edited], "attributes": {"$edited": {"title": "Edited in app B"}}}}]
JSON
"$bin/seed-import" write --database "$out/app-a/demo.sqlite" --file "$work/changes-a.json" >&2
"$bin/seed-import" write --database "$out/app-b/demo.sqlite" --file "$work/changes-b.json" >&2
# A pushes first, B's edit of the same event then conflicts, A catches up with the rest.
run=0
for app in app-a app-b app-a; do
    run=$((run + 1))
    SEED_TOKEN=$(cat "$work/write-token") "$bin/seed-import" --seed "$out/demo.sqlite.gz" --database "$out/$app/demo.sqlite" \
        --server "$SERVER_URL" --json >"$work/push-$run.json" 2>"$work/push-$run.err"
    sed "s/^/  [$app] /" "$work/push-$run.err" >&2
done
grep -q 'applied as revision' "$work/push-1.err" || { echo "app A's change set was not applied" >&2; exit 1; }
grep -q '^seed-import: conflict: ' "$work/push-2.err" || { echo "app B's change set did not conflict" >&2; exit 1; }
title=$(sqlite3 "$out/app-b/demo.sqlite" "SELECT title FROM events WHERE id = $edited")
[ "$title" = "Edited in app A" ] || { echo "app B shows '$title' for event $edited, not the server's 'Edited in app A'" >&2; exit 1; }
for app in app-a app-b; do
    compare_app "$out/$app/demo.sqlite" >"$work/compare-$app.txt" || {
        cat "$work/compare-$app.txt" >&2
        echo "$app differs from the server after write-back" >&2
        exit 1
    }
    [ "$(sqlite3 "$out/$app/demo.sqlite" "SELECT count(*) FROM _seedsync_outbox")" = 0 ] || { echo "$app still has change sets waiting" >&2; exit 1; }
done
end

begin "schema upgrade to version 2"
if [ "$backend" = sqlite ]; then
    cat >"$work/schema-v2.json" <<'JSON'
{"dataset": "demo", "schemaVersion": 2, "types": [
  {"name": "locations", "primaryKey": {"name": "id", "type": "integer"}, "fields": [
    {"name": "name", "type": "text"}, {"name": "city", "type": "text"},
    {"name": "latitude", "type": "real"}, {"name": "longitude", "type": "real"}]},
  {"name": "events", "primaryKey": {"name": "id", "type": "integer"}, "fields": [
    {"name": "name", "type": "text"}, {"name": "starts_at", "type": "timestamp"},
    {"name": "ends_at", "type": "timestamp", "nullable": true},
    {"name": "location_id", "type": "integer", "nullable": true, "references": "locations"},
    {"name": "capacity", "type": "integer"}, {"name": "cancelled", "type": "boolean"},
    {"name": "notes", "type": "text", "nullable": true},
    {"name": "venue_id", "type": "integer", "nullable": true, "references": "venues"}]},
  {"name": "venues", "primaryKey": {"name": "id", "type": "integer"}, "fields": [
    {"name": "name", "type": "text"}, {"name": "seats", "type": "integer", "default": 0}]}]}
JSON
    "$bin/seed-server" schema upgrade --database "$database" --schema "$work/schema-v2.json" \
        --rename events.title=name >"$work/upgrade.txt"
else
    # The team's migration, under the running server: a column added and written by psql while an
    # app syncs (it is not served yet, and nothing fails), then the rest, then the upgrade read
    # from the tables. Qualified names: the role is called seedsync, like the bookkeeping's schema.
    psql -X -q -v ON_ERROR_STOP=1 -c "ALTER TABLE public.events ADD COLUMN notes text" \
        -c "UPDATE public.events SET notes = 'added mid-run' WHERE id % 50 = 0"
    SEED_TOKEN=$(cat "$work/token") "$bin/seed-import" --seed "$out/demo.sqlite.gz" --database "$out/app/demo.sqlite" \
        --server "$SERVER_URL" --expect-schema-version 1 --json >"$work/mid-run.json"
    psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
ALTER TABLE public.events RENAME COLUMN title TO name;
ALTER TABLE public.events DROP COLUMN description;
CREATE TABLE public.venues (id bigint PRIMARY KEY, name text NOT NULL, seats bigint NOT NULL DEFAULT 0);
ALTER TABLE public.events ADD COLUMN venue_id bigint REFERENCES public.venues DEFERRABLE INITIALLY DEFERRED;
SQL
    "$bin/seed-server" schema upgrade --database "$database" --rename events.title=name --add-tables venues \
        >"$work/upgrade.txt"
fi
cat "$work/upgrade.txt" >&2
"$bin/seed-server" schema versions --database "$database" >&2
"$bin/seed-server" mutate --database "$database" --changes 500 --seed 2 >&2
end

begin "old and new apps side by side"
import_app() { # APP_FOLDER JSON_OUT [OPTION...]: seed-import into APP_FOLDER from the version 1 seed
    local app=$1 json=$2
    shift 2
    SEED_TOKEN=$(cat "$work/token") "$bin/seed-import" --seed "$out/demo.sqlite.gz" --database "$out/$app/demo.sqlite" \
        --server "$SERVER_URL" --json "$@" >"$work/$json.json"
}
version_of() { sqlite3 "$out/$1/demo.sqlite" "PRAGMA user_version"; }
# The installed app, still built for version 1, syncs on in it.
import_app app old-app --expect-schema-version 1
[ "$(version_of app)" = 1 ] || { echo "the old app left schema version 1" >&2; exit 1; }
# A new app (built for the newest version) installs the version 1 seed and migrates right after.
rm -rf "${out:?}/app-new"
import_app app-new new-app
[ "$(version_of app-new)" = 2 ] || { echo "the new app is not at schema version 2" >&2; exit 1; }
compare_app "$out/app-new/demo.sqlite" >"$work/compare-new.txt" || {
    cat "$work/compare-new.txt" >&2
    echo "the new app differs from the server" >&2
    exit 1
}
# The old app's update: it migrates in place, keeping its rows and revision.
import_app app updated-app
[ "$(version_of app)" = 2 ] || { echo "the updated app is not at schema version 2" >&2; exit 1; }
compare_app "$out/app/demo.sqlite" >"$work/compare-updated.txt" || {
    cat "$work/compare-updated.txt" >&2
    echo "the migrated app differs from the server" >&2
    exit 1
}
end

begin "stop server"
stop_server
end

# Many teams on one server (PROTOCOL.md §10), on the embedded store: the clubs dataset of
# scripts/lib/scope_line.py, one seed per team cut from one build, then two apps of different teams,
# each equal to its team's rows and the shared ones, holding nothing else.
begin "teams: a seed per team"
clubs=$out/clubs.sqlite
rm -rf "$out/teams" "$clubs" "$clubs-wal" "$clubs-shm"
mkdir -p "$out/teams"
python3 -c 'import cryptography' 2>/dev/null || python3 -m pip install --quiet cryptography
python3 scripts/lib/jwt_keys.py --key "$work/jwt-key.pem" --jwks "$work/jwks.json" --kid k1
python3 scripts/lib/scope_line.py --write-schema "$work/clubs-schema.json"
"$bin/seed-server" init --database "$clubs" --schema "$work/clubs-schema.json" >&2
new_token "$work/admin-token"
start_server "$bin" "$clubs" "$work/token" "$work" "" "$work/admin-token" --jwks-file "$work/jwks.json" \
    --jwt-scope-claim teams --jwt-role-claim role
python3 scripts/lib/teams_demo.py commit "$SERVER_URL" "$(cat "$work/admin-token")" 0 5
"$bin/seed-build" --server "$SERVER_URL" --token-file "$work/token" --out "$out/teams/clubs.sqlite" --every-scope \
    >"$work/teams-build.txt"
for team in 1 2; do "$bin/seed-verify" "$out/teams/clubs.team-$team.sqlite" >&2; done
end

begin "teams: two apps"
python3 scripts/lib/teams_demo.py commit "$SERVER_URL" "$(cat "$work/admin-token")" 5 100
for team in 1 2; do
    SEED_TOKEN=$(python3 scripts/lib/teams_demo.py token "$work/jwt-key.pem" "$team") "$bin/seed-import" \
        --seed "$out/teams/clubs.team-$team.sqlite" --database "$out/teams/app-$team/clubs.sqlite" \
        --server "$SERVER_URL" --json >"$work/team-$team.json"
    python3 scripts/lib/teams_demo.py check "$out/teams/app-$team/clubs.sqlite" "$clubs" "$team" >"$work/team-$team.txt"
done
stop_server
end

manifest="$out/demo.sqlite.manifest.json"
field() { sed -n "s/^  \"$1\" : \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$manifest" | head -n 1; }
rows=$(sed -n '/"rowCounts"/,/}/s/^ *"\([a-z0-9_]*\)" : \([0-9]*\),\{0,1\}$/\1 \2/p' "$manifest" | tr '\n' ' ')
gz_size=$(sed -n '/"gzip"/,/}/s/^ *"size" : \([0-9]*\),\{0,1\}$/\1/p' "$manifest")
report() { report_of "import-$1" "$2"; }
report_of() { sed -n "s/.*\"$2\" *: *\([a-z0-9.]*\).*/\1/p" <(tr ',{' '\n\n' <"$work/$1.json") | head -n 1; }
second_changes=$(report 2 changeSets)
if [ "$second_changes" != 0 ]; then
    echo "the second seed-import applied $second_changes change sets; expected none" >&2
    exit 1
fi

cat <<SUMMARY

SeedSync pipeline: done ($backend store)
  seed       $out/demo.sqlite
  manifest   $manifest
  rows       $rows
  revision   $(field revision)
  size       $(field size) bytes ($gz_size bytes gzipped)
  sha256     $(field sha256)
  import     installed=$(report 1 installed), revision $(report 1 fromRevision) -> $(report 1 toRevision), $(report 1 changeSets) change sets
             ($(report 1 inserted) inserted, $(report 1 updated) updated, $(report 1 deleted) deleted); second run: $second_changes change sets
  app db     $out/app/demo.sqlite, row by row equal to the server:
$(sed 's/^/  /' "$work/compare.txt")
  published  $seed_url, signed by key $(sed -n 's/^key id //p' "$work/keygen.txt")
             a fresh app with no shipped seed downloaded it and caught up, row by row equal to the server:
$(sed 's/^  /    /' "$work/compare-url.txt")
             registered, the server offered it to a fresh app with no seed and no address, which installed it
             and caught up, row by row equal to the server ($(grep -c 'equal to the server' "$work/compare-found.txt") tables)
  upgrade    $(cat "$work/upgrade.txt")
  old app    stayed on version 1: revision $(report_of old-app fromRevision) -> $(report_of old-app toRevision), $(report_of old-app changeSets) change sets
  new app    installed version 1, migrated to 2 ($(report_of new-app rowsDownloaded) rows, $(report_of new-app bytesDownloaded) bytes downloaded), equal to the server:
$(sed 's/^  /    /' "$work/compare-new.txt")
  old app, updated: migrated in place ($(report_of updated-app rowsDownloaded) rows, $(report_of updated-app bytesDownloaded) bytes downloaded), equal to the server:
$(sed 's/^  /    /' "$work/compare-updated.txt")
  write-back app A: $(sed -n 's/^seed-import: //p' "$work/push-1.err" | head -n 1)
             app B: $(sed -n 's/^seed-import: //p' "$work/push-2.err" | head -n 1)
             both app databases row by row equal to the server:
$(sed 's/^  /    app A: /' "$work/compare-app-a.txt"; sed 's/^  /    app B: /' "$work/compare-app-b.txt")
  teams      one build, a seed per team: $(grep -c '^wrote .*clubs\.team-' "$work/teams-build.txt") seeds in $out/teams/
             app of team 1: revision $(report_of team-1 fromRevision) -> $(report_of team-1 toRevision), $(report_of team-1 changeSets) change sets:
$(sed 's/^  /    /' "$work/team-1.txt")
             app of team 2: revision $(report_of team-2 fromRevision) -> $(report_of team-2 toRevision), $(report_of team-2 changeSets) change sets:
$(sed 's/^  /    /' "$work/team-2.txt")
  steps
$(printf '    %s\n' "${steps[@]}")
SUMMARY
