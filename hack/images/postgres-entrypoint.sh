#!/bin/bash
# PID 1 of the svc/postgres image (a Database's server, controllers/database/): on the first start
# of an empty volume, a new cluster (or a branch's copy of its source, or a restored backup); then
# the server itself, in the foreground, listening on every address (the Database's NetworkPolicy
# says who may connect). Also `backup`, a backup Job's dump, and `restore`, a restore Job's load. The roles
# (docs/decisions/0017-databases.md#roles-the-tenant-is-not-a-superuser):
#   svc_admin       initdb's bootstrap superuser: NOLOGIN and no password. Only this script acts as
#                   it, in single-user mode (`postgres --single`) before the server listens.
#   $PGUSER         the tenant (the credentials Secret's username): LOGIN CREATEDB, not a superuser
#                   (no COPY ... PROGRAM, no server files, no untrusted languages or extensions),
#                   owner of its database, so it dumps and restores it and creates trusted extensions.
#   svc_replicator  REPLICATION, for a branch to copy this server; replication connections only.
# Passwords come from the Secret at every start (the Secret is the truth): PGPASSWORD for the
# tenant, SVC_REPLICATION_PASSWORD for svc_replicator (none: no branch can copy this server).
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

# `restore`: a restore Job into a database served by another (a CloudNativePG Cluster, bootstrapped
# empty with the tenant as its owner): the dump at SVC_RESTORE_URL (an artifact credential for it
# alone) loaded into the server at SVC_RESTORE_HOST as the tenant, in one transaction: a restore
# that fails leaves the database as empty as it was, and the Job's next try starts clean.
if [ "${1:-}" = restore ]; then
  : "${SVC_RESTORE_HOST:?the address of the server}" "${SVC_RESTORE_URL:?where the dump is}" "${SVC_RESTORE_TOKEN:?the artifact credential}"
  # A try whose load committed but whose pod went before it said so: the database, empty until the
  # load (its app is let in only after), holds the dump's objects; loading again would fail on them.
  loaded=$("$bin/psql" --host="$SVC_RESTORE_HOST" --port=5432 --no-password --no-psqlrc --tuples-only --no-align --dbname="$PGDATABASE" \
    -c "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'")
  if [ "$loaded" != 0 ]; then echo "svc-postgres: $PGDATABASE at $SVC_RESTORE_HOST holds $loaded relations already: an earlier try loaded the dump"; exit 0; fi
  echo "svc-postgres: restoring $SVC_RESTORE_URL into $PGDATABASE at $SVC_RESTORE_HOST"
  start=$(date +%s%N)
  curl --silent --show-error --fail -H "Authorization: Bearer $SVC_RESTORE_TOKEN" "$SVC_RESTORE_URL" |
    "$bin/pg_restore" --host="$SVC_RESTORE_HOST" --port=5432 --no-password --no-owner --no-privileges --exit-on-error --single-transaction --dbname="$PGDATABASE"
  echo "svc-postgres: restored in $((($(date +%s%N) - start) / 1000000)) ms"
  exit 0
fi

case "$PGUSER" in
  svc_admin | svc_replicator | pg_*) echo "svc-postgres: the username $PGUSER is the platform's or PostgreSQL's own; the credentials Secret must name another" >&2; exit 1 ;;
esac
# A data directory with this file was made with the roles above; one without it (made before them)
# has the tenant as its bootstrap superuser, and is converted (below).
marker=svc-roles

lit() { printf "'%s'" "${1//\'/\'\'}"; }
ident() { printf '"%s"' "${1//\"/\"\"}"; }
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# single DIR: stdin's statements (each ending with `;` and a blank line) as the bootstrap superuser,
# the server not listening. Fails on the first error (single-user mode itself exits 0 on one); the
# statements carry passwords, so they are never logged (log_min_error_statement).
single() {
  local err
  err=$(mktemp)
  "$bin/postgres" --single -j -D "$1" -c log_min_error_statement=panic -c listen_addresses='' postgres >/dev/null 2>"$err" || true
  if grep -qE '(ERROR|FATAL|PANIC): ' "$err"; then cat "$err" >&2; rm -f "$err"; return 1; fi
  rm -f "$err"
}

