#!/usr/bin/env bash
# Filtered feeds (issue #42): the fan-out under filters, beside the same fan-out unfiltered, and the
# server's CPU per write with many filters the write does not match. See Benchmarks/README.md,
# "Filtered feeds". From anywhere:
#
#   bash Benchmarks/feed/filtered.sh
#
# Settings (environment): STREAMS=1000 WRITES=100 INTERVAL_MS=20 REPS=3 (latency), CPU_STEPS="10 10000"
# CPU_WRITES=300 (cpu), PHASES="latency cpu", PORT=8094, SKIP_BUILD=1, STOCKROOM_BIN=PATH, KEEP_TMP=1.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
FEED_DIR="$ROOT/Benchmarks/feed"
cd "$ROOT"
STREAMS="${STREAMS:-1000}"
WRITES="${WRITES:-100}"
INTERVAL_MS="${INTERVAL_MS:-20}"
REPS="${REPS:-3}"
CPU_STEPS="${CPU_STEPS:-10 10000}"
CPU_WRITES="${CPU_WRITES:-300}"
PHASES="${PHASES:-latency cpu}"
PORT="${PORT:-8094}"
SKIP_BUILD="${SKIP_BUILD:-0}"
KEEP_TMP="${KEEP_TMP:-0}"

log() { printf '[filtered.sh %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }

ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" || true
TMP="$(mktemp -d "${TMPDIR:-/tmp}/stockroom-filtered.XXXXXX")"
SERVER_PID=""
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cleanup() {
    stop_pid "$SERVER_PID" stockroom
    if [ "$KEEP_TMP" = "1" ]; then log "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

STOCKROOM_BUILD=(deploy/release-build.sh --scratch-path .build-release)
if [ -z "${STOCKROOM_BIN:-}" ] && [ "$SKIP_BUILD" != "1" ]; then
    log "building stockroom: ${STOCKROOM_BUILD[*]}"
    "${STOCKROOM_BUILD[@]}" >"$TMP/build.log" 2>&1 || { tail -n 40 "$TMP/build.log" >&2; die "build failed"; }
fi
STOCKROOM_BIN="${STOCKROOM_BIN:-$("${STOCKROOM_BUILD[@]}" --show-bin-path)/stockroom}"
absolute_bin STOCKROOM_BIN

start_server() {
    local name="$1" i
    log "starting stockroom ($name) on 127.0.0.1:$PORT"
    ( cd "$TMP" && LOG_LEVEL=warning FEED_MAX_SUBSCRIBERS=20000 FEED_MAX_SUBSCRIBERS_PER_TOKEN=20000 \
          exec "$STOCKROOM_BIN" serve --demo --db-path "$TMP/$name.sqlite" --http-host 127.0.0.1 --http-port "$PORT" \
          >"$TMP/$name.out" 2>"$TMP/$name.err" ) &
    SERVER_PID=$!
    for i in $(seq 1 300); do
        kill -0 "$SERVER_PID" 2>/dev/null || die "stockroom exited during startup (see $TMP/$name.err)"
        if curl -sf -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/health"; then break; fi
        sleep 0.2
    done
    TOKEN="$(sed -n 's/^[[:space:]]*export TOKEN=//p' "$TMP/$name.out" | tail -n 1)"
    [ -n "$TOKEN" ] || die "no token in stockroom's output"
}

FAILED=0
for phase in $PHASES; do
    start_server "$phase"
    case "$phase" in
        latency)
            python3 "$FEED_DIR/filtered.py" latency --port "$PORT" --token "$TOKEN" --pid "$SERVER_PID" --streams "$STREAMS" \
                --writes "$WRITES" --interval-ms "$INTERVAL_MS" --reps "$REPS" --out "$TMP/latency.json" || FAILED=1 ;;
        cpu)
            python3 "$FEED_DIR/filtered.py" cpu --port "$PORT" --token "$TOKEN" --pid "$SERVER_PID" --steps "$CPU_STEPS" \
                --writes "$CPU_WRITES" --reps "$REPS" --out "$TMP/cpu.json" || FAILED=1 ;;
        *) die "unknown phase $phase" ;;
    esac
    stop_pid "$SERVER_PID" stockroom
    SERVER_PID=""
done

python3 - "$TMP" <<'PY'
import json, os, statistics, sys
tmp = sys.argv[1]
if os.path.exists(f"{tmp}/latency.json"):
    rounds = json.load(open(f"{tmp}/latency.json"))["rounds"]
    for filtered in (False, True):
        rs = [r for r in rounds if r["filtered"] == filtered]
        p99 = statistics.median(r["after_ack"]["p99_ms"] for r in rs)
        p50 = statistics.median(r["after_ack"]["p50_ms"] for r in rs)
        cpu = statistics.median(r["server_cpu_s"] / r["writes"] * 1e3 for r in rs)
        name = "filtered (each its own filter)" if filtered else "unfiltered"
        print(f"latency {name}: {rs[0]['streams']} streams, pairs/round {rs[0]['pairs']}, after ack p50 {p50:.2f} ms p99 {p99:.2f} ms "
              f"(rounds {', '.join(str(r['after_ack']['p99_ms']) for r in rs)}), server CPU {cpu:.2f} ms/write, errors {sum(r['error_count'] for r in rs)}")
    un = statistics.median(r["after_ack"]["p99_ms"] for r in rounds if not r["filtered"])
    fi = statistics.median(r["after_ack"]["p99_ms"] for r in rounds if r["filtered"])
    print(f"latency ratio: filtered p99 / unfiltered p99 = {fi / un:.2f}x (target <= 1.5x)")
if os.path.exists(f"{tmp}/cpu.json"):
    steps = json.load(open(f"{tmp}/cpu.json"))["steps"]
    keys = sorted({(s["streams"], s["filters"]) for s in steps})
    med = {}
    for key in keys:
        values = [s["per_write_us"] for s in steps if (s["streams"], s["filters"]) == key]
        med[key] = statistics.median(values)
        print(f"cpu {key[0]} streams, {key[1]}: {med[key]:.0f} us/write (runs {', '.join(f'{v:.0f}' for v in values)})")
    indexed = sorted(k for k in keys if k[1] == "equality and range")
    if len(indexed) >= 2:
        print(f"cpu ratio: {indexed[-1][0]} / {indexed[0][0]} filters = {med[indexed[-1]] / med[indexed[0]]:.2f}x (target <= 2x)")
PY
[ "$FAILED" = 0 ] || { log "a phase failed or was invalid (see above)"; exit 1; }
