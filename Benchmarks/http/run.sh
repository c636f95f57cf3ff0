#!/usr/bin/env bash
# Stockroom HTTP benchmark. See Benchmarks/README.md for what each figure means.
#
#   bash Benchmarks/http/run.sh            (from the repository root, or from anywhere)
#
# Builds release binaries of BaselineServer (Benchmarks/ package) and stockroom, starts both
# on 127.0.0.1 (baseline :8090, stockroom :8091, a fresh database in a temporary folder),
# then runs wrk in alternating rounds:
#   (a) baseline   GET /v1/items/{id}                 wrk -t2 -c32
#   (b) stockroom  GET /v1/items/{id} (bearer token)  wrk -t2 -c32
#   (c) stockroom  PUT /v1/items/{id} (valid Draft)   wrk -tN -cN, one item per connection
#   (d) stockroom  openEdit + save commands           wrk -tN -cN, one item and clientID per connection
# and prints per-round req/s, the medians and the ratios. The summary is also written to
# Benchmarks/http/last-run.txt. Any non-2xx response or socket error makes the run invalid
# (exit status 1).
#
# Settings (environment):
#   ROUNDS=5            rounds per target
#   DURATION=10s        wrk duration of one round
#   WARMUP=3s           one unmeasured wrk run per target before the rounds (0 to skip)
#   GET_THREADS=2 GET_CONNECTIONS=32
#   WRITE_CONNECTIONS=16  connections (= wrk threads = items = clientIDs) for (c) and (d)
#   BASELINE_PORT=8090 STOCKROOM_PORT=8091
#   SKIP_BUILD=1        reuse the binaries already built
#   BASELINE_BIN, BIN   measure these binaries (BaselineServer, stockroom) instead of building them
#   KEEP_TMP=1          keep the temporary folder (database, server logs, wrk outputs)
#   DB_SYNCHRONOUS, DB_BUSY_TIMEOUT_SECONDS  passed to stockroom as usual (default: full, 5)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HTTP_DIR="$ROOT/Benchmarks/http"
cd "$ROOT"

ROUNDS="${ROUNDS:-5}"
DURATION="${DURATION:-10s}"
WARMUP="${WARMUP:-3s}"
GET_THREADS="${GET_THREADS:-2}"
GET_CONNECTIONS="${GET_CONNECTIONS:-32}"
WRITE_CONNECTIONS="${WRITE_CONNECTIONS:-16}"
BASELINE_PORT="${BASELINE_PORT:-8090}"
STOCKROOM_PORT="${STOCKROOM_PORT:-8091}"
KEEP_TMP="${KEEP_TMP:-0}"
REPRO_COMMAND="bash Benchmarks/http/run.sh"

