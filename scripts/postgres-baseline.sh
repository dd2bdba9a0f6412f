#!/usr/bin/env bash
# PostgreSQL 15 as the benchmark baseline: a throwaway cluster in a
# temporary directory on a local port, run as a non-root user, with the
# configuration docs/BENCHMARKS.md records; torn down afterwards.
#
#   scripts/postgres-baseline.sh [--port N] [--shared-buffers-mib N] -- COMMAND...
#
# runs COMMAND with NDPDB_POSTGRES set to the cluster's connection string
# (`ndpdb bench … --target postgres` reads it), then stops the cluster and
# deletes its directory, also when COMMAND fails or is interrupted.
#
#   scripts/postgres-baseline.sh --print-config
#
# prints the settings applied, for the benchmark report.
#
# PostgreSQL 15 is installed from the distribution's packages if missing
# (Debian/Ubuntu: postgresql-15).
set -euo pipefail

PORT=55432
SHARED_BUFFERS_MIB=64   # ndpdb's default buffer pool (--buffer-pool-mib)

config() {
  cat <<EOF
shared_buffers = ${SHARED_BUFFERS_MIB}MB
synchronous_commit = on
fsync = on
full_page_writes = on
wal_level = replica
max_connections = 300
listen_addresses = '127.0.0.1'
port = ${PORT}
unix_socket_directories = '${RUN_DIR:-/tmp}'
# parallel query: PostgreSQL's defaults (max_parallel_workers_per_gather = 2,
# max_worker_processes = 8, max_parallel_workers = 8)
logging_collector = off
log_min_messages = warning
EOF
}

while [ $# -gt 0 ]; do
  case "$1" in
    --port) PORT="$2"; shift 2 ;;
    --shared-buffers-mib) SHARED_BUFFERS_MIB="$2"; shift 2 ;;
    --print-config) config; exit 0 ;;
    --) shift; break ;;
    *) echo "usage: $0 [--port N] [--shared-buffers-mib N] -- COMMAND..." >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: $0 [--port N] [--shared-buffers-mib N] -- COMMAND..." >&2; exit 2; }

PGBIN=/usr/lib/postgresql/15/bin
if [ ! -x "$PGBIN/initdb" ]; then
  echo "installing PostgreSQL 15 (postgresql-15) ..." >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >/dev/null
fi

# PostgreSQL refuses to run as root: use the packages' `postgres` user then.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

RUN_DIR=$(mktemp -d /tmp/ndpdb-pg-baseline.XXXXXX)
chmod 755 "$RUN_DIR"
[ "$(id -u)" -eq 0 ] && chown postgres: "$RUN_DIR"
DATA="$RUN_DIR/data"

cleanup() {
  as_pg "$PGBIN/pg_ctl" -D "$DATA" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$RUN_DIR"
}
trap cleanup EXIT INT TERM

as_pg "$PGBIN/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 --locale=C >/dev/null
# The port is asked for, but any client socket of this machine may hold it
# for a moment (it lies in the kernel's ephemeral range): when PostgreSQL
# cannot bind it, the next ports are tried; any other failure prints the
# server's log and stops.
as_pg cp "$DATA/postgresql.conf" "$RUN_DIR/postgresql.conf.initdb"
started=""
for attempt in 1 2 3 4 5 6 7 8; do
  as_pg cp "$RUN_DIR/postgresql.conf.initdb" "$DATA/postgresql.conf"
  config | as_pg tee -a "$DATA/postgresql.conf" >/dev/null
  : > "$RUN_DIR/server.log"; [ "$(id -u)" -eq 0 ] && chown postgres: "$RUN_DIR/server.log"
  if as_pg "$PGBIN/pg_ctl" -D "$DATA" -l "$RUN_DIR/server.log" -w start >/dev/null; then
    started=1
    break
  fi
  if grep -qE "could not bind|Address already in use|could not create any TCP/IP sockets" "$RUN_DIR/server.log"; then
    echo "port $PORT is taken; trying $((PORT + 1))" >&2
    PORT=$((PORT + 1))
    continue
  fi
  break
done
if [ -z "$started" ]; then
  echo "PostgreSQL did not start; its log:" >&2
  tail -n 40 "$RUN_DIR/server.log" >&2 || true
  exit 1
fi
as_pg "$PGBIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -qc "CREATE DATABASE bench" >/dev/null

export NDPDB_POSTGRES="host=127.0.0.1 port=${PORT} user=postgres dbname=bench"
# pg_ctl for this cluster, for benchmarks that crash and restart it
# (`ndpdb bench recovery`): `$NDPDB_POSTGRES_CTL stop -m immediate`, `… start -w`.
CTL="$RUN_DIR/pg_ctl"
cat > "$CTL" <<EOF
#!/bin/sh
cmd=\$1; shift
if [ "\$(id -u)" -eq 0 ]; then run="runuser -u postgres --"; else run=""; fi
if [ "\$cmd" = start ]; then exec \$run "$PGBIN/pg_ctl" -D "$DATA" -l "$RUN_DIR/server.log" start "\$@"; fi
exec \$run "$PGBIN/pg_ctl" -D "$DATA" "\$cmd" "\$@"
EOF
chmod 755 "$CTL"
export NDPDB_POSTGRES_CTL="$CTL"
echo "PostgreSQL $(as_pg "$PGBIN/postgres" --version | awk '{print $3}') on port $PORT ($DATA), shared_buffers ${SHARED_BUFFERS_MIB}MB" >&2
"$@"
