#!/usr/bin/env bash
# Stockroom on PostgreSQL, three daemons on one database: how many writes per second the one
# change log takes, and how long a write on one daemon takes to reach a subscriber on another.
#
#   bash Benchmarks/postgres/run.sh
#
# Starts a throwaway PostgreSQL 15 (its defaults: fsync and synchronous_commit on) on this
# machine, three `stockroom serve --db-url` daemons (release build), then:
#   appends: WRITERS clients POSTing items for DURATION seconds, spread over the three daemons;
#            prints writes/s and the log's head (one entry per write).
#   latency: one SSE subscriber on daemon B, SAMPLES writes on daemon A one at a time; prints
#            p50/p99 from sending the write to receiving its event on B.
#   fan-out: SUBSCRIBERS SSE streams spread over the three daemons (Benchmarks/feed/sse_sink.c),
#            FANOUT_WRITES writes on daemon A 20 ms apart; p50/p99 from sending each write to
#            each stream's event, on the other daemons and on A (fanout.py). With FANOUT_LAYOUTS=1,
#            the same again with every stream on B and C, then with every stream on A.
# Then the same on one daemon with SQLite at synchronous=full, as the baseline.
# Needs python3 and cc, and runs PostgreSQL as the postgres user when root.
#
# Settings: BIN, WRITERS=32, DURATION=10, SAMPLES=300, SUBSCRIBERS=1000, FANOUT_WRITES=100, FANOUT_LAYOUTS=0,
#           PG_OPTIONS (more server settings, e.g. "-c synchronous_commit=off" to see what it costs),
#           DAEMON_EVENT_LOOPS (each PostgreSQL daemon's event loops: the cores over three, or
#           `default`, as pg.sh says; the SQLite daemon runs its default, all the cores)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="${BIN:-$ROOT/.build-release/release/stockroom}"
export WRITERS="${WRITERS:-32}" DURATION="${DURATION:-10}" SAMPLES="${SAMPLES:-300}"
SUBSCRIBERS="${SUBSCRIBERS:-1000}" FANOUT_WRITES="${FANOUT_WRITES:-100}" FANOUT_LAYOUTS="${FANOUT_LAYOUTS:-0}"
# Each daemon takes its share of the fan-out's streams on one token.
export FEED_MAX_SUBSCRIBERS_PER_TOKEN=$((SUBSCRIBERS + 16))
PIDS=()
stop_daemons() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; }
. "$ROOT/Benchmarks/postgres/pg.sh"
# shellcheck disable=SC2086 # PG_OPTIONS: several server settings
pg_start stockroom-bench-pg 55499 -c max_connections=200 ${PG_OPTIONS:-}

cc -O2 -o "$WORK/sse_sink" "$ROOT/Benchmarks/feed/sse_sink.c"
export DB_URL="postgres://postgres@127.0.0.1:55499/stockroom?sslmode=disable"
TOKEN=$("$BIN" token create --user bench --role editor | tail -n 1)
PORTS=(18091 18092 18093)
for port in "${PORTS[@]}"; do
    # shellcheck disable=SC2046 # daemon_loops: several assignments or none
    env $(daemon_loops) LOG_LEVEL=warning "$BIN" serve --http-port "$port" >"$WORK/daemon-$port.log" 2>&1 &
    PIDS+=("$!")
done
for port in "${PORTS[@]}"; do
    for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$port/ready" >/dev/null && break; sleep 0.1; done
done
echo "== PostgreSQL, 3 daemons, event loops each: $DAEMON_EVENT_LOOPS"
TOKEN="$TOKEN" PORTS="${PORTS[*]}" python3 "$ROOT/Benchmarks/postgres/drive.py" appends latency
python3 "$ROOT/Benchmarks/postgres/fanout.py" --ports "${PORTS[@]}" --token "$TOKEN" --sink "$WORK/sse_sink" \
    --subscribers "$SUBSCRIBERS" --writes "$FANOUT_WRITES"
if [ "$FANOUT_LAYOUTS" = 1 ]; then
    echo "-- the same writes, every stream on the two other daemons"
    python3 "$ROOT/Benchmarks/postgres/fanout.py" --ports "${PORTS[@]:1}" --write-port "${PORTS[0]}" --token "$TOKEN" \
        --sink "$WORK/sse_sink" --subscribers "$SUBSCRIBERS" --writes "$FANOUT_WRITES"
    echo "-- the same writes, every stream on the writing daemon"
    python3 "$ROOT/Benchmarks/postgres/fanout.py" --ports "${PORTS[0]}" --token "$TOKEN" --sink "$WORK/sse_sink" \
        --subscribers "$SUBSCRIBERS" --writes "$FANOUT_WRITES"
fi

echo "== SQLite (synchronous=full), 1 daemon"
unset DB_URL
SQLITE="$WORK/sqlite/stockroom.sqlite"
STOKEN=$("$BIN" token create --user bench --role editor --db-path "$SQLITE" | tail -n 1)
LOG_LEVEL=warning "$BIN" serve --http-port 18094 --db-path "$SQLITE" >"$WORK/sqlite.log" 2>&1 &
PIDS+=("$!")
for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:18094/ready" >/dev/null && break; sleep 0.1; done
TOKEN="$STOKEN" PORTS="18094" python3 "$ROOT/Benchmarks/postgres/drive.py" appends latency
python3 "$ROOT/Benchmarks/postgres/fanout.py" --ports 18094 --token "$STOKEN" --sink "$WORK/sse_sink" \
    --subscribers "$SUBSCRIBERS" --writes "$FANOUT_WRITES"
