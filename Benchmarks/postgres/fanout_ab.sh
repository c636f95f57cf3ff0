#!/usr/bin/env bash
# The fan-out rows on PostgreSQL (issue #40), binaries interleaved: for each round and binary, a
# fresh database, three daemons, WARM seconds of appends from 32 writers (drive.py; 0 for none,
# as a daemon fresh from its start), then fanout.py: SUBSCRIBERS SSE streams over the three
# daemons and WRITES writes on the first, 20 ms apart. Prints each run's fanout.py summary: the
# writing daemon's round trip, and each write to its event on every daemon.
#
#   [ROUNDS=3 WARM=3 SUBSCRIBERS=1000 WRITES=100] bash Benchmarks/postgres/fanout_ab.sh LABEL=BINARY [LABEL=BINARY ...]
#
# DAEMON_EVENT_LOOPS: each daemon's event loops (the cores over three, or `default`, as pg.sh says).
#
# Needs cc, curl and python3; runs PostgreSQL (its defaults: fsync and synchronous_commit on) as the
# postgres user when root. A binary copied out of its build folder needs its resource bundles beside it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ROUNDS=${ROUNDS:-3} WARM=${WARM:-3} SUBSCRIBERS=${SUBSCRIBERS:-1000} WRITES=${WRITES:-100}
export FEED_MAX_SUBSCRIBERS_PER_TOKEN=$((SUBSCRIBERS + 16))
PORTS=(18621 18622 18623)
stop_daemons() { for port in "${PORTS[@]}"; do pkill -f "serve --http-port $port" || true; done; sleep 0.5; }
. "$ROOT/Benchmarks/postgres/pg.sh"
pg_start fanoutab 55496 -c max_connections=200
cc -O2 -o "$WORK/sse_sink" "$ROOT/Benchmarks/feed/sse_sink.c"
export DB_URL="postgres://postgres@127.0.0.1:55496/stockroom?sslmode=disable"
for round in $(seq 1 "$ROUNDS"); do
    for spec in "$@"; do
        label=${spec%%=*} bin=${spec#*=}
        token=$(pg_fresh 55496 "$bin")
        for port in "${PORTS[@]}"; do
            # shellcheck disable=SC2046 # daemon_loops: several assignments or none
            env $(daemon_loops) LOG_LEVEL=warning "$bin" serve --http-port "$port" >"$WORK/daemon-$port.log" 2>&1 &
        done
        for port in "${PORTS[@]}"; do
            for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$port/ready" >/dev/null && break; sleep 0.1; done
        done
        echo "== round $round, $label"
        if [ "$WARM" != 0 ]; then
            TOKEN="$token" PORTS="${PORTS[*]}" DURATION="$WARM" python3 "$ROOT/Benchmarks/postgres/drive.py" appends >/dev/null
        fi
        python3 "$ROOT/Benchmarks/postgres/fanout.py" --ports "${PORTS[@]}" --token "$token" --sink "$WORK/sse_sink" \
            --subscribers "$SUBSCRIBERS" --writes "$WRITES"
        stop_daemons
    done
done