log() { printf '[run.sh %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }

# ---------------------------------------------------------------- tools
command -v curl >/dev/null || die "curl is required"
if ! command -v wrk >/dev/null; then
    log "wrk not found: installing it (apt-get install -y wrk)"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq wrk >/dev/null
fi

TMP="$(mktemp -d "${TMPDIR:-/tmp}/stockroom-bench.XXXXXX")"
BASELINE_PID=""
STOCKROOM_PID=""

# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

cleanup() {
    stop_pid "$STOCKROOM_PID" stockroom 100
    stop_pid "$BASELINE_PID" BaselineServer 100
    if [ "$KEEP_TMP" = "1" ]; then log "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- build
baseline_bin
release_bin

# ---------------------------------------------------------------- start servers
for port in "$BASELINE_PORT" "$STOCKROOM_PORT"; do
    if curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$port/"; then
        die "something already listens on 127.0.0.1:$port"
    fi
done

wait_health() { # wait_health PORT PID NAME
    local port="$1" pid="$2" name="$3" i
    for i in $(seq 1 300); do
        kill -0 "$pid" 2>/dev/null || die "$name exited during startup (see $TMP/$name.err)"
        if curl -sf -o /dev/null --max-time 1 "http://127.0.0.1:$port/health"; then return 0; fi
        sleep 0.2
    done
    die "$name did not answer /health on port $port within 60 s"
}

log "starting BaselineServer on 127.0.0.1:$BASELINE_PORT"
"$BASELINE_BIN" "$BASELINE_PORT" >"$TMP/BaselineServer.out" 2>"$TMP/BaselineServer.err" &
BASELINE_PID=$!

log "starting stockroom on 127.0.0.1:$STOCKROOM_PORT (database $TMP/bench.sqlite)"
# Started from the temporary folder, so that no Config/stockroom.json is picked up by accident.
( cd "$TMP" && LOG_LEVEL=warning exec "$BIN" serve --demo --db-path "$TMP/bench.sqlite" \
      --http-host 127.0.0.1 --http-port "$STOCKROOM_PORT" >"$TMP/stockroom.out" 2>"$TMP/stockroom.err" ) &
STOCKROOM_PID=$!

wait_health "$BASELINE_PORT" "$BASELINE_PID" BaselineServer
wait_health "$STOCKROOM_PORT" "$STOCKROOM_PID" stockroom

TOKEN="$(sed -n 's/^[[:space:]]*export TOKEN=//p' "$TMP/stockroom.out" | tail -n 1)"
[ -n "$TOKEN" ] || die "no 'export TOKEN=' line in stockroom's output ($TMP/stockroom.out)"
export TOKEN

BASE="http://127.0.0.1:$STOCKROOM_PORT"
BASELINE_URL_BASE="http://127.0.0.1:$BASELINE_PORT"
AUTH="Authorization: Bearer $TOKEN"

first_id() { grep -o '"id":"[0-9a-fA-F-]\{36\}"' | head -n 1 | cut -d'"' -f4; }

READ_ID="$(curl -sf "$BASE/v1/items?limit=1" -H "$AUTH" | first_id)"
[ -n "$READ_ID" ] || die "GET /v1/items returned no demo item"

# Bodies of the two read targets, to show that they are of a comparable size.
STOCKROOM_BODY_BYTES="$(curl -sf -o /dev/null -w '%{size_download}' "$BASE/v1/items/$READ_ID" -H "$AUTH")"
BASELINE_BODY_BYTES="$(curl -sf -o /dev/null -w '%{size_download}' "$BASELINE_URL_BASE/v1/items/$READ_ID")"

log "creating $WRITE_CONNECTIONS items for the write benchmarks"
ITEM_IDS=""
for i in $(seq 1 "$WRITE_CONNECTIONS"); do
    out="$(curl -s -w '\n%{http_code}' -X POST "$BASE/v1/items" -H "$AUTH" -H 'Content-Type: application/json' \
        -d "{\"name\":\"Bench item $i\",\"color\":{\"name\":\"Red\",\"red\":1,\"green\":0,\"blue\":0},\"status\":{\"inStock\":{\"quantity\":1}}}")"
    code="$(printf '%s' "$out" | tail -n 1)"
    [ "$code" = "201" ] || die "POST /v1/items answered $code: $(printf '%s' "$out" | head -n 1)"
    id="$(printf '%s' "$out" | head -n 1 | first_id)"
    ITEM_IDS="$ITEM_IDS${ITEM_IDS:+,}$id"
done
export ITEM_IDS

# ---------------------------------------------------------------- wrk runs
# run_wrk runs in $(...) subshells, so errors are collected in a file, not in variables.
ERRORS_FILE="$TMP/errors.txt"
: >"$ERRORS_FILE"

# run_wrk NAME OUTFILE wrk-args...: runs wrk, echoes the RESULT line, records errors.
run_wrk() {
    local name="$1" out="$2"; shift 2
    if ! wrk "$@" >"$out" 2>&1; then
        cat "$out" >&2
        die "wrk failed for $name"
    fi
    local result errors
    result="$(grep '^RESULT ' "$out" | tail -n 1)"
    [ -n "$result" ] || { cat "$out" >&2; die "no RESULT line from wrk for $name"; }
    errors="$(field errors "$result")"
    if [ "$errors" != "0" ]; then
        printf '%s %s\n' "$errors" "$name: $errors errors; $(grep -E '^(ERROR_SAMPLE|WARNING)|Non-2xx|Socket errors' "$out" | tr '\n' ' ')" >>"$ERRORS_FILE"
    fi
    printf '%s\n' "$result"
}

field() { # field KEY "RESULT k=v ..." -> v
    printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"
}

median() { # median v1 v2 ... -> median (mean of the two middle values for an even count)
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "nan"; exit }
        if (NR % 2) printf "%.4f\n", v[(NR + 1) / 2]; else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }' |
        awk '{ if ($1 >= 10) printf "%.1f\n", $1; else printf "%.4g\n", $1 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "nan"; else printf "%.3f\n", a / b }'; }

GET_ARGS=(-t"$GET_THREADS" -c"$GET_CONNECTIONS" -s "$HTTP_DIR/get.lua")
WRITE_ARGS=(-t"$WRITE_CONNECTIONS" -c"$WRITE_CONNECTIONS")

bench_baseline_get() { run_wrk "baseline GET r$1" "$TMP/wrk-baseline-get-$1.txt" "${GET_ARGS[@]}" -d"$2" \
    "$BASELINE_URL_BASE/v1/items/$READ_ID"; }
bench_stockroom_get() { run_wrk "stockroom GET r$1" "$TMP/wrk-stockroom-get-$1.txt" "${GET_ARGS[@]}" -d"$2" \
    -H "$AUTH" "$BASE/v1/items/$READ_ID"; }
