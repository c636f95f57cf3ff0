#!/usr/bin/env bash
# Instructions (Ir) and allocations per SSE delivery of a stockroom server under callgrind: what a
# commit seen by many parked streams costs the server per stream, in user space. See
# Benchmarks/README.md, "Instructions per SSE delivery".
#
#   bash Benchmarks/callgrind/fanout.sh                 (builds this checkout's release binary)
#   BIN=/path/to/stockroom bash Benchmarks/callgrind/fanout.sh
#
# One server under `valgrind --tool=callgrind` (`serve --demo`, SQLite in a temporary folder,
# AUTH_REVOCATION_CHECK_MILLISECONDS=60000 as in run.sh, FEED_HEARTBEAT_SECONDS=3600 so that no
# heartbeat falls in a window), then four windows of the same length,
# each between two `callgrind_control --dump`s:
#   idle      nothing;
#   puts      WRITES PUTs of one item (each after a GET for its version), SPACING seconds apart;
#   streams   nothing, with STREAMS SSE streams open (Benchmarks/feed/sse_sink.c): what parked
#             streams cost while no commit comes (the once-a-second sweep of every stream);
#   fan-out   the same PUTs with the streams open.
# Per delivery = (fan-out - streams - puts + idle) / (WRITES x STREAMS). The sink then checks that
# every stream received every write.
#
# Settings: BIN, SKIP_BUILD=1, STREAMS=200, WRITES=4, SPACING=4, PORT=8097, KEEP_TMP=0,
#           ANNOTATE=0 (1 prints callgrind_annotate's top 40 inclusive entries of the fan-out window)
# Exit status: 0 when every stream saw every write, 2 for a setup problem.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/Benchmarks/callgrind"
STREAMS="${STREAMS:-200}"
WRITES="${WRITES:-4}"
SPACING="${SPACING:-4}"
PORT="${PORT:-8097}"
KEEP_TMP="${KEEP_TMP:-0}"
ANNOTATE="${ANNOTATE:-0}"

