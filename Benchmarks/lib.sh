# Shared by the benchmark scripts (sourced after they define `log`).

# stop_pid PID NAME [TENTHS]: SIGTERM, wait up to TENTHS tenths of a second (default 150), then SIGKILL.
stop_pid() {
    local pid="$1" name="$2" tenths="${3:-150}" i
    [ -n "$pid" ] || return 0
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 "$tenths"); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        log "$name (pid $pid) did not stop after SIGTERM; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}
