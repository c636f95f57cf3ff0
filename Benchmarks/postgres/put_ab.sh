#!/usr/bin/env bash
# A write row on PostgreSQL, two binaries interleaved (one daemon at a time, same throwaway
# database, 200 items), ROUNDS rounds of each, wrk -t1 -c16 -d8s:
#   ROW=put (default): PUT /v1/items/{id} with bench-compare's wrk_bench.lua;
#   ROW=tabs: selectTab commands over 64 devices, each alternating its tab (select_tab.lua).
#
#   [ROW=tabs] bash Benchmarks/postgres/put_ab.sh OLD_BINARY NEW_BINARY
#
# Needs wrk, curl and python3; runs PostgreSQL as the postgres user when root. A binary copied out of its build folder needs its
# resource bundles beside it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../lib.sh
. "$ROOT/Benchmarks/lib.sh"
need_wrk
OLD=$1 NEW=$2 ROUNDS=${ROUNDS:-3}
stop_daemons() { pkill -f "serve --http-port 18601" || true; }
. "$ROOT/Benchmarks/postgres/pg.sh"
pg_start putab 55498 -c max_connections=100
export DB_URL="postgres://postgres@127.0.0.1:55498/stockroom?sslmode=disable"
TOKEN=$("$NEW" token create --user bench --role editor | tail -n 1)
start() { LOG_LEVEL=warning "$1" serve --http-port 18601 >/dev/null 2>&1 & for _ in $(seq 1 100); do curl -fs http://127.0.0.1:18601/ready >/dev/null && break; sleep 0.1; done; }
start "$NEW"
: > "$WORK/lines.txt"
for i in $(seq 1 200); do
  id=$(curl -fs -X POST -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d "{\"name\":\"Item $i\",\"color\":null,\"status\":{\"inStock\":{\"quantity\":1}}}" http://127.0.0.1:18601/v1/items | python3 -c 'import sys,json;print(json.load(sys.stdin)["id"])')
  printf '/v1/items/%s\t{"name":"Item %s","color":null,"status":{"inStock":{"quantity":%%d}}}\n' "$id" "$i" >> "$WORK/lines.txt"
done
pkill -f "serve --http-port 18601"; sleep 0.5
for r in $(seq 1 $ROUNDS); do
  for which in old new; do
    bin=$OLD; [ $which = new ] && bin=$NEW
    start "$bin"
    if [ "${ROW:-put}" = tabs ]; then
        out=$(AUTH="Bearer $TOKEN" wrk -t1 -c"${CONNECTIONS:-16}" -d8s --latency -s "$ROOT/Benchmarks/postgres/select_tab.lua" http://127.0.0.1:18601 2>&1)
    else
        out=$(MODE=write METHOD=PUT LINES="$WORK/lines.txt" AUTH="Bearer $TOKEN" wrk -t1 -c"${CONNECTIONS:-16}" -d8s --latency -s "$ROOT/../shared/bench-compare/wrk_bench.lua" http://127.0.0.1:18601 2>&1)
    fi
    echo "$which round $r: $(echo "$out" | grep -E "Requests/sec" | tr -s " ") p50$(echo "$out" | grep -E "^ +50%" | tr -s " ") p99$(echo "$out" | grep -E "^ +99%" | tr -s " ") $(echo "$out" | grep -E "Non-2xx" | tr -s " ")"
    pkill -f "serve --http-port 18601"; sleep 0.5
  done
done