log() { printf '[fanout %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }
command -v cc >/dev/null || die "a C compiler is required (for sse_sink.c and sigsuspend-shim.c)"
. "$ROOT/Benchmarks/lib.sh"
callgrind_preflight "$PORT"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/stockroom-cg-fanout.XXXXXX")"
SERVER_PID=""
SINK_PID=""
cleanup() {
    stop_pid "$SINK_PID" "sse_sink" 50
    stop_pid "$SERVER_PID" "stockroom under callgrind" 600
    if [ "$KEEP_TMP" = "1" ]; then log "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "binary: $BIN ($(sha256sum "$BIN" | cut -c1-12))"
# As in run.sh: a copy without debug information, with a shim preloaded (lib.sh, callgrind_copy).
callgrind_copy "$BIN" "$TMP"
cc -O2 -o "$TMP/sse_sink" "$ROOT/Benchmarks/feed/sse_sink.c" || die "could not build sse_sink"

( cd "$TMP" && LOG_LEVEL=warning AUTH_REVOCATION_CHECK_MILLISECONDS=60000 FEED_HEARTBEAT_SECONDS=3600 FEED_MAX_SUBSCRIBERS_PER_TOKEN=$((STREAMS + 16)) \
      LD_PRELOAD="$TMP/sigsuspend-shim.so" exec valgrind --tool=callgrind --callgrind-out-file="$TMP/callgrind.out" \
      "$TMP/stockroom" serve --demo --db-path "$TMP/cg.sqlite" --http-host 127.0.0.1 --http-port "$PORT" \
      >"$TMP/server.out" 2>"$TMP/server.err" ) &
SERVER_PID=$!
demo_server_ready "$SERVER_PID" "$PORT" "$TMP/server.out" "$TMP/server.err"

put() {
    local version
    version="$(curl -sf "http://127.0.0.1:$PORT/v1/items/$ITEM" -H "Authorization: Bearer $TOKEN" \
        | grep -o '"version":[0-9]*' | cut -d: -f2)"
    curl -sf -o /dev/null -X PUT "http://127.0.0.1:$PORT/v1/items/$ITEM" -H "Authorization: Bearer $TOKEN" \
        -H "If-Match: \"$version\"" -H 'Content-Type: application/json' \
        -d "{\"name\":\"$1\",\"color\":null,\"status\":{\"inStock\":{\"quantity\":1}}}" || die "PUT $1 failed"
}
# callgrind acts on a dump request only when one of the server's threads next runs: a /health
# before and after the wait makes sure it has (the same two requests in every window).
dump() {
    callgrind_control -d "$SERVER_PID" >/dev/null
    sleep 0.5
    curl -sf -o /dev/null "http://127.0.0.1:$PORT/health"
    sleep 0.5
    curl -sf -o /dev/null "http://127.0.0.1:$PORT/health"
}
numbered() { ls "$TMP"/callgrind.out.* | sed 's/.*\.//' | sort -n | tail -n 1; }
window() {  # window LABEL BODY...: runs BODY between two dumps, remembers the dump that closed it
    local label="$1"; shift
    dump
    "$@"
    dump
    printf '%s\t%s\n' "$label" "$(numbered)" >>"$TMP/windows.tsv"
}
wait_only() { sleep $((WRITES * SPACING)); }
puts() {
    local prefix="$1" i
    for i in $(seq 1 "$WRITES"); do put "$prefix$i"; sleep "$SPACING"; done
}

for i in 1 2 3 4 5; do put "warm$i"; done
window idle wait_only
window puts puts alone
log "opening $STREAMS streams"
MARKER="fan-out last"
"$TMP/sse_sink" "$PORT" "$TOKEN" "$STREAMS" "$MARKER\"" "$TMP/sink.bin" 900 >"$TMP/sink.out" &
SINK_PID=$!
for _ in $(seq 1 1200); do grep -q READY "$TMP/sink.out" && break; sleep 0.5; done
grep -q READY "$TMP/sink.out" || die "the streams did not open"
# The server finishes each stream's start (its catch-up round, parking) after the sink has its
# `: open`; under callgrind that takes a while: an unmeasured window lets it end.
window settle sleep 10
window streams wait_only
window fan-out puts fan
put "$MARKER"
wait "$SINK_PID" || true
SINK_PID=""
grep -q DONE "$TMP/sink.out" || die "the sink did not finish"

python3 - "$TMP" "$WRITES" "$STREAMS" "$HERE/summarize.py" "$MARKER" <<'PY'
import struct, subprocess, sys
tmp, writes, streams, summarize, marker = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
# Every stream received every write of the fan-out window, and the last one: the sink's reads, per stream.
received = [bytearray() for _ in range(streams)]
data = open(f"{tmp}/sink.bin", "rb").read()
at = 0
while at < len(data):
    _, index, length = struct.unpack_from("<QII", data, at)
    received[index] += data[at + 16 : at + 16 + length]
    at += 16 + length
names = [f"fan{i}" for i in range(1, writes + 1)] + [marker]
missing = sum(1 for stream in received for name in names if f'"name":"{name}"'.encode() not in stream)
if missing:
    sys.exit(f"{missing} deliveries missing (of {streams * len(names)})")
rows = {}
for line in open(f"{tmp}/windows.tsv"):
    label, number = line.split()
    _, ir, allocations, _ = subprocess.check_output(["python3", summarize, f"{tmp}/callgrind.out.{number}"], text=True).split("\t")
    rows[label] = (int(ir), float(allocations))
    print(f"{label:8s} {int(ir):>14,} Ir {float(allocations):>10,.0f} allocations")
ir = rows["fan-out"][0] - rows["streams"][0] - rows["puts"][0] + rows["idle"][0]
allocations = rows["fan-out"][1] - rows["streams"][1] - rows["puts"][1] + rows["idle"][1]
print(f"per delivery ({writes} writes x {streams} streams): {ir / (writes * streams):,.0f} Ir, {allocations / (writes * streams):.2f} allocations")
print(f"parked streams, idle: {(rows['streams'][0] - rows['idle'][0]) / streams:,.0f} Ir per stream per window")
PY
if [ "$ANNOTATE" = "1" ]; then
    number="$(awk '$1 == "fan-out" { print $2 }' "$TMP/windows.tsv")"
    callgrind_annotate --inclusive=yes "$TMP/callgrind.out.$number" 2>/dev/null | grep -E '^ *[0-9,]+ ' | head -n 40 \
        | { if command -v swift >/dev/null; then swift demangle --simplified; else cat; fi; } >&2 || true
fi
