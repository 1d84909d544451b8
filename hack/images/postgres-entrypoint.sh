#!/bin/bash
# PID 1 of the svc/postgres image (a Database's server, controllers/database/): on the first start
# of an empty volume, initdb with the tenant's role as the server's owner (SCRAM passwords, as the
# official image's POSTGRES_USER) and the tenant's database; then the server itself, in the
# foreground, listening on every address (the Database's NetworkPolicy says who may connect).
set -euo pipefail
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
export PGDATA=${PGDATA:-/var/lib/svc-postgres/data}
: "${PGUSER:?the role name (username of the credentials Secret)}" "${PGPASSWORD:?the role password}" "${PGDATABASE:?the database name}"
# `backup`: a Job of the Database's backup CronJob: a logical dump (custom format) of the server at
# SVC_BACKUP_HOST streamed to the platform (SVC_BACKUP_URL, a credential that only adds backups of
# this database); a failure is reported there too, with pg_dump's last words.
if [ "${1:-}" = backup ]; then
  : "${SVC_BACKUP_HOST:?the address of the server}" "${SVC_BACKUP_URL:?where backups go}" "${SVC_BACKUP_TOKEN:?the backup credential}"
  err=$(mktemp)
  echo "svc-postgres: backing up $PGDATABASE at $SVC_BACKUP_HOST"
  set +e
  "$bin/pg_dump" --host="$SVC_BACKUP_HOST" --port=5432 --no-password --format=custom --dbname="$PGDATABASE" 2>"$err" |
    curl --silent --show-error --fail --upload-file - -H "Authorization: Bearer $SVC_BACKUP_TOKEN" -H 'Content-Type: application/octet-stream' "$SVC_BACKUP_URL" 2>>"$err"
  codes=("${PIPESTATUS[@]}")
  set -e
  if [ "${codes[0]}" = 0 ] && [ "${codes[1]}" = 0 ]; then echo; echo "svc-postgres: backup stored"; exit 0; fi
  cat "$err" >&2
  tail -c 2000 "$err" | curl --silent --show-error --max-time 30 --data-binary @- -H "Authorization: Bearer $SVC_BACKUP_TOKEN" -H 'Content-Type: text/plain' "$SVC_BACKUP_URL/failed" || true
  exit 1
fi
# A Database that starts as a copy of another (spec.branchOf, SVC_BRANCH_HOST its server's address):
# a physical copy of the running source server (pg_basebackup with its WAL, a fast checkpoint, live
# connections allowed) into the empty volume, once; the server then starts from it as a primary of
# its own. Same role and password as the source: the branch's credentials are the source's. Copied
# beside the data directory and moved into place whole, so that a copy cut short is made again
# rather than started from. No fsync here: the server's recovery syncs the data directory first.
# Done by this container rather than an init container of its own: one container start fewer is
# a tenth of a branch's time (docs/benchmarks.md).
if [ -n "${SVC_BRANCH_HOST:-}" ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  copy="$PGDATA.copying"
  rm -rf "$copy" && mkdir -p "$copy" && chmod 0700 "$copy"
  echo "svc-postgres: copying $SVC_BRANCH_HOST into $PGDATA"
  start=$(date +%s%N)
  "$bin/pg_basebackup" --host="$SVC_BRANCH_HOST" --port=5432 --username="$PGUSER" --no-password --pgdata="$copy" --wal-method=stream --checkpoint=fast --no-sync
  rm -rf "$PGDATA" && mv "$copy" "$PGDATA"
  echo "svc-postgres: copied $(du -sm "$PGDATA" | cut -f1) MB in $((($(date +%s%N) - start) / 1000000)) ms"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  # A Database restored from a backup (spec.restoreFrom): the server is made and loaded beside the
  # volume's data directory and moved into place only once the dump is in, so a restore that fails
  # leaves nothing a later start would take for a database.
  target=$PGDATA
  if [ -n "${SVC_RESTORE_URL:-}" ]; then PGDATA="$target.restoring"; rm -rf "$PGDATA"; fi
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
  if [ -n "${SVC_RESTORE_URL:-}" ]; then
    echo "svc-postgres: restoring from $SVC_RESTORE_URL"
    start=$(date +%s%N)
    "$bin/pg_ctl" --pgdata="$PGDATA" --wait --silent -o "-c listen_addresses='' -c unix_socket_directories=/tmp" start
    curl --silent --show-error --fail -H "Authorization: Bearer ${SVC_RESTORE_TOKEN:-}" "$SVC_RESTORE_URL" |
      "$bin/pg_restore" --host=/tmp --no-owner --no-privileges --exit-on-error --dbname="$PGDATABASE"
    "$bin/pg_ctl" --pgdata="$PGDATA" --wait --silent stop
    mv "$PGDATA" "$target" && PGDATA=$target
    echo "svc-postgres: restored in $((($(date +%s%N) - start) / 1000000)) ms"
  fi
fi
# Branches copy the server with the replication protocol (servers made before branches lack the line).
grep -q '^host replication all 0.0.0.0/0' "$PGDATA/pg_hba.conf" || printf 'host replication all 0.0.0.0/0 scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
# The kubelet's fsGroup pass may have opened the group bits again; PostgreSQL refuses to start so.
chmod 0700 "$PGDATA"
exec "$bin/postgres" -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/tmp -c password_encryption=scram-sha-256 "$@"
