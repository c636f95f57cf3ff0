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

# need_wrk: stops, saying how to install it, when wrk (the load generator) is not on PATH.
need_wrk() {
    command -v wrk >/dev/null && return 0
    echo "$(basename "$0"): needs wrk (Debian: apt-get install wrk)" >&2
    exit 2
}

# release_bin: leaves BIN as it is when set, else sets it to this checkout's release binary
# (ROOT), built first unless SKIP_BUILD=1. Needs `log` and `die`.
release_bin() {
    if [ -z "${BIN:-}" ]; then
        local build=("$ROOT/deploy/release-build.sh" --scratch-path "$ROOT/.build-release" --package-path "$ROOT")
        if [ "${SKIP_BUILD:-0}" != "1" ]; then
            log "building: ${build[*]}"
            "${build[@]}" >&2 || die "build failed"
        fi
        BIN="$("${build[@]}" --show-bin-path)/stockroom"
    fi
    [ -x "$BIN" ] || die "no stockroom at $BIN"
}

# baseline_bin: leaves BASELINE_BIN as it is when set, else sets it to the Benchmarks package's
# BaselineServer (the bare Hummingbird route), built first unless SKIP_BUILD=1. Needs `log` and `die`.
baseline_bin() {
    if [ -z "${BASELINE_BIN:-}" ]; then
        local build=(swift build -c release --package-path "$ROOT/Benchmarks" --scratch-path "$ROOT/Benchmarks/.build-bench" --product BaselineServer)
        if [ "${SKIP_BUILD:-0}" != "1" ]; then
            log "building: ${build[*]}"
            "${build[@]}" >&2 || die "BaselineServer did not build"
        fi
        BASELINE_BIN="$("${build[@]}" --show-bin-path)/BaselineServer"
    fi
    [ -x "$BASELINE_BIN" ] || die "no BaselineServer at $BASELINE_BIN"
}

# absolute_bin NAME [HINT]: the executable the variable NAME names, made absolute (the scripts start
# their servers from a scratch folder, where a path given relative to the caller's finds nothing);
# `die`s with HINT when it is missing. Says when it is not the build as shipped (`shipped_note`).
# Needs `die`.
absolute_bin() {
    local name="$1" hint="${2:-}"
    [ -x "${!name}" ] || die "missing ${!name}${hint:+ ($hint)}"
    printf -v "$name" '%s' "$(realpath "${!name}")"
    shipped_note "${!name}"
}

# shipped_note BINARY: a line on standard error when BINARY is a stockroom that loads the Swift
# runtime from shared libraries, as a plain `swift build -c release` makes it: not the build as
# shipped (deploy/release-build.sh links the runtime in and lays the code out), whose GET takes
# about a fifth less CPU (Benchmarks/README, "Stop 97"). Its figures are not the product's.
shipped_note() {
    case "$(basename "$1")" in stockroom*) ;; *) return 0 ;; esac
    command -v ldd >/dev/null || return 0
    # ldd's lines read whole first: `ldd | grep -q` under pipefail fails when grep stops early.
    local libraries
    libraries=$(ldd "$1" 2>/dev/null) || return 0
    if grep -q 'libswiftCore\.so' <<<"$libraries"; then
        echo "note: $1 loads the Swift runtime dynamically: not the build as shipped (deploy/release-build.sh)" >&2
    fi
}

# callgrind_copy BIN DIR: what valgrind 3.19 (Debian 12) needs to run a Swift 6.3 binary, in DIR:
# `stockroom`, a copy of BIN without its debug information (valgrind cannot read DWARF 5 and gives
# up; the symbol table, and so the function names, stay), its resource bundles beside it, and
# `sigsuspend-shim.so` (Benchmarks/callgrind/sigsuspend-shim.c: libdispatch parks the main thread
# on a `static const` mask, which valgrind writes into and crashes), for LD_PRELOAD.
callgrind_copy() {
    local bin="$1" dir="$2" bundle
    command -v strip >/dev/null || die "strip is required (binutils)"
    command -v cc >/dev/null || die "a C compiler is required (for sigsuspend-shim.c)"
    strip --strip-debug -o "$dir/stockroom" "$bin" || die "strip failed"
    for bundle in "$(dirname "$bin")"/*.resources; do [ -e "$bundle" ] && cp -r "$bundle" "$dir/"; done
    cc -shared -fPIC -O2 -o "$dir/sigsuspend-shim.so" "$ROOT/Benchmarks/callgrind/sigsuspend-shim.c" \
        || die "could not build the sigsuspend shim"
}

# demo_server_ready PID PORT OUT ERR: waits (up to 5 minutes: valgrind is slow) for GET /health
# of the `serve --demo` server PID on PORT, then sets TOKEN (the `export TOKEN=` line of OUT, its
# output) and ITEM (the id of its first item). ERR's tail is shown if the server exits meanwhile.
demo_server_ready() {
    local pid="$1" port="$2" out="$3" err="$4"
    for _ in $(seq 1 600); do
        kill -0 "$pid" 2>/dev/null || { tail -n 20 "$err" >&2; die "the server exited during startup"; }
        curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:$port/health" && break
        sleep 0.5
    done
    curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:$port/health" || die "no /health answer within 5 minutes"
    TOKEN="$(sed -n 's/^[[:space:]]*export TOKEN=//p' "$out" | tail -n 1)"
    [ -n "$TOKEN" ] || die "no 'export TOKEN=' line in the server's output"
    ITEM="$(curl -sf "http://127.0.0.1:$port/v1/items?limit=1" -H "Authorization: Bearer $TOKEN" \
        | grep -o '"id":"[0-9a-fA-F-]\{36\}"' | head -n 1 | cut -d'"' -f4)"
    [ -n "$ITEM" ] || die "no demo item"
}

# start_demo BINARY PORT FOLDER [VAR=value ...]: starts `BINARY serve --demo` on 127.0.0.1:PORT, its
# database and output in FOLDER (the environment given added), waits for it (demo_server_ready)
# and sets DEMO_PID, TOKEN and ITEM. Needs `die` (absolute_bin).
start_demo() {
    local binary="$1" port="$2" folder="$3"
    shift 3
    absolute_bin binary
    mkdir -p "$folder"
    (cd "$folder" && exec env "$@" "$binary" serve --demo --db-path "$folder/db.sqlite" --http-host 127.0.0.1 \
        --http-port "$port" >"$folder/out" 2>&1) &
    DEMO_PID=$!
    demo_server_ready "$DEMO_PID" "$port" "$folder/out" "$folder/out"
}

# callgrind_preflight PORT: what a server under callgrind needs before it starts: valgrind and
# callgrind_control, the binary (release_bin), and PORT free.
callgrind_preflight() {
    command -v valgrind >/dev/null || die "valgrind is required (apt-get install -y valgrind)"
    command -v callgrind_control >/dev/null || die "callgrind_control is required (it comes with valgrind)"
    command -v curl >/dev/null || die "curl is required"
    release_bin
    [ -x "$BIN" ] || die "no binary at $BIN"
    shipped_note "$BIN"
    if curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$1/"; then die "something already listens on 127.0.0.1:$1"; fi
}
