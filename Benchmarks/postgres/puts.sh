#!/usr/bin/env bash
# PUTs from many connections over three daemons on one PostgreSQL, against the same load on one
# SQLite daemon (synchronous=full): the write row of issue #40. Binaries interleaved, ROUNDS
# rounds: each round runs every binary on PostgreSQL (3 daemons, CONNECTIONS / 3 connections to
# each, one wrk per daemon at once) and on SQLite (one daemon, CONNECTIONS connections, three wrks
# of CONNECTIONS / 3), DURATION seconds each, PUT /v1/items/{id} of ITEMS random items with
# bench-compare's wrk_bench.lua. Prints each run's writes/s (the wrks' sum), non-2xx answers and
# CPU per write (the daemons', PostgreSQL's), then each binary's PostgreSQL / SQLite ratio per
# round and its median.
#
#   bash Benchmarks/postgres/puts.sh BINARY [BINARY ...]
#
# KEYED=1: every PUT with a fresh Idempotency-Key (keyed_put.lua), as the SDK sends its writes.
#
# Settings: ROUNDS=3, CONNECTIONS=33, DURATION=10, ITEMS=1000, KEYED=0, PG_SOCKET=0, PG_OPTIONS
# (more server settings, e.g. "-c synchronous_commit=off", as run.sh's), DAEMON_EVENT_LOOPS (each
# PostgreSQL daemon's event loops: the cores over three, or `default`, as pg.sh says; the SQLite
# daemon runs its default, all the cores). Needs wrk, curl and
# python3; runs PostgreSQL (its defaults: fsync and synchronous_commit on) as the postgres user
# when root.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../lib.sh
. "$ROOT/Benchmarks/lib.sh"
need_wrk
LUA="$ROOT/../shared/bench-compare/wrk_bench.lua"
[ "${KEYED:-0}" = "1" ] && LUA="$ROOT/Benchmarks/postgres/keyed_put.lua"
ROUNDS=${ROUNDS:-3} CONNECTIONS=${CONNECTIONS:-33} DURATION=${DURATION:-10} ITEMS=${ITEMS:-1000}
PER=$((CONNECTIONS / 3))
PORTS=(18611 18612 18613)
stop_daemons() { for port in "${PORTS[@]}"; do pkill -f "serve --http-port $port" || true; done; sleep 0.5; }
. "$ROOT/Benchmarks/postgres/pg.sh"
# shellcheck disable=SC2086 # PG_OPTIONS: several server settings
pg_start puts 55497 -c max_connections=200 ${PG_OPTIONS:-}
PG_URL="postgres://postgres@127.0.0.1:55497/stockroom?sslmode=disable"
# PG_SOCKET=1: the daemons connect through PostgreSQL's Unix socket (in WORK) instead of loopback TCP.
[ "${PG_SOCKET:-0}" = "1" ] && PG_URL="postgres://postgres@127.0.0.1:55497/stockroom?host=$WORK"
ready() { for _ in $(seq 1 200); do curl -fs "http://127.0.0.1:$1/ready" >/dev/null && return 0; sleep 0.05; done; echo "daemon on $1 not ready" >&2; exit 2; }
seed() { python3 "$ROOT/Benchmarks/postgres/seed_items.py" "$1" "$2" "$3" "$ITEMS"; } # $1 port, $2 token, $3 lines file
# Each process's CPU ticks so far (utime + stime), a line each: "GROUP PID TICKS". GROUP is
# stockroom (the daemons on PORTS) or postgres (the postmaster and its children: backends, WAL writer).
cpu_snapshot() {
    local pid postmaster
    for pid in $(pgrep -f "serve --http-port 1861[123]"); do
        [ -r "/proc/$pid/stat" ] && awk -v p="$pid" '{ print "stockroom", p, $14 + $15 }' "/proc/$pid/stat" || true
    done
    postmaster=$(head -n 1 "$WORK/data/postmaster.pid" 2>/dev/null || true)
    for pid in $postmaster $(pgrep -P "$postmaster" 2>/dev/null); do
        [ -r "/proc/$pid/stat" ] && awk -v p="$pid" '{ print "postgres", p, $14 + $15 }' "/proc/$pid/stat" || true
    done
}
# wrk against each of the given ports at once, PER connections each; prints the summed writes/s and
# errors, then the CPU per write of the daemons and of PostgreSQL over the load (from /proc; a
# process that started during it counts whole).
load() { # $1 token, $2 lines, ports...
    local token=$1 lines=$2; shift 2
    local n=0
    cpu_snapshot >"$WORK/cpu.before"
    for port in "$@"; do
        MODE=write METHOD=PUT LINES="$lines" AUTH="Bearer $token" wrk -t1 -c"$PER" -d"${DURATION}s" -s "$LUA" "http://127.0.0.1:$port" >"$WORK/wrk.$n" 2>&1 &
        n=$((n + 1))
    done
    wait
    cpu_snapshot >"$WORK/cpu.after"
    python3 - "$WORK" "$n" "$(getconf CLK_TCK)" <<'PY'
import re, sys
work, n, hz = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
rate, bad, count = 0.0, 0, 0
for k in range(n):
    text = open(f"{work}/wrk.{k}").read()
    rate += float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    count += int(re.search(r"(\d+) requests in", text).group(1))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    bad += int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: (.*)", text)
    if m: bad += sum(int(x) for x in re.findall(r"\d+", m.group(1)))
def ticks(path):
    table = {}
    for line in open(path):
        group, pid, value = line.split()
        table[(group, pid)] = float(value)
    return table
before, after = ticks(f"{work}/cpu.before"), ticks(f"{work}/cpu.after")
used = {}
for (group, pid), value in after.items():
    used[group] = used.get(group, 0.0) + value - before.get((group, pid), 0.0)
cpu = "  ".join(f"{group} {used[group] / hz / max(count, 1) * 1e6:5.1f} us" for group in ("stockroom", "postgres") if used.get(group, 0) > 0.05 * hz)
print(f"{rate:8.0f} writes/s  ({bad} non-2xx or socket errors)  CPU per write: {cpu}")
PY
}
FIRST=$1
export DB_URL="$PG_URL"
TOKEN=$("$FIRST" token create --user bench --role editor | tail -n 1)
LOG_LEVEL=warning "$FIRST" serve --http-port "${PORTS[0]}" >/dev/null 2>&1 &
ready "${PORTS[0]}"
seed "${PORTS[0]}" "$TOKEN" "$WORK/pg-lines.txt"
stop_daemons
unset DB_URL
SQLITE="$WORK/sqlite/stockroom.sqlite"
STOKEN=$("$FIRST" token create --user bench --role editor --db-path "$SQLITE" | tail -n 1)
LOG_LEVEL=warning "$FIRST" serve --http-port "${PORTS[0]}" --db-path "$SQLITE" >/dev/null 2>&1 &
ready "${PORTS[0]}"
seed "${PORTS[0]}" "$STOKEN" "$WORK/sqlite-lines.txt"
stop_daemons
echo "PUT /v1/items/{id}, $CONNECTIONS connections, ${DURATION}s, $ITEMS items, event loops per PostgreSQL daemon: $DAEMON_EVENT_LOOPS$([ "${KEYED:-0}" = "1" ] && echo ", each with a fresh Idempotency-Key")"
for r in $(seq 1 "$ROUNDS"); do
    for bin in "$@"; do
        for port in "${PORTS[@]}"; do
            # shellcheck disable=SC2046 # daemon_loops: several assignments or none
            env $(daemon_loops) DB_URL="$PG_URL" LOG_LEVEL=warning "$bin" serve --http-port "$port" >"$WORK/daemon-$port.log" 2>&1 &
        done
        for port in "${PORTS[@]}"; do ready "$port"; done
        pg=$(load "$TOKEN" "$WORK/pg-lines.txt" "${PORTS[@]}")
        echo "round $r  $bin  PostgreSQL, 3 daemons: $pg"
        stop_daemons
        LOG_LEVEL=warning "$bin" serve --http-port "${PORTS[0]}" --db-path "$SQLITE" >"$WORK/sqlite.log" 2>&1 &
        ready "${PORTS[0]}"
        sqlite=$(load "$STOKEN" "$WORK/sqlite-lines.txt" "${PORTS[0]}" "${PORTS[0]}" "${PORTS[0]}")
        echo "round $r  $bin  SQLite, 1 daemon:      $sqlite"
        stop_daemons
        printf '%s\t%s\t%s\n' "$bin" "${pg%% writes/s*}" "${sqlite%% writes/s*}" >>"$WORK/ratios.txt"
    done
done
# PostgreSQL's rate over SQLite's of the same round and binary (issue #40's line: 0.5x), and the median.
python3 - "$WORK/ratios.txt" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    bin, pg, sqlite = line.rstrip("\n").split("\t")
    runs.setdefault(bin, []).append(float(pg) / float(sqlite))
for bin, ratios in runs.items():
    print(f"{bin}: PostgreSQL / SQLite " + ", ".join(f"{x:.2f}x" for x in ratios) + f"; median {statistics.median(ratios):.2f}x")
PY
