#!/usr/bin/env bash
# Instructions (Ir) and allocations per write (or GET: REQUEST=get) of one daemon under load, under callgrind: PUT
# /v1/items/{id} from CONNECTIONS connections at once (so that writes gather into batches), on
# PostgreSQL and on SQLite (synchronous=full). The counts are the daemon's own (every thread; not
# PostgreSQL's, not the kernel's), and unlike CPU time they barely move from run to run: for a
# change to the write path, this says what it removed. See Benchmarks/README.md, "Timers of the
# connection pool".
#
#   bash Benchmarks/callgrind/writes.sh                 (builds this checkout's release binary)
#   BIN=/path/to/stockroom bash Benchmarks/callgrind/writes.sh
#
# For each backend: ITEMS items created by the daemon run normally, then the daemon under
# `valgrind --tool=callgrind`, WARMUP seconds of the load unmeasured, a dump, DURATION seconds
# measured, a dump. Prints per backend the writes, Ir and allocations per write, and the Ir per
# write of each shared object (the binary holds NIO, postgres-nio, Hummingbird and Stockroom).
#
# REQUEST=get: GET /v1/items/{id} of the first item instead (Benchmarks/http/get.lua; run it with
# CONNECTIONS=16, as http/run.sh's wrk -c16): a read's counts under load, per request.
# REQUEST=cycle: bench-compare's save cycle instead (wrk_bench.lua's cycle mode: openEdit,
# updateDraft, save, 64 devices over the items; run it with CONNECTIONS=16, as bench-compare's
# -c16): a command's counts under load, per command.
#
# Settings (environment): BIN, SKIP_BUILD=1, BACKENDS="postgres sqlite", CONNECTIONS=11 (a third
# of puts.sh's 33: one daemon's share), DURATION=20, WARMUP=5, ITEMS=1000, PORT=18631,
# REQUEST=put, KEEP_TMP=0. Needs valgrind, wrk, curl, python3 and PostgreSQL 15 (Benchmarks/postgres/pg.sh;
# run as the postgres user when root).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/Benchmarks/callgrind"
BACKENDS=${BACKENDS:-postgres sqlite} CONNECTIONS=${CONNECTIONS:-11} DURATION=${DURATION:-20} WARMUP=${WARMUP:-5}
ITEMS=${ITEMS:-1000} PORT=${PORT:-18631} KEEP_TMP=${KEEP_TMP:-0}
log() { printf '[writes %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }
REQUEST=${REQUEST:-put}
case $REQUEST in put | get | cycle) ;; *) die "REQUEST is put, get or cycle, not $REQUEST" ;; esac
# shellcheck source=../lib.sh
. "$ROOT/Benchmarks/lib.sh"
need_wrk
callgrind_preflight "$PORT"
LUA="$ROOT/../shared/bench-compare/wrk_bench.lua"
[ -f "$LUA" ] || die "no $LUA (bench-compare's wrk script)"
SERVER_PID=""
stop_daemons() { stop_pid "$SERVER_PID" "the daemon" 600; SERVER_PID=""; }
# shellcheck source=../postgres/pg.sh
. "$ROOT/Benchmarks/postgres/pg.sh"
pg_start callgrind-writes $((PORT + 1))
PG_URL="postgres://postgres@127.0.0.1:$((PORT + 1))/stockroom?sslmode=disable"
TMP="$WORK/callgrind"
mkdir -p "$TMP"
# pg_start's trap removes WORK (TMP with it); KEEP_TMP=1 copies the dumps out first.
keep() { if [ "$KEEP_TMP" = "1" ]; then KEPT="$(mktemp -d /tmp/stockroom-writes.XXXXXX)"; cp -r "$TMP"/. "$KEPT"/; log "kept $KEPT"; fi; }
log "binary: $BIN ($(sha256sum "$BIN" | cut -c1-12))"
callgrind_copy "$BIN" "$TMP"

