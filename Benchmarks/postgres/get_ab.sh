#!/usr/bin/env bash
# GET one item on PostgreSQL, binaries interleaved: for each round and binary, a fresh database,
# one daemon, one item, wrk -t1 -cCONNECTIONS (2 s unmeasured, then DURATION s) with
# Benchmarks/http/get.lua. Prints each run's RESULT line (rate, p50, p99).
#
#   [ROUNDS=3 CONNECTIONS=16 DURATION=5] bash Benchmarks/postgres/get_ab.sh LABEL=BINARY [LABEL=BINARY ...]
#
# Needs wrk, curl and python3; runs PostgreSQL as the postgres user when root. A binary copied out
# of its build folder needs its resource bundles beside it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../lib.sh
. "$ROOT/Benchmarks/lib.sh"
need_wrk
ROUNDS=${ROUNDS:-3} CONNECTIONS=${CONNECTIONS:-16} DURATION=${DURATION:-5}
PORT=18631
stop_daemons() { pkill -f "serve --http-port $PORT" || true; sleep 0.3; }
. "$ROOT/Benchmarks/postgres/pg.sh"
pg_start getab 55495 -c max_connections=100
export DB_URL="postgres://postgres@127.0.0.1:55495/stockroom?sslmode=disable"
for round in $(seq 1 "$ROUNDS"); do
    for spec in "$@"; do
        label=${spec%%=*} bin=${spec#*=}
        token=$(pg_fresh 55495 "$bin")
        LOG_LEVEL=warning "$bin" serve --http-port "$PORT" >"$WORK/daemon.log" 2>&1 &
        for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$PORT/ready" >/dev/null && break; sleep 0.1; done
        id=$(curl -fs -X POST -H "Authorization: Bearer $token" -H "Content-Type: application/json" \
            -d '{"name":"Keyboard","color":null,"status":{"inStock":{"quantity":1}}}' "http://127.0.0.1:$PORT/v1/items" \
            | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
        url="http://127.0.0.1:$PORT/v1/items/$id"
        wrk -t1 -c"$CONNECTIONS" -d2s -H "Authorization: Bearer $token" -s "$ROOT/Benchmarks/http/get.lua" "$url" >/dev/null
        echo "round $round  $label  $(wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -H "Authorization: Bearer $token" \
            -s "$ROOT/Benchmarks/http/get.lua" "$url" | grep RESULT)"
        stop_daemons
    done
done
