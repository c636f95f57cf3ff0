#!/usr/bin/env bash
# The server's code laid out by use: makes deploy/link-order.txt again, and measures what it does.
#
#   bash Benchmarks/layout/link_order.sh
#   CMP_DIR=/tmp/bc bash Benchmarks/layout/link_order.sh    (adds the one-subscriber row)
#   cp /tmp/link-order/order.txt deploy/link-order.txt        (ships the new list)
#
# 1. Builds stockroom as deploy/release-build.sh does (every Swift function in a section of its own,
#    every module, the packages' too, linked by lld) but in no order (LINK_ORDER empty), in SCRATCH.
# 2. Runs that binary under callgrind (callgrind/run.sh, KEEP_TMP=1) and lists every function of it
#    that ran in a GET, a GET from memory, a PUT or a save window, most instructions first.
# 3. Builds again with that list as lld's `--symbol-ordering-file` (SwiftPM only links again), so
#    those functions sit together at the start of the text instead of across all of it.
# 4. Compares the shipped release build (.build-release, ordered by deploy/link-order.txt), the
#    unordered build and the one ordered by the new list: http/get_ab.sh (GET against the bare
#    route) and, with CMP_DIR set to a bench-compare scratch dir, latency/one-subscriber.sh at FULL.
# Prints how many 4 KiB pages the new list's functions span in each binary, then the two scripts'
# lines.
#
# Settings (environment): SCRATCH=.build-order, ROUNDS=5 and DURATION=5 (get_ab.sh), SUB_ROUNDS=4
# (one-subscriber.sh), SKIP_BUILD=1 (do not build .build-release and BaselineServer; the two builds
# in SCRATCH always run, a link each once their objects exist), OUT=/tmp/link-order (the new list,
# and the unordered binary with its resource bundles, are kept there).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SCRATCH="${SCRATCH:-$ROOT/.build-order}"
OUT="${OUT:-/tmp/link-order}"
ROUNDS="${ROUNDS:-5}"
DURATION="${DURATION:-5}"
SUB_ROUNDS="${SUB_ROUNDS:-4}"
log() { printf '[link-order %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "$*"; exit 2; }
# shellcheck source=../lib.sh
. "$ROOT/Benchmarks/lib.sh"
command -v callgrind_annotate >/dev/null || die "needs valgrind (apt-get install valgrind)"
mkdir -p "$OUT"

release_bin
HEAD_BIN="$BIN"
build=("$ROOT/deploy/release-build.sh" --package-path "$ROOT" --scratch-path "$SCRATCH")
log "building in no order: LINK_ORDER= ${build[*]}"
LINK_ORDER='' "${build[@]}" >&2 || die "the unordered build failed"
PRODUCTS="$(LINK_ORDER='' "${build[@]}" --show-bin-path)"
# Kept apart: the ordered build below links over it.
rm -rf "$OUT/sections" && mkdir -p "$OUT/sections"
cp -R "$PRODUCTS/stockroom" "$PRODUCTS"/*.resources "$OUT/sections/"
PLAIN="$OUT/sections/stockroom"

log "callgrind windows of $PLAIN"
cg_log="$OUT/callgrind.log"
RUNS=1 REPEAT=3 KEEP_TMP=1 BIN="$PLAIN" bash "$ROOT/Benchmarks/callgrind/run.sh" >"$cg_log" 2>&1 || die "callgrind/run.sh failed: see $cg_log"
cg_dir="$(sed -n 's/.*kept \(.*\)$/\1/p' "$cg_log" | tail -n 1)"
[ -d "$cg_dir/run1" ] || die "no kept callgrind folder in $cg_log"
# The functions of the windows' dumps, most instructions first, by the names the linker knows:
# callgrind names C++ functions (the Swift runtime, linked statically) demangled, and a recursion
# level of a function with a suffix ("swift_release'2").
read -r -d '' ORDER_PY <<'PY' || true
import collections, re, subprocess, sys
def nm(*flags):
    return subprocess.run(["nm", *flags, "--defined-only", sys.argv[1]], capture_output=True, text=True, check=True).stdout.splitlines()
symbol = {}
for raw, readable in zip(nm(), nm("-C")):
    raw, readable = raw.split(maxsplit=2), readable.split(maxsplit=2)
    if len(raw) == 3 and len(readable) == 3 and raw[1] in "tTwW":
        symbol.setdefault(readable[2], raw[2])
counts = collections.Counter()
for line in sys.stdin:
    m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+\?\?\?:(.+?)\s+\[([^\]]+)\]\s*$", line)
    if m and m.group(3).endswith("/stockroom"):
        name = re.sub(r"'\d+$", "", m.group(2))
        counts[symbol.get(name, name)] += int(m.group(1).replace(",", ""))
for name, _ in counts.most_common():
    print(name)
PY
awk '$1 !~ /^idle/ { print $2 }' "$cg_dir/run1/dumps.txt" | while read -r index; do
    callgrind_annotate --inclusive=no --threshold=100 "$cg_dir/run1/callgrind.out.$index"
done | python3 -c "$ORDER_PY" "$PLAIN" >"$OUT/order.txt"
rm -rf "$cg_dir"
log "$(wc -l <"$OUT/order.txt") functions ran in the windows: $OUT/order.txt"

log "linking in the new list's order"
LINK_ORDER="$OUT/order.txt" "${build[@]}" >&2 || die "the ordered build failed"
ORDERED="$PRODUCTS/stockroom"

python3 - "$OUT/order.txt" "$HEAD_BIN" "$PLAIN" "$ORDERED" <<'PY'
import subprocess, sys
names = [line.strip() for line in open(sys.argv[1]) if line.strip()]
for label, binary in zip(("shipped", "unordered", "new list"), sys.argv[2:]):
    out = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    address = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tT":
            address[parts[2]] = int(parts[0], 16)
    found = sorted(address[n] for n in names if n in address)
    print(f"{label}: {len(found)} of the {len(names)} functions on {len({a >> 12 for a in found})} pages")
PY

ROUNDS="$ROUNDS" DURATION="$DURATION" SKIP_BUILD="${SKIP_BUILD:-0}" bash "$ROOT/Benchmarks/http/get_ab.sh" \
    shipped="$HEAD_BIN" unordered="$PLAIN" new="$ORDERED" 2>&1 | grep '^round'
if [ -n "${CMP_DIR:-}" ]; then
    STOCKROOM_SYNC=full ROUNDS="$SUB_ROUNDS" bash "$ROOT/Benchmarks/latency/one-subscriber.sh" "$HEAD_BIN" "$PLAIN" "$ORDERED" 2>&1 |
        grep '^round'
fi
