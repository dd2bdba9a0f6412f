#!/usr/bin/env bash
# pgbench — PostgreSQL's own client, unmodified — against `ndpdb serve`
# and against PostgreSQL 15 (scripts/postgres-baseline.sh), one after the
# other in one invocation: `pgbench -i -s SCALE`, then the built-in
# TPC-B-like script for SECONDS in each protocol mode.
#
#   scripts/pgbench.sh [--scale 10] [--clients 4] [--threads 2]
#                      [--seconds 60] [--modes simple,extended,prepared]
#
# Both sides run at their default isolation level (READ COMMITTED) with
# synchronous commit; ndpdb with its default buffer pool (64 MiB), the
# PostgreSQL baseline with shared_buffers 64 MB. Prints one line per
# system and mode (tps, failed transactions, average latency) and a
# summary table; pgbench's own output goes to OUT (default a fresh
# folder under bench-results/).
set -euo pipefail
cd "$(dirname "$0")/.."

scale=10 clients=4 threads=2 seconds=60 modes=simple,extended,prepared
out="bench-results/pgbench-$(date +%s)"
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) scale=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --inner) inner=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"

# One system: initialise, then every mode; "system mode tps failed latency".
run_one() {
  local system=$1 conn=$2
  local t0 t1
  t0=$(date +%s.%N)
  pgbench -i -s "$scale" -q "$conn" >"$out/$system-init.log" 2>&1
  t1=$(date +%s.%N)
  echo "$system init $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s" >&2
  for mode in ${modes//,/ }; do
    pgbench -c "$clients" -j "$threads" -T "$seconds" -M "$mode" "$conn" \
      >"$out/$system-$mode.log" 2>&1 || true
    local tps failed lat
    tps=$(awk '/^tps = / { print $3 }' "$out/$system-$mode.log")
    failed=$(awk '/^number of failed transactions:/ { print $5 }' "$out/$system-$mode.log")
    lat=$(awk '/^latency average = / { print $4 }' "$out/$system-$mode.log")
    echo "$system $mode ${tps:-error} ${failed:-?} ${lat:-?}"
    echo "$system $mode: tps ${tps:-error}, failed ${failed:-?}, latency ${lat:-?} ms" >&2
  done
}

if [ -n "${inner:-}" ]; then
  # Inside scripts/postgres-baseline.sh: PostgreSQL's turn.
  run_one postgres "$NDPDB_POSTGRES"
  exit 0
fi

command -v pgbench >/dev/null || bash scripts/postgres-baseline.sh -- true
. scripts/lib/serve.sh
port=55433
start_ndpdb_server "$port" "$out/ndpdb-serve.log"
echo "pgbench -s $scale, -c $clients -j $threads, ${seconds} s per mode" >&2
run_one ndpdb "host=127.0.0.1 port=$port user=postgres dbname=postgres" >"$out/ndpdb.txt"
stop_ndpdb_server
bash scripts/postgres-baseline.sh -- bash "$0" --inner 1 --scale "$scale" --clients "$clients" \
  --threads "$threads" --seconds "$seconds" --modes "$modes" --out "$out" >"$out/postgres.txt"

echo
printf '%-9s %12s %8s %16s %8s %14s\n' mode "ndpdb tps" failed "PostgreSQL tps" failed "ndpdb / PG"
for mode in ${modes//,/ }; do
  read -r _ _ ntps nfail _ < <(grep " $mode " "$out/ndpdb.txt")
  read -r _ _ ptps pfail _ < <(grep " $mode " "$out/postgres.txt")
  ratio=$(awk -v n="$ntps" -v p="$ptps" 'BEGIN { if (p + 0 > 0) printf "%.2f", n / p; else print "?" }')
  printf '%-9s %12s %8s %16s %8s %14s\n' "$mode" "$ntps" "$nfail" "$ptps" "$pfail" "$ratio"
done
echo "logs: $out"
