#!/usr/bin/env bash
# Instructions (Ir) and allocations per store operation, in process, under callgrind: the
# operations of StoreBenchmarks (Benchmarks/Sources/StoreOperations), run by StoreCounts, each
# `iterations` times between two dumps (valgrind client requests). See Benchmarks/README.md,
# "Instruction and allocation counts".
#
#   bash Benchmarks/callgrind/store-counts.sh
#
# Settings (environment): SKIP_BUILD=1 (reuse the built StoreCounts), KEEP_TMP=1 (keep the dumps).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/Benchmarks/callgrind"
KEEP_TMP="${KEEP_TMP:-0}"
log() { printf '[store-counts %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }
command -v valgrind >/dev/null || die "valgrind is required (apt-get install -y valgrind)"
[ -f /usr/include/valgrind/callgrind.h ] || die "valgrind's headers are required (/usr/include/valgrind/callgrind.h)"

BUILD=(swift build -c release --package-path "$ROOT/Benchmarks" --scratch-path "$ROOT/Benchmarks/.build-bench" --product StoreCounts)
if [ "${SKIP_BUILD:-0}" != "1" ]; then
    log "building: ${BUILD[*]}"
    "${BUILD[@]}" >&2 || die "build failed"
fi
BIN="$("${BUILD[@]}" --show-bin-path)/StoreCounts"
[ -x "$BIN" ] || die "no binary at $BIN"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/stockroom-store-counts.XXXXXX")"
cleanup() { if [ "$KEEP_TMP" = "1" ]; then log "kept $TMP"; else rm -rf "$TMP"; fi; }
trap cleanup EXIT

# The same two workarounds as run.sh: no DWARF 5 for valgrind 3.19, and a writable sigsuspend mask.
strip --strip-debug -o "$TMP/StoreCounts" "$BIN"
gcc -shared -fPIC -O2 -o "$TMP/sigsuspend-shim.so" "$HERE/sigsuspend-shim.c"

log "running StoreCounts under callgrind"
( cd "$TMP" && LD_PRELOAD="$TMP/sigsuspend-shim.so" valgrind --tool=callgrind --callgrind-out-file="$TMP/callgrind.out" \
      "$TMP/StoreCounts" >"$TMP/out.txt" 2>"$TMP/err.txt" ) || { tail -n 30 "$TMP/err.txt" >&2; die "StoreCounts failed"; }

printf 'operation\titerations\tIr/op\tallocations/op\n'
for file in $(ls -v "$TMP"/callgrind.out.*); do
    # The trigger is "Client Request: NAME xN".
    trigger="$(sed -n 's/^desc: Trigger: Client Request: //p' "$file")"
    case "$trigger" in "" | "before "*) continue ;; esac
    name="${trigger% x*}"
    iterations="${trigger##* x}"
    IFS=$'\t' read -r _ ir allocations _ < <(python3 "$HERE/summarize.py" --per "$iterations" "$file")
    printf '%s\t%s\t%s\t%s\n' "$name" "$iterations" "$ir" "$allocations"
done
