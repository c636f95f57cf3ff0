#!/usr/bin/env bash
# Instructions (Ir) and allocations per request of a stockroom server under valgrind's callgrind:
# exactly one GET /v1/items/{id} (after a write of it, then again), one PUT of it or one save
# command per callgrind dump. See Benchmarks/README.md, "Instruction and allocation counts".
#
#   bash Benchmarks/callgrind/run.sh                 (builds this checkout's release binary)
#   BIN=/path/to/stockroom bash Benchmarks/callgrind/run.sh   (measures that binary instead)
#
# For each of RUNS runs: a fresh database in a temporary folder, the server started under
# `valgrind --tool=callgrind` (`serve --demo`, LOG_LEVEL=warning as in http/run.sh, and
# AUTH_REVOCATION_CHECK_MILLISECONDS=60000 so that no token-generation read falls in a window), WARMUP
# unmeasured GETs, PUTs and edit cycles (openEdit, updateDraft, save) over one keep-alive connection,
# then REPEAT rounds of five windows, each between two `callgrind_control --dump`s: nothing (idle:
# what the idle server and the control commands add to every window), one GET (the round before
# saved the item: SQLite reads it from the database), the same GET again (GETknown: from memory),
# one PUT and one save (its openEdit and updateDraft sent before the window). A dump holds every
# thread's instructions in its window and the calls made to malloc, calloc, realloc and
# posix_memalign (summarize.py). A command marks its device seen, which the presence service writes
# within a second: requests.py waits for that write after the edit's commands, but the save's own
# can still fall in its window, so each window says whether it holds a presence tick.
# Prints one line per window, the medians per kind of window (over all of them, then over those
# without a tick) and, with ANNOTATE=1, callgrind_annotate's top entries of each run's first GET,
# PUT and save.
#
# Settings (environment):
#   BIN            the stockroom binary (default: build .build-release/release/stockroom here)
#   SKIP_BUILD=1   with the default BIN, do not build first
#   RUNS=2         fresh servers, each measured REPEAT times
#   REPEAT=5       measured GETs, PUTs and saves per server
#   WARMUP=20      unmeasured GETs, PUTs and edit cycles before the first measurement
#   PORT=8095      listen port
#   ANNOTATE=0     1 prints callgrind_annotate's top 25 (inclusive) of each run's first GET, PUT and save
#   KEEP_TMP=0     1 keeps the temporary folder (database, server output, callgrind dumps)
#   LOG_LEVEL=warning  the server's; info adds the request log line (bench-compare runs at info)
# Exit status: 0 when every request answered as expected, 2 for a setup problem.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/Benchmarks/callgrind"
RUNS="${RUNS:-2}"
REPEAT="${REPEAT:-5}"
WARMUP="${WARMUP:-20}"
PORT="${PORT:-8095}"
ANNOTATE="${ANNOTATE:-0}"
KEEP_TMP="${KEEP_TMP:-0}"
LOG_LEVEL="${LOG_LEVEL:-warning}"

log() { printf '[callgrind %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }

. "$ROOT/Benchmarks/lib.sh"
callgrind_preflight "$PORT"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/stockroom-callgrind.XXXXXX")"
SERVER_PID=""
cleanup() {
    stop_pid "$SERVER_PID" "stockroom under callgrind" 600
    if [ "$KEEP_TMP" = "1" ]; then log "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "binary: $BIN ($(sha256sum "$BIN" | cut -c1-12))"
# valgrind 3.19 runs a copy without debug information, with a shim preloaded (lib.sh, callgrind_copy).
callgrind_copy "$BIN" "$TMP"
MEASURED="$TMP/stockroom"
printf 'run\trequest\tIr\tallocations\ttick\n'
for run in $(seq 1 "$RUNS"); do
    DIR="$TMP/run$run"
    mkdir -p "$DIR"
    log "run $run: starting the server under callgrind (database $DIR/cg.sqlite)"
    # Started from the temporary folder, so that no Config/stockroom.json is picked up by accident.
    ( cd "$DIR" && LOG_LEVEL="$LOG_LEVEL" AUTH_REVOCATION_CHECK_MILLISECONDS=60000 LD_PRELOAD="$TMP/sigsuspend-shim.so" exec valgrind --tool=callgrind \
          --callgrind-out-file="$DIR/callgrind.out" "$MEASURED" serve --demo --db-path "$DIR/cg.sqlite" --http-host 127.0.0.1 --http-port "$PORT" \
          >"$DIR/server.out" 2>"$DIR/server.err" ) &
    SERVER_PID=$!
    demo_server_ready "$SERVER_PID" "$PORT" "$DIR/server.out" "$DIR/server.err"

    python3 "$HERE/requests.py" --port "$PORT" --pid "$SERVER_PID" --token "$TOKEN" --item "$ITEM" \
        --warmup "$WARMUP" --repeat "$REPEAT" >"$DIR/dumps.txt" || die "the request driver failed"
    while IFS=$'\t' read -r label number; do
        file="$DIR/callgrind.out.$number"
        [ -f "$file" ] || die "missing dump $file"
        IFS=$'\t' read -r _ ir allocations tick < <(python3 "$HERE/summarize.py" "$file")
        printf '%s\t%s\t%s\t%s\t%s\n' "$run" "$label" "$ir" "$allocations" "$tick" | tee -a "$TMP/rows.tsv"
    done <"$DIR/dumps.txt"
    if [ "$ANNOTATE" = "1" ]; then
        for label in GET-1 PUT-1 save-1; do
            number="$(awk -v l="$label" -F'\t' '$1 == l { print $2 }' "$DIR/dumps.txt")"
            log "run $run, $label: callgrind_annotate --inclusive=yes, top 25"
            callgrind_annotate --inclusive=yes "$DIR/callgrind.out.$number" 2>/dev/null | sed -n '1,/^-- Auto-annotated/p' \
                | grep -E '^ *[0-9,]+ ' | head -n 25 | { if command -v swift >/dev/null; then swift demangle --simplified; else cat; fi; } >&2 || true
        done
    fi
    stop_pid "$SERVER_PID" "stockroom under callgrind" 600
    SERVER_PID=""
done

# Medians over every run and round, with the range; then over the windows without a presence tick.
python3 - "$TMP/rows.tsv" <<'PY'
import statistics, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
print("\nwindow\tcount\tmedian Ir\tmin Ir\tmax Ir\tmedian allocations\twithout a tick: count\tmedian Ir")
for kind in ("idle", "GET", "GETknown", "PUT", "save"):
    picked = [r for r in rows if r[1].split("-")[0] == kind]
    irs = [int(r[2]) for r in picked]
    allocations = [float(r[3]) for r in picked]
    clean = [int(r[2]) for r in picked if r[4] == "0"]
    median_clean = f"{statistics.median(clean):.0f}" if clean else "-"
    print(f"{kind}\t{len(irs)}\t{statistics.median(irs):.0f}\t{min(irs)}\t{max(irs)}\t{statistics.median(allocations):.0f}"
          f"\t{len(clean)}\t{median_clean}")
PY