# The tenant's password and attributes, and svc_replicator's password, from the environment.
password_sql() {
  printf 'ALTER ROLE %s LOGIN CREATEDB NOSUPERUSER NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD %s;\n\n' "$(ident "$PGUSER")" "$(lit "$PGPASSWORD")"
  if [ -n "${SVC_REPLICATION_PASSWORD:-}" ]; then
    printf 'ALTER ROLE svc_replicator PASSWORD %s;\n\n' "$(lit "$SVC_REPLICATION_PASSWORD")"
  else
    printf 'ALTER ROLE svc_replicator PASSWORD NULL;\n\n'
  fi
}

# init DIR: a new cluster there: the roles above, the tenant's database owned by the tenant (and
# `postgres` too: the server is the tenant's), the passwords of the environment.
init_cluster() {
  local dir=$1 pwfile
  rm -rf "$dir" && mkdir -p "$dir" && chmod 0700 "$dir"
  pwfile=$(mktemp)
  # initdb wants a password for SCRAM; svc_admin's is dropped at once, and never known.
  head -c 32 /dev/urandom | base64 >"$pwfile"
  "$bin/initdb" --pgdata="$dir" --username=svc_admin --pwfile="$pwfile" --auth=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  {
    printf 'ALTER ROLE svc_admin NOLOGIN PASSWORD NULL;\n\n'
    printf 'CREATE ROLE %s LOGIN;\n\n' "$(ident "$PGUSER")"
    printf 'CREATE ROLE svc_replicator LOGIN REPLICATION;\n\n'
    password_sql
    printf 'ALTER DATABASE postgres OWNER TO %s;\n\n' "$(ident "$PGUSER")"
    if [ "$PGDATABASE" != postgres ]; then printf 'CREATE DATABASE %s OWNER %s;\n\n' "$(ident "$PGDATABASE")" "$(ident "$PGUSER")"; fi
  } | single "$dir"
  touch "$dir/$marker"
}

# pg_hba.conf, written whole at every start: the tenant (and any role it makes) from anywhere the
# policy admits, svc_replicator only for replication, svc_admin never; this script's own sessions
# over the pod's socket, with a password too.
write_hba() {
  cat >"$1/pg_hba.conf" <<'EOF'
# Written by svc-postgres at every start (docs/decisions/0017-databases.md).
local all all scram-sha-256
host replication svc_replicator 0.0.0.0/0 scram-sha-256
host replication svc_replicator ::/0 scram-sha-256
host all svc_admin,svc_replicator 0.0.0.0/0 reject
host all svc_admin,svc_replicator ::/0 reject
host all all 0.0.0.0/0 scram-sha-256
host all all ::/0 scram-sha-256
EOF
}

# local DIR PORT [SETTINGS...]: a server on the pod's socket only (/tmp), for this script's work;
# the credentials this script holds are not in its environment.
start_local() {
  local dir=$1 port=$2
  shift 2
  env -u SVC_RESTORE_TOKEN -u SVC_BRANCH_PASSWORD -u SVC_REPLICATION_PASSWORD -u PGPASSWORD \
    "$bin/pg_ctl" --pgdata="$dir" --wait --silent -o "-c listen_addresses='' -c unix_socket_directories=/tmp -p $port $*" start
}
stop_local() { "$bin/pg_ctl" --pgdata="$1" --wait --silent --mode=fast stop 2>/dev/null || true; }

