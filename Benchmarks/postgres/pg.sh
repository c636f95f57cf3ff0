# Sourced by the PostgreSQL benchmarks of this folder: a throwaway PostgreSQL 15 with its defaults
# (fsync and synchronous_commit on), run as the postgres user when root.
#
# pg_start NAME PORT [SERVER SETTINGS...]: a new folder WORK (/tmp/NAME.XXXXXX: the data directory
# and the socket), the server on 127.0.0.1:PORT with a database `stockroom`. PG names the
# binaries' folder, AS the prefix that runs a command as the postgres user. On exit the script's
# `stop_daemons` runs first when it defines one, then the server stops and WORK goes.
PG=/usr/lib/postgresql/15/bin
# The event loops of each daemon when three share this machine: its cores over three, rounded up,
# as an operator sizes daemons that share a machine (docs/production.md); `default` leaves each
# daemon NIO's count of the machine's cores. `daemon_loops` prints the environment for `env`:
# EVENT_LOOPS, and NIO's own NIO_SINGLETON_GROUP_LOOP_COUNT, which binaries older than that setting read.
DAEMON_EVENT_LOOPS=${DAEMON_EVENT_LOOPS:-$(( ($(nproc) + 2) / 3 ))}
daemon_loops() {
    [ "$DAEMON_EVENT_LOOPS" = default ] || echo "EVENT_LOOPS=$DAEMON_EVENT_LOOPS NIO_SINGLETON_GROUP_LOOP_COUNT=$DAEMON_EVENT_LOOPS"
}
AS=(); [ "$(id -u)" -eq 0 ] && AS=(runuser -u postgres --)

pg_start() {
    local name="$1" port="$2"
    shift 2
    WORK="$(mktemp -d "/tmp/$name.XXXXXX")"
    if [ "$(id -u)" -eq 0 ]; then chown postgres:postgres "$WORK"; fi
    chmod 700 "$WORK"
    trap pg_cleanup EXIT
    "${AS[@]}" "$PG/initdb" -D "$WORK/data" -U postgres --auth=trust --no-sync >/dev/null
    "${AS[@]}" "$PG/pg_ctl" -D "$WORK/data" -l "$WORK/pg.log" -w -o "-p $port -k $WORK -c listen_addresses=127.0.0.1 $*" start >/dev/null
    "${AS[@]}" "$PG/createdb" -h 127.0.0.1 -p "$port" -U postgres stockroom
}

pg_cleanup() {
    if declare -F stop_daemons >/dev/null; then stop_daemons; fi
    "${AS[@]}" "$PG/pg_ctl" -D "$WORK/data" -m fast stop >/dev/null 2>&1 || true
    rm -rf "$WORK"
}

# pg_fresh PORT BINARY: the database `stockroom` made anew; prints a new editor's token from BINARY.
pg_fresh() {
    "${AS[@]}" "$PG/dropdb" -h 127.0.0.1 -p "$1" -U postgres --if-exists stockroom
    "${AS[@]}" "$PG/createdb" -h 127.0.0.1 -p "$1" -U postgres stockroom
    DB_URL="postgres://postgres@127.0.0.1:$1/stockroom?sslmode=disable" "$2" token create --user bench --role editor | tail -n 1
}
