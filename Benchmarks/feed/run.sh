#!/usr/bin/env bash
# Stockroom change-feed benchmark. See Benchmarks/README.md ("Change feed") for what each figure means.
#
#   bash Benchmarks/feed/run.sh            (from the repository root, or from anywhere)
#
# Builds a release stockroom (scratch folder .build-release), then, each time on a fresh server
# (demo data, a new database in a temporary folder, 127.0.0.1:$PORT):
#   (1) latency  N SSE subscribers (GET /v1/changes/stream?since=now&topics=items) per round,
#                M sequential PUT /v1/items/{id} INTERVAL_MS apart; commit-to-delivery latency
#                per (subscriber, write) pair, and a check that every subscriber received every
#                write exactly once and in order. REPS rounds per N, interleaved.
#   (2) idle     idle SSE subscribers opened in steps; server VmRSS per step, and one PUT per
#                step that must reach every subscriber.
# The load generator is Benchmarks/feed/feedbench.py (Python 3, asyncio, stdlib only). The summary
# is printed and written to Benchmarks/feed/last-run.txt. Any missed, duplicated or out-of-order
# delivery, failed write or dropped subscriber makes the run invalid (exit status 1).
#
# Settings (environment):
#   PLAN="1:200 50:200 1000:100"   N:M pairs (subscribers:writes) for (1)
#   REPS=3               rounds per N (the summary gives the median of the rounds)
#   INTERVAL_MS=20       spacing of the PUTs' start times
#   IDLE_STEPS="1000 2000 5000 10000"  cumulative idle connections for (2)
#   PORT=8093
#   PHASES="latency idle"  which parts to run
#   SKIP_BUILD=1         reuse the binary already built
#   STOCKROOM_BIN=PATH   benchmark this binary instead (no build): to interleave two builds' runs
#   SUMMARY=FILE         where the summary goes (default Benchmarks/feed/last-run.txt)
#   CLIENT=c             latency subscribers in C (sse_sink.c, built with cc), not asyncio: the
#                        Python client's own ~8 us per delivery then stays out of the latency
#   KEEP_TMP=1           keep the temporary folder (databases, server logs, raw JSON results)
#   DB_SYNCHRONOUS, FEED_*  passed to stockroom as usual (defaults: full, heartbeat 15 s, ...);
#                        FEED_MAX_SUBSCRIBERS and FEED_MAX_SUBSCRIBERS_PER_TOKEN default to the
#                        most subscribers the plan opens at once, plus 16
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
FEED_DIR="$ROOT/Benchmarks/feed"
cd "$ROOT"

PLAN="${PLAN:-1:200 50:200 1000:100}"
REPS="${REPS:-3}"
INTERVAL_MS="${INTERVAL_MS:-20}"
IDLE_STEPS="${IDLE_STEPS:-1000 2000 5000 10000}"
PORT="${PORT:-8093}"
PHASES="${PHASES:-latency idle}"
SKIP_BUILD="${SKIP_BUILD:-0}"
KEEP_TMP="${KEEP_TMP:-0}"
REPRO_COMMAND="bash Benchmarks/feed/run.sh"
# Every subscriber uses the demo's one token: the server's limits on subscribers (256 per token,
# 10,000 in all by default) are raised to the most this plan opens at once, unless set.
MOST_OPEN=16
for pair in $PLAN; do [ "${pair%%:*}" -gt "$MOST_OPEN" ] && MOST_OPEN="${pair%%:*}"; done
for step in $IDLE_STEPS; do [ "$step" -gt "$MOST_OPEN" ] && MOST_OPEN="$step"; done
export FEED_MAX_SUBSCRIBERS_PER_TOKEN="${FEED_MAX_SUBSCRIBERS_PER_TOKEN:-$((MOST_OPEN + 16))}"
export FEED_MAX_SUBSCRIBERS="${FEED_MAX_SUBSCRIBERS:-$((MOST_OPEN + 16))}"

