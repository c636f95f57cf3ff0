#!/bin/bash
# The stand-in's entrypoint (see the Dockerfile beside it): on the first start, initdb with
# POSTGRES_USER as the superuser and POSTGRES_PASSWORD as its password, listen on every address
# with SCRAM authentication for the network, create POSTGRES_DB; then run `postgres` as the user
# postgres (PID 1: it gets the stop signal itself).
set -euo pipefail

if [ "${1:-}" != postgres ]; then
    exec "$@"
fi
if [ "$(id -u)" = 0 ]; then
    install -d -o postgres -g postgres -m 0700 "$PGDATA"
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

user="${POSTGRES_USER:-postgres}"
database="${POSTGRES_DB:-$user}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "${POSTGRES_PASSWORD:-}" ]; then
        echo "docker-entrypoint.sh: POSTGRES_PASSWORD is not set" >&2
        exit 1
    fi
    pwfile="$(mktemp)"
    printf '%s' "$POSTGRES_PASSWORD" >"$pwfile"
    initdb --pgdata="$PGDATA" --username="$user" --pwfile="$pwfile" --encoding=UTF8 \
        --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    rm -f "$pwfile"
    echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
    if [ "$database" != postgres ]; then
        # Single-user mode: no server listens while the database is made.
        echo "CREATE DATABASE \"$database\" OWNER \"$user\"" | postgres --single -D "$PGDATA" postgres >/dev/null
    fi
    echo "docker-entrypoint.sh: initialized $PGDATA (superuser $user, database $database)"
fi
exec "$@"