ready() { for _ in $(seq 1 600); do curl -fs "http://127.0.0.1:$PORT/ready" >/dev/null && return 0; sleep 0.5; done; die "the daemon is not ready"; }
# seed TOKEN LINES: ITEMS items created through the daemon on PORT, one wrk line each (path, body template).
seed() { python3 "$ROOT/Benchmarks/postgres/seed_items.py" "$PORT" "$1" "$2" "$ITEMS"; }
load() { # TOKEN LINES SECONDS OUTPUT
    if [ "$REQUEST" = get ]; then
        wrk -t1 -c"$CONNECTIONS" -d"$3s" -H "Authorization: Bearer $1" -s "$ROOT/Benchmarks/http/get.lua" \
            "http://127.0.0.1:$PORT$(head -n 1 "$2" | cut -f1)" >"$4" 2>&1
    elif [ "$REQUEST" = cycle ]; then
        # The cycle's items ("id<TAB>name") from the seeded lines; devices named after the output
        # file, so that each run starts its devices with nothing open.
        awk -F'\t' '{ sub("^/v1/items/", "", $1); print $1 "\tItem " NR }' "$2" >"$2.items"
        MODE=cycle ITEMS="$2.items" CLIENTS=64 CLIENT_PREFIX="$(basename "$4" | tr -c 'a-z0-9\n' '-')" AUTH="Bearer $1" \
            wrk -t1 -c"$CONNECTIONS" -d"$3s" -s "$LUA" "http://127.0.0.1:$PORT" >"$4" 2>&1
    else
        MODE=write METHOD=PUT LINES="$2" AUTH="Bearer $1" wrk -t1 -c"$CONNECTIONS" -d"$3s" -s "$LUA" "http://127.0.0.1:$PORT" >"$4" 2>&1
    fi
}
# measure NAME TOKEN LINES [serve arguments...]: the load under callgrind, then its figures.
measure() {
    local name=$1 token=$2 lines=$3 dump
    shift 3
    ( cd "$TMP" && LOG_LEVEL=warning LD_PRELOAD="$TMP/sigsuspend-shim.so" exec valgrind --tool=callgrind \
        --callgrind-out-file="$TMP/$name.out" "$TMP/stockroom" serve --http-port "$PORT" "$@" >"$TMP/$name.log" 2>&1 ) &
    SERVER_PID=$!
    ready
    load "$token" "$lines" "$WARMUP" "$TMP/$name.warmup"
    callgrind_control --dump=before "$SERVER_PID" >/dev/null
    load "$token" "$lines" "$DURATION" "$TMP/$name.wrk"
    callgrind_control --dump=load "$SERVER_PID" >/dev/null
    stop_daemons
    grep -q "Non-2xx\|Socket errors" "$TMP/$name.wrk" && die "$name: errors under load: $(cat "$TMP/$name.wrk")"
    dump=$(grep -l "^desc: Trigger: .* load\$" "$TMP/$name.out".* || true)
    [ -n "$dump" ] || die "$name: no dump of the load"
    python3 - "$name" "$(awk '/requests in/ { print $1 }' "$TMP/$name.wrk")" "$dump" "$HERE" "$REQUEST" <<'PY'
import collections, re, subprocess, sys
name, requests, dump, here, request = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
unit = {"put": "write", "get": "GET", "cycle": "command"}[request]
sys.path.insert(0, here)
from summarize import summarize
_, ir, allocations, _ = summarize(dump)
by_object = collections.Counter()
annotate = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", dump], capture_output=True, text=True).stdout
for line in annotate.splitlines():
    match = re.match(r"\s*([\d,]+) \([^)]*\)\s+(.*?)\s+\[(.*)\]\s*$", line)
    # Self cost only: callgrind_annotate lists the threads' entry points, and the functions of a
    # recursion cycle ('2), with the whole of what runs under them.
    skip = ("PROGRAM TOTALS", ":clone", ":start_thread", "NIOThread", "ThreadOpsPosix", "setupThread")
    if match and "'2" not in match.group(2) and not any(word in line for word in skip):
        by_object[match.group(3).rsplit("/", 1)[-1]] += int(match.group(1).replace(",", ""))
print(f"{name}: {requests} {unit}s, {ir // requests:,} Ir and {allocations / requests:.0f} allocations per {unit}")
print(f"  Ir per {unit} by object (self): " + ", ".join(f"{obj} {count // requests:,}" for obj, count in by_object.most_common(6)))
PY
}
for backend in $BACKENDS; do
    case $backend in
    postgres)
        token=$(DB_URL="$PG_URL" "$BIN" token create --user bench --role editor | tail -n 1)
        DB_URL="$PG_URL" LOG_LEVEL=warning "$BIN" serve --http-port "$PORT" >"$TMP/seed.log" 2>&1 &
        SERVER_PID=$!
        ready
        seed "$token" "$TMP/postgres-lines.txt"
        stop_daemons
        DB_URL="$PG_URL" measure postgres "$token" "$TMP/postgres-lines.txt"
        ;;
    sqlite)
        token=$("$BIN" token create --user bench --role editor --db-path "$TMP/sqlite.db" | tail -n 1)
        LOG_LEVEL=warning "$BIN" serve --http-port "$PORT" --db-path "$TMP/sqlite.db" >"$TMP/seed.log" 2>&1 &
        SERVER_PID=$!
        ready
        seed "$token" "$TMP/sqlite-lines.txt"
        stop_daemons
        measure sqlite "$token" "$TMP/sqlite-lines.txt" --db-path "$TMP/sqlite.db"
        ;;
    *) die "unknown backend $backend (postgres, sqlite)" ;;
    esac
done
keep