# A data directory made before the roles: the tenant is its bootstrap superuser, which cannot be
# demoted (PostgreSQL 16 refuses; 15 lets it go but leaves it owning the system catalogs) nor
# renamed. Its databases are dumped (as that superuser, over the pod's socket)
# and restored as the tenant into a new cluster made the way above, which then takes its place.
# Objects only a superuser may make (an untrusted extension) fail the conversion: the server then
# starts as it was, and says so.
convert() {
  local new="$PGDATA.converting" hba=/tmp/svc-convert-hba.conf start db
  start=$(date +%s%N)
  echo "svc-postgres: converting $PGDATA: its tenant role $PGUSER is the bootstrap superuser; moving its databases into a cluster where it is not"
  init_cluster "$new"
  write_hba "$new"
  printf 'local all all trust\n' >"$hba"
  start_local "$PGDATA" 5433 -c hba_file="$hba"
  start_local "$new" 5434
  "$bin/psql" --host=/tmp --port=5433 --username="$PGUSER" --dbname=postgres --no-psqlrc --quiet --tuples-only --no-align \
    -c 'SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate ORDER BY datname' >/tmp/svc-convert-dbs
  while IFS= read -r db; do
    if [ "$db" != postgres ] && [ "$db" != "$PGDATABASE" ]; then
      "$bin/psql" --host=/tmp --port=5434 --dbname=postgres --no-psqlrc --quiet -v ON_ERROR_STOP=1 -c "CREATE DATABASE $(ident "$db")"
    fi
    "$bin/pg_dump" --host=/tmp --port=5433 --username="$PGUSER" --format=custom --dbname="$db" |
      "$bin/pg_restore" --host=/tmp --port=5434 --no-owner --no-privileges --exit-on-error --dbname="$db"
  done </tmp/svc-convert-dbs
  stop_local "$new"
  stop_local "$PGDATA"
  rm -f "$hba" /tmp/svc-convert-dbs
  # In place: the old one aside first, so that a start cut short here finds one of the two whole.
  mv "$PGDATA" "$PGDATA.legacy" && mv "$new" "$PGDATA" && rm -rf "$PGDATA.legacy"
  echo "svc-postgres: converted in $(ms_since "$start") ms"
}

# A conversion cut short: the old directory is the one to start from (and to convert again).
if [ -d "$PGDATA.legacy" ]; then
  if [ -f "$PGDATA/$marker" ]; then rm -rf "$PGDATA.legacy"; else rm -rf "$PGDATA" && mv "$PGDATA.legacy" "$PGDATA"; fi
fi

