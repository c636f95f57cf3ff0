#!/usr/bin/env bash
# bench-compare's "write -> SSE, 1 subscriber" row alone, quickly: Starlette and one or more stockroom
# binaries (at synchronous=NORMAL, the peers' durability, unless STOCKROOM_SYNC says otherwise), each
# seeded with 2,000 items, then ROUNDS rounds of ../shared/bench-compare/sse_latency.py with N writes
# each, servers interleaved. One JSON line per server per round (p50_ms, p99_ms: the event's arrival
# at the subscriber after the write was sent; the write's own answer is read first, so this is
# mostly a PUT's round trip).
#
#   CMP_DIR=/tmp/cmp bash Benchmarks/latency/one-subscriber.sh BIN [BIN2 ...]
#
# CMP_DIR must hold the venv a run of ../shared/bench-compare/run.sh made there ($CMP_DIR/venv).
# Settings: N=1000 writes per round, ROUNDS=3, STOCKROOM_SYNC=normal (stockroom's DB_SYNCHRONOUS;
# bench-compare's row runs stockroom at its default, full), ST_SYNC=NORMAL (the Starlette app's SYNC,
# as bench-compare runs it; FULL compares the two at the same durability). Ports are picked free;
# everything is stopped at exit.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CMP="$ROOT/../shared/bench-compare"
PY="${CMP_DIR:?set CMP_DIR to a bench-compare scratch dir}/venv/bin/python"
N="${N:-1000}"
ROUNDS="${ROUNDS:-3}"
STOCKROOM_SYNC="${STOCKROOM_SYNC:-normal}"
ST_SYNC="${ST_SYNC:-NORMAL}"
case "$ST_SYNC" in NORMAL|FULL) ;; *) echo "ST_SYNC must be NORMAL or FULL" >&2; exit 2 ;; esac
[ -x "$PY" ] || { echo "no venv at $PY: run ../shared/bench-compare/run.sh with CMP_DIR=$CMP_DIR once" >&2; exit 2; }
[ $# -ge 1 ] || { echo "usage: $0 BIN [BIN2 ...]" >&2; exit 2; }
log() { printf '[one-subscriber %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
# shellcheck source=../lib.sh
. "$ROOT/Benchmarks/lib.sh"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/one-subscriber.XXXXXX")"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do stop_pid "$pid" server; done
    rm -rf "$WORK"
}
trap cleanup EXIT
port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 150); do curl -fs -o /dev/null "$1" && return 0; sleep 0.2; done; echo "no answer from $1" >&2; exit 2; }

ST_PORT=$(port)
mkdir -p "$WORK/st"
(cd "$WORK/st" && DB="$WORK/st/inv.db" SYNC="$ST_SYNC" exec "$PY" -m uvicorn starlette_app:app --app-dir "$CMP" \
    --host 127.0.0.1 --port "$ST_PORT" --log-level warning --no-access-log) >"$WORK/st.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$ST_PORT/seq"
"$PY" "$CMP/seed.py" st --base "http://127.0.0.1:$ST_PORT" --n 2000 --out "$WORK/st-files" >/dev/null

SR_PORTS=()
SR_TOKENS=()
for k in $(seq $#); do
    bin="$(cd "$(dirname "${!k}")" && pwd)/$(basename "${!k}")"
    p=$(port)
    mkdir -p "$WORK/sr$k"
    (cd "$WORK/sr$k" && DB_SYNCHRONOUS="$STOCKROOM_SYNC" exec "$bin" serve --http-host 127.0.0.1 --http-port "$p" --db-path "$WORK/sr$k/db") \
        >"$WORK/sr$k.log" 2>&1 &
    PIDS+=($!)
    wait_http "http://127.0.0.1:$p/health"
    token=$(cd "$WORK/sr$k" && "$bin" token create --user bench --role editor --db-path "$WORK/sr$k/db" 2>/dev/null | tail -n1 | tr -d '[:space:]')
    "$PY" "$CMP/seed.py" sr --base "http://127.0.0.1:$p" --token "$token" --n 2000 --out "$WORK/sr$k-files" >/dev/null
    SR_PORTS+=("$p")
    SR_TOKENS+=("$token")
done

for round in $(seq "$ROUNDS"); do
    echo "round $round starlette $("$PY" "$CMP/sse_latency.py" st --base "http://127.0.0.1:$ST_PORT" --method PATCH \
        --lines "$WORK/st-files/write_lines.txt" --subs 1 --n "$N")"
    for k in $(seq $#); do
        echo "round $round ${!k} $("$PY" "$CMP/sse_latency.py" sr --base "http://127.0.0.1:${SR_PORTS[$((k - 1))]}" --method PUT \
            --token "${SR_TOKENS[$((k - 1))]}" --lines "$WORK/sr$k-files/write_lines.txt" --subs 1 --n "$N")"
    done
done
