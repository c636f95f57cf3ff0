#!/usr/bin/env bash
# Lone writes while long-polls wait: does a waiting long-poll cost a write its inline path?
#
#   BINS="/path/a /path/b" bash Benchmarks/longpoll/run.sh
#
# For each binary of BINS (default: this checkout's release build), in alternating rounds: a
# server at DB_SYNCHRONOUS=normal (where a lone write may run on its event loop) on a fresh
# database, one item, POLLS clients each holding `GET /v1/changes?wait=60` open (re-asking when
# answered), and `wrk -t1 -c1` PUTting the item for DURATION: one writer, so every write is
# alone, and the long-polls are woken by each. Prints req/s and wrk's latency per round, and the
# medians per binary. Needs wrk and curl.
#
# Settings: BINS, ROUNDS=3, DURATION=5s, POLLS=4, PORT=8097
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../lib.sh
. "$ROOT/Benchmarks/lib.sh"
need_wrk
BINS="${BINS:-$ROOT/.build-release/release/stockroom}"
ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-5s}"
POLLS="${POLLS:-4}"
PORT="${PORT:-8097}"
WORK="$(mktemp -d)"
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

round() { # bin label round
    local bin="$1" label="$2"
    local db="$WORK/$label-$3.sqlite"
    local token
    token=$("$bin" token create --user bench --role editor --db-path "$db" | tail -n 1)
    DB_SYNCHRONOUS=normal LOG_LEVEL=warning "$bin" serve --http-port "$PORT" --db-path "$db" >"$WORK/$label.log" 2>&1 &
    local server=$!
    PIDS+=("$server")
    for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.05; done
    local id
    id=$(curl -fs -X POST "http://127.0.0.1:$PORT/v1/items" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
        -d '{"name":"Lamp","color":null,"status":{"inStock":{"quantity":1}}}' | sed 's/.*"id":"\([^"]*\)".*/\1/')
    local polls=()
    for _ in $(seq 1 "$POLLS"); do
        ( while true; do curl -s -o /dev/null "http://127.0.0.1:$PORT/v1/changes?since=now&wait=60" -H "Authorization: Bearer $token" || exit 0; done ) &
        polls+=("$!")
    done
    sleep 0.5
    TOKEN="$token" ITEM_IDS="$id" wrk -t1 -c1 -d"$DURATION" --latency -s "$ROOT/Benchmarks/http/put-item.lua" \
        "http://127.0.0.1:$PORT/v1/items/$id" >"$WORK/wrk.txt" 2>&1 || true
    local rate latency
    rate=$(awk '/Requests\/sec/ {print $2}' "$WORK/wrk.txt")
    latency=$(awk '/^ +50%/ {print $2}' "$WORK/wrk.txt")
    echo -e "$label\t$3\t$rate\t$latency"
    for pid in "${polls[@]}"; do kill "$pid" 2>/dev/null || true; done
    kill "$server"; wait "$server" 2>/dev/null || true
}

echo -e "binary\tround\treq/s\tp50"
index=0
for r in $(seq 1 "$ROUNDS"); do
    index=0
    for bin in $BINS; do
        index=$((index + 1))
        round "$bin" "bin$index" "$r"
    done
done | tee "$WORK/rounds.tsv"
echo
echo "medians (req/s):"
index=0
for bin in $BINS; do
    index=$((index + 1))
    median=$(awk -v l="bin$index" '$1 == l {print $3}' "$WORK/rounds.tsv" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    echo -e "bin$index\t$median\t$bin"
done
