#!/bin/bash
# PID 1 of the svc/postgres image (a Database's server, controllers/database/): on the first start
# of an empty volume, initdb with the tenant's role as the server's owner (SCRAM passwords, as the
# official image's POSTGRES_USER) and the tenant's database; then the server itself, in the
# foreground, listening on every address (the Database's NetworkPolicy says who may connect).
set -euo pipefail
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
export PGDATA=${PGDATA:-/var/lib/svc-postgres/data}
: "${PGUSER:?the role name (username of the credentials Secret)}" "${PGPASSWORD:?the role password}" "${PGDATABASE:?the database name}"
# `branch`: the init container of a Database that starts as a copy of another (spec.branchOf): a
# physical copy of the running source server (pg_basebackup with its WAL, a fast checkpoint, live
# connections allowed), once, into the empty volume; the server then starts from it as a primary of
# its own. Same role and password as the source: the branch's credentials are the source's.
if [ "${1:-}" = branch ]; then
  : "${SVC_BRANCH_HOST:?the address of the source server}"
  if [ -s "$PGDATA/PG_VERSION" ]; then echo "svc-postgres: $PGDATA holds a database already; not copied again"; exit 0; fi
  rm -rf "$PGDATA" && mkdir -p "$PGDATA" && chmod 0700 "$PGDATA"
  echo "svc-postgres: copying $SVC_BRANCH_HOST into $PGDATA"
  start=$(date +%s%N)
  "$bin/pg_basebackup" --host="$SVC_BRANCH_HOST" --port=5432 --username="$PGUSER" --no-password --pgdata="$PGDATA" --wal-method=stream --checkpoint=fast
  echo "svc-postgres: copied $(du -sm "$PGDATA" | cut -f1) MB in $((($(date +%s%N) - start) / 1000000)) ms"
  exit 0
fi
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
# Branches copy the server with the replication protocol (servers made before branches lack the line).
grep -q '^host replication all 0.0.0.0/0' "$PGDATA/pg_hba.conf" || printf 'host replication all 0.0.0.0/0 scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
# The kubelet's fsGroup pass may have opened the group bits again; PostgreSQL refuses to start so.
chmod 0700 "$PGDATA"
exec "$bin/postgres" -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/tmp -c password_encryption=scram-sha-256 "$@"
