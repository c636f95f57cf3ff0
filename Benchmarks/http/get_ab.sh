#!/usr/bin/env bash
# GET /v1/items/{id} of several stockroom binaries beside the bare Hummingbird route
# (BaselineServer), interleaved: each round runs the bare route, then each binary in the order
# given, wrk -t2 -c32 -d${DURATION}s on one demo item (as Benchmarks/http/run.sh's read rows).
# Prints, per round and target, req/s and the server's CPU per request (utime + stime from /proc
# over the wrk run), and each binary's ratio to the bare route of the same round. CPU per request
# moves less than throughput when the machine is noisy.
#
#   bash Benchmarks/http/get_ab.sh NAME=BINARY [NAME=BINARY ...]      # ROUNDS=3 DURATION=5
#
# Each stockroom serves `--demo` on its own fresh database, LOG_LEVEL=warning (as run.sh). A
# binary copied out of its build folder needs its resource bundles beside it. BaselineServer is
# built with the Benchmarks package first unless SKIP_BUILD=1; BASELINE_BIN=path runs another build
# of it (one with the Swift runtime linked statically, as the shipped server is).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
[ $# -gt 0 ] || { echo "usage: bash Benchmarks/http/get_ab.sh NAME=BINARY [NAME=BINARY ...]" >&2; exit 2; }
WRK_SCRIPT="$ROOT/Benchmarks/http/get.lua"
log() { printf '[get_ab %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }
# shellcheck source=../lib.sh
. "$ROOT/Benchmarks/lib.sh"
need_wrk
baseline_bin
WORK="$(mktemp -d /tmp/getab.XXXXXX)"
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

declare -A URL TOKENS PID
"$BASELINE_BIN" 8190 >"$WORK/baseline.out" 2>&1 &
PID[bare]=$!; PIDS+=($!)
port=8191
NAMES=()
for argument in "$@"; do
    name=${argument%%=*}
    NAMES+=("$name")
    start_demo "${argument#*=}" "$port" "$WORK/$name" LOG_LEVEL=warning
    PID[$name]=$DEMO_PID; PIDS+=("$DEMO_PID"); TOKENS[$name]=$TOKEN
    URL[$name]="http://127.0.0.1:$port/v1/items/$ITEM"
    port=$((port + 1))
done
for _ in $(seq 150); do curl -sf http://127.0.0.1:8190/health >/dev/null && break; sleep 0.2; done

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# measure PID URL [wrk header arguments]: "req/s µs-of-CPU-per-request"
measure() {
    local pid=$1 url=$2 before after output
    shift 2
    before=$(ticks "$pid")
    output=$(wrk -t2 -c32 -d"${DURATION}s" -s "$WRK_SCRIPT" "$@" "$url")
    after=$(ticks "$pid")
    if ! grep -q "^RESULT .* errors=0 socket_errors=0" <<<"$output"; then echo "errors from $url: $output" >&2; exit 1; fi
    python3 - "$(awk '/Requests\/sec/ { print $2 }' <<<"$output")" "$(awk '/requests in/ { print $1 }' <<<"$output")" \
        "$before" "$after" "$(getconf CLK_TCK)" <<'PY'
import sys
rate, count, before, after, hz = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
print(f"{rate:.0f} {(after - before) / hz * 1e6 / count:.1f}")
PY
}

for round in $(seq "$ROUNDS"); do
    read -r bare bare_cpu < <(measure "${PID[bare]}" "http://127.0.0.1:8190/v1/items/3b9cae79-8edb-454f-984b-3139c68c24f7")
    line="round $round: bare $bare req/s ${bare_cpu} µs/req"
    for name in "${NAMES[@]}"; do
        read -r rate cpu < <(measure "${PID[$name]}" "${URL[$name]}" -H "Authorization: Bearer ${TOKENS[$name]}")
        line+=" | $name $rate req/s ${cpu} µs/req ($(python3 -c "print(f'{$rate / $bare:.3f}')")x)"
    done
    echo "$line"
done