bench_put() { run_wrk "stockroom PUT r$1" "$TMP/wrk-put-$1.txt" "${WRITE_ARGS[@]}" -d"$2" \
    -s "$HTTP_DIR/put-item.lua" "$BASE"; }
bench_save() { export CLIENT_PREFIX="bench-$1"; run_wrk "stockroom save cycle r$1" "$TMP/wrk-save-$1.txt" "${WRITE_ARGS[@]}" -d"$2" \
    -s "$HTTP_DIR/save-cycle.lua" "$BASE"; }

LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"

if [ "$WARMUP" != "0" ]; then
    log "warm-up ($WARMUP per target, not measured)"
    bench_baseline_get w "$WARMUP" >/dev/null
    bench_stockroom_get w "$WARMUP" >/dev/null
    bench_put w "$WARMUP" >/dev/null
    bench_save w "$WARMUP" >/dev/null
fi

B_GET=(); S_GET=(); PUT=(); SAVE_CMD=(); SAVE_CYC=()

log "reads: $ROUNDS rounds of wrk ${GET_ARGS[*]} -d$DURATION, alternating baseline and stockroom"
for r in $(seq 1 "$ROUNDS"); do
    # The order flips each round, so neither target always runs right after the other.
    if [ $((r % 2)) -eq 1 ]; then order="b s"; else order="s b"; fi
    for t in $order; do
        if [ "$t" = b ]; then
            line="$(bench_baseline_get "$r" "$DURATION")"; B_GET+=("$(field rps "$line")")
            log "round $r  (a) baseline  GET  $(field rps "$line") req/s  errors=$(field errors "$line")  p99=$(field p99_ms "$line")ms"
        else
            line="$(bench_stockroom_get "$r" "$DURATION")"; S_GET+=("$(field rps "$line")")
            log "round $r  (b) stockroom GET  $(field rps "$line") req/s  errors=$(field errors "$line")  p99=$(field p99_ms "$line")ms"
        fi
    done
done

log "writes: $ROUNDS rounds of wrk ${WRITE_ARGS[*]} -d$DURATION, alternating PUT and the openEdit+save cycle"
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) -eq 1 ]; then order="p c"; else order="c p"; fi
    for t in $order; do
        if [ "$t" = p ]; then
            line="$(bench_put "$r" "$DURATION")"; PUT+=("$(field rps "$line")")
            log "round $r  (c) PUT item       $(field rps "$line") req/s  errors=$(field errors "$line")  p99=$(field p99_ms "$line")ms"
        else
            line="$(bench_save "$r" "$DURATION")"
            SAVE_CMD+=("$(field rps "$line")"); SAVE_CYC+=("$(field cycles_per_s "$line")")
            log "round $r  (d) save cycle     $(field rps "$line") commands/s = $(field cycles_per_s "$line") cycles/s  errors=$(field errors "$line")  p99=$(field p99_ms "$line")ms"
        fi
    done
done

LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"

# ---------------------------------------------------------------- summary
M_B_GET="$(median "${B_GET[@]}")"
M_S_GET="$(median "${S_GET[@]}")"
M_PUT="$(median "${PUT[@]}")"
M_SAVE_CMD="$(median "${SAVE_CMD[@]}")"
M_SAVE_CYC="$(median "${SAVE_CYC[@]}")"
R_GET="$(ratio "$M_S_GET" "$M_B_GET")"
R_SAVE="$(ratio "$M_SAVE_CYC" "$M_PUT")"
# Paired ratios: the two targets of one round ran back to back, so their ratio is less
# affected by load that drifts between rounds than the ratio of the medians.
RR_GET=(); RR_SAVE=()
for i in "${!B_GET[@]}"; do RR_GET+=("$(ratio "${S_GET[$i]}" "${B_GET[$i]}")"); done
for i in "${!PUT[@]}"; do RR_SAVE+=("$(ratio "${SAVE_CYC[$i]}" "${PUT[$i]}")"); done
MR_GET="$(median "${RR_GET[@]}" | awk '{ printf "%.3f", $1 }')"
MR_SAVE="$(median "${RR_SAVE[@]}" | awk '{ printf "%.3f", $1 }')"
TOTAL_ERRORS="$(awk '{ n += $1 } END { print n + 0 }' "$ERRORS_FILE")"
ERROR_NOTES="$(cut -d' ' -f2- "$ERRORS_FILE" | sed 's/^/  /')"
[ -z "$ERROR_NOTES" ] || ERROR_NOTES="
$ERROR_NOTES"
VALID=yes; [ "$TOTAL_ERRORS" -eq 0 ] || VALID=no

GIT_REV="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git -C "$ROOT" status --porcelain -- Sources Migrations Package.swift 2>/dev/null)" ]; then GIT_REV="$GIT_REV+uncommitted-changes"; fi

