#!/bin/bash
# PID 1 of the svc/postgres image (a Database's server, controllers/database/): on the first start
# of an empty volume, initdb with the tenant's role as the server's owner (SCRAM passwords, as the
# official image's POSTGRES_USER) and the tenant's database; then the server itself, in the
# foreground, listening on every address (the Database's NetworkPolicy says who may connect).
set -euo pipefail
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
export PGDATA=${PGDATA:-/var/lib/svc-postgres/data}
: "${PGUSER:?the role name (username of the credentials Secret)}" "${PGPASSWORD:?the role password}" "${PGDATABASE:?the database name}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  echo "svc-postgres: initializing $PGDATA for database $PGDATABASE"
  mkdir -p "$PGDATA" && chmod 0700 "$PGDATA"
  pwfile=$(mktemp)
  printf '%s' "$PGPASSWORD" >"$pwfile"
  "$bin/initdb" --pgdata="$PGDATA" --username="$PGUSER" --pwfile="$pwfile" --auth=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  printf 'host all all 0.0.0.0/0 scram-sha-256\nhost all all ::/0 scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
  if [ "$PGDATABASE" != postgres ]; then
    echo "CREATE DATABASE \"$PGDATABASE\" OWNER \"$PGUSER\"" | "$bin/postgres" --single -D "$PGDATA" -j postgres >/dev/null
  fi
fi
# The kubelet's fsGroup pass may have opened the group bits again; PostgreSQL refuses to start so.
chmod 0700 "$PGDATA"
exec "$bin/postgres" -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/tmp -c password_encryption=scram-sha-256 "$@"
