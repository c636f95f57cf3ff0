#!/usr/bin/env bash
# bench-compare's two SQLite write rows for several stockroom binaries, interleaved: PUT
# /v1/items/{id} and the save cycle (openEdit, updateDraft, save over 64 devices), each with
# ../shared/bench-compare/wrk_bench.lua, wrk -t1 -c16 -d${DURATION}s, on 256 items per server.
# Prints per round and binary PUT req/s and saves/s (three commands each).
#
#   bash Benchmarks/http/cycle_ab.sh NAME=BINARY [NAME=BINARY ...]      # ROUNDS=3 DURATION=5
#
# Each stockroom serves `--demo` on its own fresh database at its defaults (synchronous=FULL,
# LOG_LEVEL=info), as bench-compare runs it. A binary copied out of its build folder needs its
# resource bundles beside it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
WRK_SCRIPT="$ROOT/../shared/bench-compare/wrk_bench.lua"
[ $# -gt 0 ] || { echo "usage: bash Benchmarks/http/cycle_ab.sh NAME=BINARY [NAME=BINARY ...]" >&2; exit 2; }
[ -f "$WRK_SCRIPT" ] || { echo "needs $WRK_SCRIPT" >&2; exit 2; }
log() { printf '[cycle_ab %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }
# shellcheck source=../lib.sh
. "$ROOT/Benchmarks/lib.sh"
need_wrk
WORK="$(mktemp -d /tmp/cycleab.XXXXXX)"
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

declare -A URL TOKEN
port=8291
NAMES=()
for argument in "$@"; do
    name=${argument%%=*}
    NAMES+=("$name")
    start_demo "${argument#*=}" "$port" "$WORK/$name"
    PIDS+=("$DEMO_PID"); TOKEN[$name]=$TOKEN
    URL[$name]="http://127.0.0.1:$port"
    port=$((port + 1))
done
for name in "${NAMES[@]}"; do
    # items.tsv ("id<TAB>name") for the cycle, lines ("path<TAB>body") for PUT.
    python3 - "${URL[$name]}" "${TOKEN[$name]}" "$WORK/$name" <<'PY'
import http.client, json, sys, urllib.parse
url, token, folder = urllib.parse.urlparse(sys.argv[1]), sys.argv[2], sys.argv[3]
connection = http.client.HTTPConnection(url.hostname, url.port)
with open(folder + "/items.tsv", "w") as items, open(folder + "/lines", "w") as lines:
    for index in range(256):
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
for round in $(seq "$ROUNDS"); do
    line="round $round"
    for name in "${NAMES[@]}"; do
        put=$(MODE=write METHOD=PUT LINES="$WORK/$name/lines" AUTH="Bearer ${TOKEN[$name]}" \
            wrk -t1 -c16 -d"${DURATION}s" -s "$WRK_SCRIPT" "${URL[$name]}")
        cycle=$(MODE=cycle ITEMS="$WORK/$name/items.tsv" CLIENTS=64 CLIENT_PREFIX="r$round" AUTH="Bearer ${TOKEN[$name]}" \
            wrk -t1 -c16 -d"${DURATION}s" -s "$WRK_SCRIPT" "${URL[$name]}")
        for output in "$put" "$cycle"; do
            [ "$(result "$output" status_errors)" = 0 ] && [ "$(result "$output" socket_errors)" = 0 ] ||
                { echo "errors from $name: $output" >&2; exit 1; }
        done
        saves=$(python3 -c "print(f'{$(result "$cycle" saves) / ($(result "$cycle" duration_us) / 1e6):.0f}')")
        line+=" | $name PUT $(awk '/Requests\/sec/ { printf "%.0f", $2 }' <<<"$put") req/s, $saves saves/s"
    done
    echo "$line"
done
