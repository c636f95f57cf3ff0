#!/usr/bin/env bash
# The SDK's catch-up against the server's own (issue #44): a fresh database filled with N items by
# one CSV import (N changes in the log), then the SSE feed from the beginning of the log read
# until N changes have come, in rounds:
#   (a) by a raw socket that counts `id:` lines: the rate the server sends them;
#   (b) by ClientBench's ChangeFeed (each change decoded), by a SyncedStore applying each change
#       (`apply(_:)`), and by one applying each batch the feed hands over (`apply(contentsOf:)`,
#       what the store does with its own feed).
# Then each reader's rate as a ratio of its own round's raw socket rate, and the median of each;
# and the share of each catch-up the server was on CPU, against the raw socket's: whether a
# reader made the server wait, apart from how fast the server ran in that round. Each SDK reader
# also prints its own CPU time (user, system) and peak RSS over its catch-up.
#
#   BIN=.build-release/release/stockroom N=1000000 ROUNDS=3 bash Benchmarks/feed/catchup.sh
#
# ClientBench is built first unless SKIP_BUILD=1 (release, Benchmarks/.build-bench; CLIENTBENCH=<path>
# reads with another build, for comparing two SDKs against one server). PIN=1 runs
# the server on the first CPU and every reader on the second (`taskset`), as a client and its
# server on two machines; by default all share every CPU. NEIGHBOUR=1 adds a control to each round:
# the raw socket read again while neighbour.c makes memory traffic (random writes over 256 MiB, at
# nice 19) on the readers' CPUs: how far a round's rate moves with what runs beside the server,
# when the reader itself does nothing but count. QUEUES=1 samples the server's send queue on the
# stream's socket every 20 ms during each read (`ss`, on the readers' CPU at nice 19): how often the
# reader left the server's bytes waiting (the server's write blocks once about 4 MiB wait).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="${BIN:-$ROOT/.build-release/release/stockroom}"
die() { echo "$*" >&2; exit 2; }
. "$ROOT/Benchmarks/lib.sh"
absolute_bin BIN "a release build: deploy/release-build.sh --scratch-path .build-release"
N="${N:-1000000}"
SERVER_CPU=()
READER_CPU=()
if [ "${PIN:-0}" = "1" ]; then
    command -v taskset >/dev/null || { echo "PIN=1 needs taskset (util-linux)" >&2; exit 2; }
    [ "$(nproc)" -ge 2 ] || { echo "PIN=1 needs two CPUs" >&2; exit 2; }
    SERVER_CPU=(taskset -c 0)
    READER_CPU=(taskset -c 1)