SUMMARY="$(cat <<EOF
# Stockroom HTTP benchmark: machine-readable summary (key=value; rounds are space-separated req/s)
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
git=$GIT_REV
host_cpus=$(nproc)
loadavg_before=$LOAD_BEFORE
loadavg_after=$LOAD_AFTER
swift=$(swift --version 2>/dev/null | head -n 1)
wrk=$(wrk -v 2>&1 | head -n 1 | cut -d' ' -f1-2)
rounds=$ROUNDS
duration=$DURATION
get_wrk=-t$GET_THREADS -c$GET_CONNECTIONS
write_wrk=-t$WRITE_CONNECTIONS -c$WRITE_CONNECTIONS (one item and one clientID per connection)
db_synchronous=${DB_SYNCHRONOUS:-full (default)}
baseline_body_bytes=$BASELINE_BODY_BYTES
stockroom_body_bytes=$STOCKROOM_BODY_BYTES
a_baseline_get_rps_rounds=${B_GET[*]}
a_baseline_get_rps_median=$M_B_GET
b_stockroom_get_rps_rounds=${S_GET[*]}
b_stockroom_get_rps_median=$M_S_GET
ratio_stockroom_get_over_baseline_get=$R_GET
ratio_stockroom_get_over_baseline_get_per_round=${RR_GET[*]}
ratio_stockroom_get_over_baseline_get_median_of_rounds=$MR_GET
c_put_item_rps_rounds=${PUT[*]}
c_put_item_rps_median=$M_PUT
d_save_commands_per_s_rounds=${SAVE_CMD[*]}
d_save_commands_per_s_median=$M_SAVE_CMD
d_save_cycles_per_s_rounds=${SAVE_CYC[*]}
d_save_cycles_per_s_median=$M_SAVE_CYC
ratio_save_cycles_over_put=$R_SAVE
ratio_save_cycles_over_put_per_round=${RR_SAVE[*]}
ratio_save_cycles_over_put_median_of_rounds=$MR_SAVE
errors_total=$TOTAL_ERRORS
valid=$VALID
command=$REPRO_COMMAND
EOF
)"
printf '%s\n' "$SUMMARY" >"$HTTP_DIR/last-run.txt"

cat <<EOF

==================== Stockroom HTTP benchmark summary ====================
git $GIT_REV, $(nproc) CPUs, load average before/after: $LOAD_BEFORE / $LOAD_AFTER
$ROUNDS rounds x $DURATION each; medians of the rounds

(a) baseline  GET /v1/items/{id}  wrk -t$GET_THREADS -c$GET_CONNECTIONS   median $M_B_GET req/s   [${B_GET[*]}]
(b) stockroom GET /v1/items/{id}  wrk -t$GET_THREADS -c$GET_CONNECTIONS   median $M_S_GET req/s   [${S_GET[*]}]
    ratio stockroom/baseline = $R_GET (of the medians); per round [${RR_GET[*]}], median $MR_GET
    (bodies: baseline $BASELINE_BODY_BYTES B, stockroom $STOCKROOM_BODY_BYTES B)

(c) stockroom PUT /v1/items/{id}  wrk -t$WRITE_CONNECTIONS -c$WRITE_CONNECTIONS  median $M_PUT req/s   [${PUT[*]}]
(d) openEdit+save commands        wrk -t$WRITE_CONNECTIONS -c$WRITE_CONNECTIONS  median $M_SAVE_CMD commands/s = $M_SAVE_CYC cycles/s
    commands/s [${SAVE_CMD[*]}]
    cycles/s   [${SAVE_CYC[*]}]
    ratio save-cycles/s / PUT/s = $R_SAVE (of the medians); per round [${RR_SAVE[*]}], median $MR_SAVE
    (db.synchronous = ${DB_SYNCHRONOUS:-full (default)})

errors (non-2xx or socket): $TOTAL_ERRORS  -> valid: $VALID$ERROR_NOTES

Machine-readable summary: Benchmarks/http/last-run.txt
Reproduce: $REPRO_COMMAND
==========================================================================
EOF

if [ -s "$TMP/stockroom.err" ]; then
    log "stockroom wrote to stderr (last 10 lines of $(wc -l <"$TMP/stockroom.err")):"
    tail -n 10 "$TMP/stockroom.err" >&2
fi
kill -0 "$STOCKROOM_PID" 2>/dev/null || log "WARNING: stockroom is no longer running (crashed?)"
kill -0 "$BASELINE_PID" 2>/dev/null || log "WARNING: BaselineServer is no longer running (crashed?)"

[ "$VALID" = yes ] || { log "INVALID run: $TOTAL_ERRORS errors"; exit 1; }
