#!/usr/bin/env bash
# What one GET /v1/items/{id} reads and misses in the caches, stockroom beside the bare Hummingbird
# route (BaselineServer, as Benchmarks/http/get_ab.sh): each server runs under valgrind's callgrind
# with its cache simulation, takes WARMUP GETs over one keep-alive connection, then exactly N more
# between two `callgrind_control --dump`s. Prints, per GET, the instructions, the data reads and
# writes, the misses of the first-level caches (instructions; data read and written) and of the
# last level the simulation is given (LL; by default 512 KiB, 8 ways, 64-byte lines: this
# machine's per-core L2, so "LL" here counts what a GET fetches from beyond its core's L2), and
# stockroom's ratio to the bare route. Stockroom serves `--demo` at LOG_LEVEL=warning (as get_ab.sh)
# with AUTH_REVOCATION_CHECK_MILLISECONDS=60000 (as callgrind/run.sh), so that no revocation check
# falls in the window. Counted, not timed: instructions and first-level misses repeat within a few
# per cent from run to run; the LL misses move by up to a third (what else the servers' threads run
# between the GETs), so compare medians of three runs.
#
#   bash Benchmarks/callgrind/cache.sh                      (this checkout's release binary)
#   BIN=/path/to/stockroom bash Benchmarks/callgrind/cache.sh
#
# Settings (environment):
#   BIN         the stockroom binary (default: build .build-release/release/stockroom here)
#   SKIP_BUILD=1  with the default BIN, and for BaselineServer, do not build first
#   N=300       measured GETs per server
#   WARMUP=100  unmeasured GETs before them
#   LL=524288,8,64  valgrind's --LL (size, ways, line); I1 and D1 are valgrind's defaults (the host's)
#   TOP=0       K > 0 also prints stockroom's K functions with the most LL misses in the window (by
#               their own cost; the threads' entry frames, which callgrind charges with everything
#               below them when a dump falls while they run, are left out)
#   KEEP_TMP=0  1 keeps the temporary folder (servers' output, callgrind dumps)
# Exit status: 0 when every GET answered 200, 2 for a setup problem.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
N="${N:-300}"
WARMUP="${WARMUP:-100}"
LL="${LL:-524288,8,64}"
TOP="${TOP:-0}"
KEEP_TMP="${KEEP_TMP:-0}"
BARE_PORT=8096
PORT=8097

