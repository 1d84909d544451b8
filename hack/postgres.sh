#!/usr/bin/env bash
# The platform's PostgreSQL from Debian's package, on loopback, with its data under .svc/postgres.
#   postgres.sh up | down | status | crash
# `crash` stops it as a crash would (immediate: no checkpoint, clients cut off; the next start
# recovers from the WAL), for the tests that prove the platform rides out losing its database.
source "$(dirname "$0")/lib.sh"

PGDATA="$STATE/postgres"
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$PGBIN" ] || { say "postgres: no server found under /usr/lib/postgresql (make deps installs it)" >&2; exit 1; }

# PostgreSQL refuses to run as root; as root we run it as the package's `postgres` user.
AS_PG=()
[ "$(id -u)" = 0 ] && AS_PG=(runuser -u postgres --)

up() {
  if [ ! -f "$PGDATA/PG_VERSION" ]; then
    mkdir -p "$PGDATA"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$PGDATA"
    chmod 700 "$PGDATA"
    # trust on loopback only: this server holds a development database and listens on 127.0.0.1.
    "${AS_PG[@]}" "$PGBIN/initdb" -D "$PGDATA" -U svc --auth=trust -E UTF8 --locale C.UTF-8 >"$LOGS/postgres-initdb.log" 2>&1 ||
      { log_tail postgres-initdb; exit 1; }
  fi
  # The port is in Linux's ephemeral range (32768-60999): a client socket of the cluster's busy
  # loopback traffic can hold it as its source port for a moment (seen once: "could not bind ...
  # Address already in use"). Reserved from the range where we may, and the start tried again.
  reserve_port "$PG_PORT"
  local try
  for try in 1 2 3; do
    start_daemon postgres "${AS_PG[@]}" "$PGBIN/postgres" -D "$PGDATA" -p "$PG_PORT" -c listen_addresses=127.0.0.1 \
      -c unix_socket_directories="$PGDATA" -c fsync=off -c synchronous_commit=off -c max_connections=200
    wait_ready postgres 30 "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && break
    # This start's lines only: from its marker on.
    awk '/^==== .* starting postgres ====$/ { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }' "$LOGS/postgres.log" |
      grep -q 'Address already in use' && ((try < 3)) || exit 1
    say "postgres: port $PG_PORT was taken for a moment; starting again"
    sleep 2
  done
  "$PGBIN/psql" -q -h 127.0.0.1 -p "$PG_PORT" -U svc -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'svc'" |
    grep -q 1 || "$PGBIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U svc svc
  say "postgres: postgres://svc@127.0.0.1:$PG_PORT/svc"
}

case "${1:-}" in
  up) up ;;
  down)
    # A fast shutdown: SIGTERM would wait for every client to disconnect.
    if is_running postgres; then "${AS_PG[@]}" "$PGBIN/pg_ctl" stop -D "$PGDATA" -m fast -w >/dev/null || true; fi
    stop_daemon postgres 20 ;;
  crash)
    if is_running postgres; then "${AS_PG[@]}" "$PGBIN/pg_ctl" stop -D "$PGDATA" -m immediate -w >/dev/null || true; fi
    stop_daemon postgres 20 ;;
  status) status_line postgres ;;
  *) say "usage: $0 up|down|status|crash" >&2; exit 2 ;;
esac
