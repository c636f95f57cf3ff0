#!/usr/bin/env bash
# bench-compare's two SQLite write rows for several stockroom binaries, interleaved: PUT
# /v1/items/{id} and the save cycle (openEdit, updateDraft, save over 64 devices), each with
# ../shared/bench-compare/wrk_bench.lua, wrk -t1 -c16 -d${DURATION}s, on ITEM_COUNT items per server.
# Prints per round and binary PUT req/s and saves/s (three commands each).
#
#   bash Benchmarks/http/cycle_ab.sh NAME=BINARY [NAME=BINARY ...]      # ROUNDS=3 DURATION=5 ITEM_COUNT=256
#
# WRITER=1 also times the one writer under each run (`perf trace -s -e fdatasync` and `perf stat
# --per-thread -e task-clock` on the server; needs perf and root) and prints for PUT and the cycle:
# commits/s (the WAL's fdatasync calls), writes per commit, the fdatasync's milliseconds per commit,
# and the CPU milliseconds per commit of libdispatch's worker threads, where the writer's queue runs
# (with the little else that runs there). Their sum near 1,000 ms/s means the writer never waited
# for work: a batch's time is its apply plus its flush.
#
# Each stockroom serves `--demo` on its own fresh database at its defaults (synchronous=FULL,
# LOG_LEVEL=info), as bench-compare runs it. A binary copied out of its build folder needs its
# resource bundles beside it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
ITEM_COUNT=${ITEM_COUNT:-256}
WRITER=${WRITER:-0}
WRK_SCRIPT="$ROOT/../shared/bench-compare/wrk_bench.lua"
[ $# -gt 0 ] || { echo "usage: bash Benchmarks/http/cycle_ab.sh NAME=BINARY [NAME=BINARY ...]" >&2; exit 2; }
[ -f "$WRK_SCRIPT" ] || { echo "needs $WRK_SCRIPT" >&2; exit 2; }
log() { printf '[cycle_ab %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }
# shellcheck source=../lib.sh
. "$ROOT/Benchmarks/lib.sh"
need_wrk
[ "$WRITER" = 0 ] || command -v perf >/dev/null || die "WRITER=1 needs perf (apt-get install -y linux-perf)"
WORK="$(mktemp -d /tmp/cycleab.XXXXXX)"
declare -A URL TOKEN SERVER
cleanup() { for pid in "${SERVER[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

port=8291
NAMES=()
for argument in "$@"; do
    name=${argument%%=*}
    NAMES+=("$name")
    start_demo "${argument#*=}" "$port" "$WORK/$name"
    TOKEN[$name]=$TOKEN; SERVER[$name]=$DEMO_PID
    URL[$name]="http://127.0.0.1:$port"
    port=$((port + 1))
done
for name in "${NAMES[@]}"; do
    # items.tsv ("id<TAB>name") for the cycle, lines ("path<TAB>body") for PUT.
    python3 - "${URL[$name]}" "${TOKEN[$name]}" "$WORK/$name" "$ITEM_COUNT" <<'PY'
import http.client, json, sys, urllib.parse
url, token, folder = urllib.parse.urlparse(sys.argv[1]), sys.argv[2], sys.argv[3]
connection = http.client.HTTPConnection(url.hostname, url.port)
with open(folder + "/items.tsv", "w") as items, open(folder + "/lines", "w") as lines:
    for index in range(int(sys.argv[4])):
        body = {"name": f"Item {index}", "color": None, "status": {"inStock": {"quantity": 1}}}
        connection.request("POST", "/v1/items", json.dumps(body), {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
        answer = connection.getresponse()
        item = json.loads(answer.read())
        assert answer.status == 201, answer.status
        items.write(f"{item['id']}\tItem {index}\n")
        template = json.dumps({**body, "status": {"inStock": {"quantity": 0}}}).replace('"quantity": 0', '"quantity": %d')
        lines.write(f"/v1/items/{item['id']}\t{template}\n")
PY
done

# result LINE KEY: the value of KEY in wrk_bench.lua's RESULT line.
result() { sed -n 's/^RESULT .*\b'"$2"'=\([0-9]*\).*/\1/p' <<<"$1"; }

# run_wrk NAME LABEL VAR=VALUE...: one wrk run against NAME's server, its output on stdout; with
# WRITER=1, the writer's figures during it on stderr.
run_wrk() {
    local name=$1 label=$2 output tracer counter
    shift 2
    if [ "$WRITER" != 0 ]; then
        perf trace -s -e fdatasync -p "${SERVER[$name]}" -o "$WORK/trace" 2>/dev/null &
        tracer=$!
        perf stat --per-thread -e task-clock -p "${SERVER[$name]}" -o "$WORK/stat" 2>/dev/null &
        counter=$!
        sleep 0.3
    fi
    output=$(env "$@" wrk -t1 -c16 -d"${DURATION}s" -s "$WRK_SCRIPT" "${URL[$name]}")
    printf '%s\n' "$output"
    [ "$WRITER" != 0 ] || return 0
    kill -INT "$tracer" "$counter"
    wait "$tracer" "$counter" 2>/dev/null || true
    python3 - "$label" "$(result "$output" requests)" "$(result "$output" duration_us)" "$WORK/trace" "$WORK/stat" <<'PY' >&2
import re, sys
label, requests, duration_us, trace, stat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
seconds = duration_us / 1e6
# perf trace -s: "fdatasync  calls  errors  total  min  avg  max  stddev" (milliseconds)
flushes = [(int(m[1]), float(m[2])) for m in (re.match(r"\s*fdatasync\s+(\d+)\s+\d+\s+([\d.]+)", l) for l in open(trace)) if m]
commits, flush_ms = sum(c for c, _ in flushes), sum(t for _, t in flushes)
# perf stat --per-thread: "<comm>-<tid>  <ms> msec task-clock"; libdispatch's workers are named *qos*
workers = sum(float(m[1].replace(",", "")) for m in (re.match(r"\s*\S*qos\S*-\d+\s+([\d,.]+) msec task-clock", l) for l in open(stat)) if m)
if commits == 0:
    sys.exit(f"{label}: no fdatasync seen (perf trace needs root)")
print(f"    {label}: {commits / seconds:,.0f} commits/s, {requests / commits:.2f} writes/commit, "
      f"fdatasync {flush_ms / commits:.3f} ms/commit, dispatch workers' CPU {workers / commits:.3f} ms/commit, "
      f"busy {(flush_ms + workers) / seconds:,.0f} ms/s")
PY
}
for round in $(seq "$ROUNDS"); do
    line="round $round"
    for name in "${NAMES[@]}"; do
        put=$(run_wrk "$name" "$name PUT" MODE=write METHOD=PUT LINES="$WORK/$name/lines" AUTH="Bearer ${TOKEN[$name]}")
        cycle=$(run_wrk "$name" "$name cycle" MODE=cycle ITEMS="$WORK/$name/items.tsv" CLIENTS=64 CLIENT_PREFIX="r$round" \
            AUTH="Bearer ${TOKEN[$name]}")
        for output in "$put" "$cycle"; do
            [ "$(result "$output" status_errors)" = 0 ] && [ "$(result "$output" socket_errors)" = 0 ] ||
                { echo "errors from $name: $output" >&2; exit 1; }
        done
        saves=$(python3 -c "print(f'{$(result "$cycle" saves) / ($(result "$cycle" duration_us) / 1e6):.0f}')")
        line+=" | $name PUT $(awk '/Requests\/sec/ { printf "%.0f", $2 }' <<<"$put") req/s, $saves saves/s"
    done
    echo "$line"
done