# A Database that starts as a copy of another (spec.branchOf, SVC_BRANCH_HOST its server's address):
# a physical copy of the running source server (pg_basebackup with its WAL, a fast checkpoint, live
# connections allowed) into the empty volume, once, as the source's svc_replicator (its password
# SVC_BRANCH_PASSWORD, from the source's Secret); the server then starts from it as a primary of its
# own, with the branch's own passwords (set below, before it listens: the copy holds the source's).
# Copied beside the data directory and moved into place whole, so that a copy cut short is made
# again rather than started from. No fsync here: the server's recovery syncs the data directory
# first. Done by this container rather than an init container of its own: one container start fewer
# is a tenth of a branch's time (docs/benchmarks.md).
fresh=
if [ -n "${SVC_BRANCH_HOST:-}" ] && [ -z "${SVC_BRANCH_LOGICAL:-}" ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${SVC_BRANCH_PASSWORD:?the source's replication password (its Secret's replication-password)}"
  copy="$PGDATA.copying"
  rm -rf "$copy" && mkdir -p "$copy" && chmod 0700 "$copy"
  echo "svc-postgres: copying $SVC_BRANCH_HOST into $PGDATA"
  start=$(date +%s%N)
  PGPASSWORD=$SVC_BRANCH_PASSWORD "$bin/pg_basebackup" --host="$SVC_BRANCH_HOST" --port=5432 --username=svc_replicator --no-password --pgdata="$copy" --wal-method=stream --checkpoint=fast --no-sync
  rm -rf "$PGDATA" && mv "$copy" "$PGDATA"
  echo "svc-postgres: copied $(du -sm "$PGDATA" | cut -f1) MB in $(ms_since "$start") ms"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  # Made beside the volume's data directory and moved into place only once whole. A Database
  # restored from a backup (spec.restoreFrom) is loaded there first, as the tenant (not a
  # superuser: whatever the dump holds runs with the tenant's rights), so a restore that fails
  # leaves nothing a later start would take for a database.
  made="$PGDATA.initializing"
  echo "svc-postgres: initializing $PGDATA for database $PGDATABASE"
  init_cluster "$made"
  write_hba "$made"
  if [ -n "${SVC_RESTORE_URL:-}" ]; then
    echo "svc-postgres: restoring from $SVC_RESTORE_URL"
    start=$(date +%s%N)
    start_local "$made" 5433
    curl --silent --show-error --fail -H "Authorization: Bearer ${SVC_RESTORE_TOKEN:-}" "$SVC_RESTORE_URL" |
      "$bin/pg_restore" --host=/tmp --port=5433 --no-owner --no-privileges --exit-on-error --dbname="$PGDATABASE"
    stop_local "$made"
    echo "svc-postgres: restored in $(ms_since "$start") ms"
  elif [ -n "${SVC_BRANCH_HOST:-}" ]; then
    # A branch of a source served by another (a CloudNativePG Cluster, SVC_BRANCH_LOGICAL): no
    # replication role of ours there, so a logical copy, the source's tenant dumping the database it
    # owns (SVC_BRANCH_PASSWORD its password, from the source's Secret) into the new cluster as this
    # branch's tenant, in one transaction.
    : "${SVC_BRANCH_PASSWORD:?the source's tenant password (its Secret's password)}"
    echo "svc-postgres: copying $PGDATABASE from $SVC_BRANCH_HOST (logical)"
    start=$(date +%s%N)
    start_local "$made" 5433
    PGPASSWORD=$SVC_BRANCH_PASSWORD "$bin/pg_dump" --host="$SVC_BRANCH_HOST" --port=5432 --no-password --format=custom --dbname="$PGDATABASE" |
      "$bin/pg_restore" --host=/tmp --port=5433 --no-owner --no-privileges --exit-on-error --single-transaction --dbname="$PGDATABASE"
    stop_local "$made"
    echo "svc-postgres: copied in $(ms_since "$start") ms"
  fi
  rm -rf "$PGDATA" && mv "$made" "$PGDATA"
  fresh=1
elif [ ! -f "$PGDATA/$marker" ]; then
  set +e
  (set -e; convert)
  converted=$?
  set -e
  if [ "$converted" != 0 ]; then
    stop_local "$PGDATA.converting"
    stop_local "$PGDATA"
    rm -rf "$PGDATA.converting"
    # A branch is never left a superuser: it stays down, saying why.
    if [ -n "${SVC_BRANCH_HOST:-}" ]; then echo "svc-postgres: the conversion failed; a branch does not start with its tenant a superuser" >&2; exit 1; fi
    echo "svc-postgres: WARNING: the conversion failed (above); starting as before: the tenant role $PGUSER is still this server's superuser, and no branch can copy it" >&2
  fi
fi
write_hba "$PGDATA"
# The passwords of the Secret (a branch's copy holds its source's), before the server listens.
if [ -f "$PGDATA/$marker" ] && [ -z "$fresh" ]; then password_sql | single "$PGDATA"; fi
# The kubelet's fsGroup pass may have opened the group bits again; PostgreSQL refuses to start so.
chmod 0700 "$PGDATA"
# What the server does not need stays out of its environment.
unset PGPASSWORD SVC_REPLICATION_PASSWORD SVC_BRANCH_PASSWORD SVC_RESTORE_TOKEN
exec "$bin/postgres" -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/tmp -c password_encryption=scram-sha-256 "$@"