log() { printf '[run.sh %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }

command -v curl >/dev/null || die "curl is required"
command -v python3 >/dev/null || die "python3 is required"
python3 -c 'import sys; sys.exit(sys.version_info < (3, 9))' || die "python3 >= 3.9 is required"

# One socket per subscriber on each side: the server and the client inherit this limit.
# 65536 if allowed; otherwise as high as the hard limit goes (a container may cap it).
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" || true
FD_LIMIT="$(ulimit -n)"
MAX_STEP="$(printf '%s\n' $IDLE_STEPS | sort -n | tail -n 1)"
if [ "$FD_LIMIT" != unlimited ] && [ "$FD_LIMIT" -lt $((MAX_STEP + 200)) ]; then
    log "WARNING: open-file limit $FD_LIMIT is below the largest idle step ($MAX_STEP): that step will fail on EMFILE"
fi

TMP="$(mktemp -d "${TMPDIR:-/tmp}/stockroom-feedbench.XXXXXX")"
SERVER_PID=""

# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

cleanup() {
    stop_pid "$SERVER_PID" stockroom
    if [ "$KEEP_TMP" = "1" ]; then log "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- build
STOCKROOM_BUILD=(deploy/release-build.sh --scratch-path .build-release)
GIVEN_BIN="${STOCKROOM_BIN:-}"
if [ -n "$GIVEN_BIN" ]; then
    SKIP_BUILD=1
elif [ "$SKIP_BUILD" != "1" ]; then
    log "building stockroom: ${STOCKROOM_BUILD[*]}"
    "${STOCKROOM_BUILD[@]}" >"$TMP/build-stockroom.log" 2>&1 || { tail -n 40 "$TMP/build-stockroom.log" >&2; die "stockroom build failed"; }
fi
STOCKROOM_BIN="${STOCKROOM_BIN:-$("${STOCKROOM_BUILD[@]}" --show-bin-path)/stockroom}"
absolute_bin STOCKROOM_BIN "build first, or unset SKIP_BUILD"

if curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/"; then
    die "something already listens on 127.0.0.1:$PORT"
fi

# start_server NAME: a fresh stockroom with demo data; sets SERVER_PID and TOKEN.
start_server() {
    local name="$1" i
    log "starting stockroom ($name) on 127.0.0.1:$PORT (database $TMP/$name.sqlite)"
    # Started from the temporary folder, so that no Config/stockroom.json is picked up by accident.
    ( cd "$TMP" && LOG_LEVEL=warning exec "$STOCKROOM_BIN" serve --demo --db-path "$TMP/$name.sqlite" \
          --http-host 127.0.0.1 --http-port "$PORT" >"$TMP/$name.out" 2>"$TMP/$name.err" ) &
    SERVER_PID=$!
    for i in $(seq 1 300); do
        kill -0 "$SERVER_PID" 2>/dev/null || die "stockroom exited during startup (see $TMP/$name.err)"
        if curl -sf -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/health"; then break; fi
        sleep 0.2
    done
    curl -sf -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/health" || die "stockroom did not answer /health within 60 s"
    TOKEN="$(sed -n 's/^[[:space:]]*export TOKEN=//p' "$TMP/$name.out" | tail -n 1)"
    [ -n "$TOKEN" ] || die "no 'export TOKEN=' line in stockroom's output ($TMP/$name.out)"
}

# stop_server NAME: SIGTERM, then report anything it wrote to stderr.
stop_server() {
    local name="$1"
    kill -0 "$SERVER_PID" 2>/dev/null || log "WARNING: stockroom ($name) is no longer running (crashed?)"
    stop_pid "$SERVER_PID" stockroom
    SERVER_PID=""
    if [ -s "$TMP/$name.err" ]; then
        log "stockroom ($name) wrote to stderr (last 10 of $(wc -l <"$TMP/$name.err") lines):"
        tail -n 10 "$TMP/$name.err" >&2
    fi
}

LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
FAILED=0

for phase in $PHASES; do
    case "$phase" in
        latency)
            start_server latency
            log "latency: plan \"$PLAN\" (N:M), $REPS rounds, PUTs $INTERVAL_MS ms apart"
            SINK_ARGS=()
            if [ "${CLIENT:-python}" = "c" ]; then
                cc -O2 -o "$TMP/sse_sink" "$FEED_DIR/sse_sink.c" || die "building sse_sink failed"
                SINK_ARGS=(--sink "$TMP/sse_sink")
            fi
            python3 "$FEED_DIR/feedbench.py" latency --port "$PORT" --token "$TOKEN" --pid "$SERVER_PID" \
                --plan "$PLAN" --reps "$REPS" --interval-ms "$INTERVAL_MS" --out "$TMP/latency.json" "${SINK_ARGS[@]}" || FAILED=1
            stop_server latency
            ;;
        idle)
            start_server idle
            log "idle: steps $IDLE_STEPS"
            python3 "$FEED_DIR/feedbench.py" idle --port "$PORT" --token "$TOKEN" --pid "$SERVER_PID" \
                --steps "$IDLE_STEPS" --out "$TMP/idle.json" || FAILED=1
            stop_server idle
            ;;
        *) die "unknown phase $phase (PHASES takes latency and idle)" ;;
    esac
done

LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"

GIT_REV="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git -C "$ROOT" status --porcelain -- Sources Migrations Package.swift 2>/dev/null)" ]; then GIT_REV="$GIT_REV+uncommitted-changes"; fi
if [ -n "$GIVEN_BIN" ]; then GIT_REV="binary $GIVEN_BIN (tree at $GIT_REV)"; fi
SUMMARY="${SUMMARY:-$FEED_DIR/last-run.txt}"

STATUS=0
GIT_REV="$GIT_REV" LOAD_BEFORE="$LOAD_BEFORE" LOAD_AFTER="$LOAD_AFTER" FD_LIMIT="$FD_LIMIT" \
SWIFT_VERSION="$(swift --version 2>/dev/null | head -n 1)" \
    python3 "$FEED_DIR/feedbench.py" report --latency "$TMP/latency.json" --idle "$TMP/idle.json" \
        --summary "$SUMMARY" --command "$REPRO_COMMAND" || STATUS=$?
[ "$FAILED" = 0 ] || { log "a feedbench phase failed (see above)"; exit 2; }
[ "$STATUS" = 0 ] || { log "INVALID run: missed, duplicated or out-of-order deliveries, or errors (see the summary)"; exit 1; }