log() { printf '[cache %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }

# shellcheck source=../lib.sh
. "$ROOT/Benchmarks/lib.sh"
callgrind_preflight "$PORT"
if curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$BARE_PORT/"; then die "something already listens on 127.0.0.1:$BARE_PORT"; fi
baseline_bin

TMP="$(mktemp -d "${TMPDIR:-/tmp}/stockroom-cache.XXXXXX")"
SERVER_PID=""
cleanup() {
    stop_pid "$SERVER_PID" "server under callgrind" 600
    if [ "$KEEP_TMP" = "1" ]; then log "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "binary: $BIN ($(sha256sum "$BIN" | cut -c1-12)); LL $LL"
callgrind_copy "$BIN" "$TMP"
strip --strip-debug -o "$TMP/BaselineServer" "$BASELINE_BIN" || die "strip failed"
VALGRIND=(valgrind --tool=callgrind --cache-sim=yes "--LL=$LL")

# measure PORT PATH TOKEN OUT: WARMUP GETs of PATH, a dump, N GETs, a dump (OUT.2 holds the N).
measure() {
    python3 - "$1" "$2" "$3" "$SERVER_PID" "$WARMUP" "$N" <<'PY' || die "the GETs failed"
import http.client, subprocess, sys, time
port, path, token, pid, warmup, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
headers = {"Authorization": f"Bearer {token}"} if token else {}
def get():
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    response.read()
    if response.status != 200:
        sys.exit(f"GET {path}: {response.status}")
for _ in range(warmup):
    get()
time.sleep(1)  # what the server does after the last answer falls before the dump
subprocess.run(["callgrind_control", "--dump=warm", pid], check=True, capture_output=True)
for _ in range(n):
    get()
time.sleep(1)
subprocess.run(["callgrind_control", "--dump=measured", pid], check=True, capture_output=True)
PY
    [ -f "$4.2" ] || die "missing dump $4.2"
}

log "the bare route under callgrind"
( cd "$TMP" && LD_PRELOAD="$TMP/sigsuspend-shim.so" exec "${VALGRIND[@]}" --callgrind-out-file="$TMP/bare.out" \
      "$TMP/BaselineServer" "$BARE_PORT" >"$TMP/bare.log" 2>&1 ) &
SERVER_PID=$!
for _ in $(seq 1 600); do
    kill -0 "$SERVER_PID" 2>/dev/null || { tail -n 20 "$TMP/bare.log" >&2; die "BaselineServer exited during startup"; }
    curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:$BARE_PORT/health" && break
    sleep 0.5
done
measure "$BARE_PORT" /v1/items/3b9cae79-8edb-454f-984b-3139c68c24f7 "" "$TMP/bare.out"
stop_pid "$SERVER_PID" "BaselineServer under callgrind" 600

log "stockroom under callgrind"
( cd "$TMP" && LOG_LEVEL=warning AUTH_REVOCATION_CHECK_MILLISECONDS=60000 LD_PRELOAD="$TMP/sigsuspend-shim.so" exec "${VALGRIND[@]}" --callgrind-out-file="$TMP/sr.out" \
      "$TMP/stockroom" serve --demo --db-path "$TMP/cache.sqlite" --http-host 127.0.0.1 --http-port "$PORT" \
      >"$TMP/sr.log" 2>"$TMP/sr.err" ) &
SERVER_PID=$!
demo_server_ready "$SERVER_PID" "$PORT" "$TMP/sr.log" "$TMP/sr.err"
measure "$PORT" "/v1/items/$ITEM" "$TOKEN" "$TMP/sr.out"
stop_pid "$SERVER_PID" "stockroom under callgrind" 600
SERVER_PID=""

python3 - "$TMP/bare.out.2" "$TMP/sr.out.2" "$N" <<'PY'
import sys
def totals(path):
    events = None
    for line in open(path):
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("totals:") or line.startswith("summary:"):
            return dict(zip(events, map(int, line.split()[1:])))
    sys.exit(f"no totals in {path}")
n = int(sys.argv[3])
bare, stockroom = totals(sys.argv[1]), totals(sys.argv[2])
rows = [
    ("instructions", ["Ir"]),
    ("data reads and writes", ["Dr", "Dw"]),
    ("first-level misses, instructions", ["I1mr"]),
    ("first-level misses, data", ["D1mr", "D1mw"]),
    ("LL misses, instructions", ["ILmr"]),
    ("LL misses, data", ["DLmr", "DLmw"]),
]
print(f"per GET, {n} GETs\tbare route\tstockroom\tratio")
for name, keys in rows:
    b = sum(bare[k] for k in keys) / n
    s = sum(stockroom[k] for k in keys) / n
    print(f"{name}\t{b:,.0f}\t{s:,.0f}\t{s / b:.2f}x")
PY

if [ "$TOP" -gt 0 ]; then
    log "stockroom's $TOP functions with the most LL misses (instruction, then data) over the $N GETs"
    callgrind_annotate --inclusive=no --threshold=100 --sort=ILmr,DLmr --show=Ir,ILmr,DLmr,DLmw "$TMP/sr.out.2" 2>/dev/null \
        | grep -E '^ *[0-9,]+ ' | grep -v 'PROGRAM TOTALS' | awk 'match($0, /\( *[0-9.]+%\)/) && substr($0, RSTART + 1, RLENGTH - 3) + 0 < 50' \
        | head -n "$TOP" \
        | { if command -v swift >/dev/null; then swift demangle --simplified; else cat; fi; } >&2 || true
fi