fi
ROUNDS="${ROUNDS:-3}"
PORT="${PORT:-8097}"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/stockroom-catchup.XXXXXX")"
SERVER=""
cleanup() {
    [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null
    [ -f "$TMP/neighbour.pid" ] && kill "$(cat "$TMP/neighbour.pid")" 2>/dev/null
    [ -f "$TMP/sampler.pid" ] && kill "$(cat "$TMP/sampler.pid")" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

if [ "${SKIP_BUILD:-0}" != "1" ]; then
    swift build -c release --package-path "$ROOT/Benchmarks" --scratch-path "$ROOT/Benchmarks/.build-bench" --product ClientBench >&2
fi
CLIENTBENCH="${CLIENTBENCH:-$ROOT/Benchmarks/.build-bench/release/ClientBench}"
if [ "${NEIGHBOUR:-0}" = "1" ]; then
    command -v cc >/dev/null || { echo "NEIGHBOUR=1 needs a C compiler (cc)" >&2; exit 2; }
    cc -O2 -o "$TMP/neighbour" "$ROOT/Benchmarks/feed/neighbour.c"
fi

# The log keeps every entry (the default keeps 1,000,000, and N items and the demo's are more):
# a trim between rounds would answer the next round's catch-up from the beginning with a 410.
( cd "$TMP" && LOG_LEVEL=warning FEED_RETENTION_MAX_ENTRIES=2147483647 exec "${SERVER_CPU[@]}" "$BIN" serve --demo --db-path "$TMP/db.sqlite" --http-host 127.0.0.1 --http-port "$PORT" \
    >"$TMP/server.out" 2>"$TMP/server.err" ) &
SERVER=$!
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/health" && break; sleep 0.2; done
TOKEN="$(sed -n 's/^[[:space:]]*export TOKEN=//p' "$TMP/server.out" | tail -n 1)"
URL="http://127.0.0.1:$PORT"

python3 - "$TMP/items.csv" "$N" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("name,status,quantity,onBackOrder,colorName,colorRed,colorGreen,colorBlue\n")
    for i in range(int(sys.argv[2])):
        f.write(f"catch-up item {i},inStock,{i % 50},,Teal,0,0.5,0.5\n" if i % 3 == 0 else f"catch-up item {i},outOfStock,,true,,,,\n")
PY
curl -sf -X POST "$URL/v1/items/import?onError=abort" -H "Authorization: Bearer $TOKEN" -H "Content-Type: text/csv" \
    --data-binary "@$TMP/items.csv" >/dev/null
echo "catch-up: $N items imported (the demo's 4 before them)" >&2

# The server's CPU time so far, in clock ticks (utime + stime), and its share of a reader's
# catch-up: a reader that never makes the server wait for its socket leaves it busy throughout,
# and a round's rate then moves only with the server's own speed.
server_ticks() { awk '{ print $14 + $15 }' "/proc/$SERVER/stat"; }
TICKS_PER_SECOND="$(getconf CLK_TCK)"
cpu_line() { echo "server cpu: $(( $(server_ticks) - $1 )) / $TICKS_PER_SECOND s"; }
# QUEUES=1: the server's send queue on its stream sockets, sampled until killed (one number a line).
sample_queue() {
    while true; do
        ss -tnH state established "( sport = :$PORT )" | awk '{ print $2 }'
        sleep 0.02
    done
}
start_sampler() {
    SAMPLER=""
    [ "${QUEUES:-0}" = "1" ] || return 0
    sample_queue >"$TMP/queue.txt" 2>/dev/null &
    SAMPLER=$!
    [ ${#READER_CPU[@]} -eq 0 ] || taskset -a -p -c 1 "$SAMPLER" >/dev/null
    renice -n 19 -p "$SAMPLER" >/dev/null
    echo "$SAMPLER" >"$TMP/sampler.pid"
}
stop_sampler() {
    [ -n "$SAMPLER" ] || return 0
    kill "$SAMPLER"
    wait "$SAMPLER" 2>/dev/null || true
    rm -f "$TMP/sampler.pid"
    awk '{ n++; if ($1 > m) m = $1; if ($1 > 1048576) over++ } END { printf "server send queue: %d samples, at most %d KiB, over 1 MiB in %d\n", n, m / 1024, over }' "$TMP/queue.txt"
}

cat >"$TMP/raw.py" <<'PY'
import socket, sys, time
port, token, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port))
start = time.perf_counter()
s.sendall(f"GET /v1/changes/stream?topics=items HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
seen, tail = 0, b""
while seen < n:
    data = s.recv(1 << 20)
    if not data: break
    chunk = tail + data
    seen += chunk.count(b"\nid: ")
    tail = chunk[-5:]
    if tail.count(b"\nid: "): seen -= tail.count(b"\nid: ")  # counted again with the next read
elapsed = time.perf_counter() - start
print(f"server (raw socket, id lines counted): {int(min(seen, n) / elapsed)} changes/s")
PY

for round in $(seq "$ROUNDS"); do
    {
    # The server's rate: a raw socket counting `id:` lines, no decoding (Python's bytes.count).
    start_sampler
    before="$(server_ticks)"
    "${READER_CPU[@]}" python3 "$TMP/raw.py" "$PORT" "$TOKEN" "$N"
    cpu_line "$before"
    stop_sampler
    if [ "${NEIGHBOUR:-0}" = "1" ]; then
        nice -n 19 "${READER_CPU[@]}" "$TMP/neighbour" 256 &
        neighbour=$!
        echo "$neighbour" >"$TMP/neighbour.pid"
        sleep 0.5
        start_sampler
        before="$(server_ticks)"
        "${READER_CPU[@]}" python3 "$TMP/raw.py" "$PORT" "$TOKEN" "$N" | sed -n "s/^server (raw socket, id lines counted): /control catch-up of $N changes, raw socket beside memory traffic: /p"
        cpu_line "$before"
        stop_sampler
        kill "$neighbour"
        wait "$neighbour" 2>/dev/null || true
        rm -f "$TMP/neighbour.pid"
    fi
    # One ClientBench process per reader, so that each one's share of the server's CPU is its own.
    for reader in "ChangeFeed" "SyncedStore applying each" "SyncedStore applying each batch"; do
        start_sampler
        before="$(server_ticks)"
        STOCKROOM_URL="$URL" STOCKROOM_TOKEN="$TOKEN" CATCHUP="$N" CATCHUP_ONLY="$reader" RUNS=1 "${READER_CPU[@]}" "$CLIENTBENCH" \
            | sed -n -e "s/^  catch-up/SDK catch-up/p" -e "s/^  reader cpu/reader cpu/p"
        cpu_line "$before"
        stop_sampler
    done
    } | tee -a "$TMP/rates.txt"
done

# Each reader against the server's rate of its own round (issue #44's line: 1.0x), and the medians;
# then the share of each reader's catch-up the server spent on CPU (its CPU seconds over the
# reader's N / rate), and that share against the raw socket's in the same round: below 1.0x, the
# reader made the server wait; at 1.0x, the round's rate moved with the server's own speed. Last,
# each SDK reader's own CPU time (user + system) over its catch-up's wall time: below 1.0, it
# had nothing to do part of the time, waiting for the server's next bytes.
python3 - "$TMP/rates.txt" "$N" <<'PY'
import re, statistics, sys
n = int(sys.argv[2])
rounds, last = [], None
for line in open(sys.argv[1]):
    if m := re.match(r"server \(raw socket.*\): (\d+) changes/s", line):
        rounds.append({})
        last = "raw socket"
        rounds[-1][last] = {"rate": int(m.group(1))}
    elif (m := re.match(r"(?:SDK|control) catch-up of \d+ changes, (.+): (\d+) changes/s", line)) and rounds:
        last = m.group(1)
        rounds[-1][last] = {"rate": int(m.group(2))}
    elif (m := re.match(r"server cpu: (\d+) / (\d+) s", line)) and rounds and last in rounds[-1]:
        rounds[-1][last]["server"] = int(m.group(1)) / int(m.group(2))
    elif (m := re.match(r"reader cpu: user ([\d.]+) s, system ([\d.]+) s", line)) and rounds and last in rounds[-1]:
        rounds[-1][last]["reader"] = float(m.group(1)) + float(m.group(2))
    elif (m := re.match(r"server send queue: (\d+) samples, at most (\d+) KiB, over 1 MiB in (\d+)", line)) and rounds and last in rounds[-1]:
        rounds[-1][last]["queue"] = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
readers = [name for name in rounds[0] if name != "raw socket"] if rounds else []
busy = lambda read, cpu: cpu * read["rate"] / n
def show(title, values, places=2):
    if values:
        print(f"  {title}: " + ", ".join(f"{x:.{places}f}x" for x in values) + f"; median {statistics.median(values):.{places}f}x")
print("x the round's raw socket rate:")
for name in readers:
    show(name, [r[name]["rate"] / r["raw socket"]["rate"] for r in rounds if name in r])
print("the server's CPU share of each catch-up (raw socket: " + ", ".join(f"{busy(r['raw socket'], r['raw socket']['server']):.2f}" for r in rounds) + "),")
print("x the raw socket's share in the round:")
for name in readers:
    show(name, [busy(r[name], r[name]["server"]) / busy(r["raw socket"], r["raw socket"]["server"]) for r in rounds if name in r], 3)
if any("queue" in read for r in rounds for read in r.values()):
    print("the server's send queue, samples over 1 MiB of all (at most, KiB):")
    for name in ["raw socket"] + readers:
        print(f"  {name}: " + ", ".join(f"{r[name]['queue'][2]}/{r[name]['queue'][0]} ({r[name]['queue'][1]})" for r in rounds if "queue" in r.get(name, {})))
print("each SDK reader's CPU time over its catch-up's wall time:")
for name in readers:
    show(name, [r[name]["reader"] * r[name]["rate"] / n for r in rounds if "reader" in r.get(name, {})])
PY
