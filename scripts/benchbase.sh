#!/usr/bin/env bash
# BenchBase (OLTP-Bench's successor, a Java/JDBC driver) — unmodified —
# against `ndpdb serve` and against PostgreSQL 15
# (scripts/postgres-baseline.sh), one after the other, with BenchBase's
# own sample configs for PostgreSQL (only the address, the terminals,
# the scale factor, the time and the isolation level changed).
#
#   scripts/benchbase.sh --benchbase DIR [--benchmarks tpcc,ycsb,tpcc+chbenchmark]
#                        [--isolation REPEATABLE_READ,SERIALIZABLE]
#                        [--terminals 4] [--scale 2] [--seconds 30] [--out DIR]
#
# DIR is an unpacked BenchBase build for PostgreSQL (`mvn -P postgres
# package`, then target/benchbase-postgres.tgz unpacked): it holds
# benchbase.jar and config/postgres/. BenchBase is on no package registry,
# so it is not installed here. Each run creates the schema, loads it and
# runs the mix; per system, benchmark and isolation level one line:
# throughput, goodput, transactions completed, aborted (TPC-C's 1 %
# NewOrder rollbacks), retried (40001 / 40P01), unexpected SQL errors.
# BenchBase's own output goes to OUT (default a fresh folder under
# bench-results/).
#
# BenchBase waits for every terminal's statement to end after the
# measured time. On PostgreSQL a CH-benCHmark query planned before the
# freshly loaded tables were analyzed can run for hours (Q3 as nested
# loops was seen past an hour): statements still running --grace
# seconds (default 300) after the measured time are cancelled
# (pg_cancel_backend) and the line says how many.
set -euo pipefail
cd "$(dirname "$0")/.."

benchbase="" benchmarks=tpcc,ycsb,tpcc+chbenchmark isolation=REPEATABLE_READ,SERIALIZABLE
terminals=4 scale=2 seconds=30 grace=300 out="bench-results/benchbase-$(date +%s)" port=55433
while [ $# -gt 0 ]; do
  case "$1" in
    --benchbase) benchbase=$2; shift 2 ;;
    --benchmarks) benchmarks=$2; shift 2 ;;
    --isolation) isolation=$2; shift 2 ;;
    --terminals) terminals=$2; shift 2 ;;
    --scale) scale=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --grace) grace=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --inner) inner=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -f "$benchbase/benchbase.jar" ] || { echo "no benchbase.jar in '$benchbase' (--benchbase DIR)" >&2; exit 2; }
benchbase=$(cd "$benchbase" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
java=${JAVA:-java}

# A config for BENCH at ISO against URL_BASE (jdbc:postgresql://HOST:PORT).
config() {
  local bench=$1 iso=$2 url_base=$3 file=$4
  local sample=$bench
  [ "$bench" = "tpcc+chbenchmark" ] && sample=chbenchmark
  sed -e "s#jdbc:postgresql://localhost:5432/benchbase?#$url_base/benchbase?#" \
      -e "s#<isolation>[A-Z_]*</isolation>#<isolation>TRANSACTION_$iso</isolation>#" \
      -e "s#<terminals>1</terminals>#<terminals>$terminals</terminals>#" \
      -e "s#<scalefactor>1</scalefactor>#<scalefactor>$scale</scalefactor>#" \
      -e "s#<time>60</time>#<time>$seconds</time>#" \
      "$benchbase/config/postgres/sample_${sample}_config.xml" > "$file"
}

# Counts of one histogram section ("Completed Transactions:" …) of a log.
section() {
  awk -v want="$2" '
    index($0, want) { on = 1; next }
    on && /^\s*$/ { exit }
    on && /\[ *[0-9]+\]/ { gsub(/.*\[ */, ""); gsub(/\].*/, ""); n += $0 }
    END { print n + 0 }' "$1"
}

# PostgreSQL only: cancels the statements still running GRACE seconds
# after LOG shows the measured time ended; prints how many it cancelled.
watchdog() {
  local log=$1 cancelled=0 since=""
  while sleep 5; do
    if [ -z "$since" ] && grep -q "TERMINATE" "$log" 2>/dev/null; then since=$(date +%s); fi
    if [ -n "$since" ] && [ $(( $(date +%s) - since )) -ge "$grace" ]; then
      n=$(psql "$NDPDB_POSTGRES" -XAtc "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity
            WHERE datname = 'benchbase' AND state = 'active' AND pid <> pg_backend_pid()" 2>/dev/null || echo 0)
      cancelled=$(( cancelled + n ))
      since=$(date +%s)
    fi
    [ -f "$log.done" ] && break
  done
  echo "$cancelled"
}

# One system: each benchmark at each isolation level.
run_one() {
  local system=$1 url_base=$2
  for bench in ${benchmarks//,/ }; do
    for iso in ${isolation//,/ }; do
      local tag="$system-$bench-$iso" cfg="$out/$system-$bench-$iso.xml"
      config "$bench" "$iso" "$url_base" "$cfg"
      rm -f "$out/$tag.log.done"
      local wd=""
      if [ "$system" = postgres ]; then
        watchdog "$out/$tag.log" >"$out/$tag.cancelled" &
        wd=$!
      fi
      (cd "$benchbase" && "$java" -jar benchbase.jar -b "${bench/+/,}" -c "$cfg" \
         --create=true --load=true --execute=true -d "$out/$tag") >"$out/$tag.log" 2>&1 || true
      touch "$out/$tag.log.done"
      [ -n "$wd" ] && wait "$wd"
      local cancelled=0
      [ -s "$out/$tag.cancelled" ] && cancelled=$(cat "$out/$tag.cancelled")
      local line tput gput
      line=$(grep -m1 "Rate limited reqs/s" "$out/$tag.log" || true)
      tput=$(sed -n 's/.*= \([0-9.]*\) requests\/sec (throughput).*/\1/p' <<<"$line")
      gput=$(sed -n 's/.*, \([0-9.]*\) requests\/sec (goodput).*/\1/p' <<<"$line")
      echo "$system $bench $iso ${tput:-error} ${gput:-error}" \
        "$(section "$out/$tag.log" "Completed Transactions:")" \
        "$(section "$out/$tag.log" "Aborted Transactions:")" \
        "$(section "$out/$tag.log" "Rejected Transactions (Server Retry):")" \
        "$(section "$out/$tag.log" "Unexpected SQL Errors:")" "$cancelled"
    done
  done
}

if [ -n "${inner:-}" ]; then
  # Inside scripts/postgres-baseline.sh: PostgreSQL's turn.
  host=$(sed -n 's/.*host=\([^ ]*\).*/\1/p' <<<"$NDPDB_POSTGRES")
  pgport=$(sed -n 's/.*port=\([0-9]*\).*/\1/p' <<<"$NDPDB_POSTGRES")
  psql "$NDPDB_POSTGRES" -qc "CREATE DATABASE benchbase" >/dev/null 2>&1 || true
  psql "$NDPDB_POSTGRES" -qc "CREATE USER admin PASSWORD 'password' SUPERUSER" >/dev/null 2>&1 || true
  run_one postgres "jdbc:postgresql://$host:$pgport"
  exit 0
fi

cargo build --release -q -p ndpdb
results="$out/results.txt"
: >"$results"
db=$(mktemp -d)
./target/release/ndpdb serve --db "$db/db" --listen "127.0.0.1:$port" >"$out/ndpdb-serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$db"' EXIT
for _ in $(seq 100); do
  psql -h 127.0.0.1 -p "$port" -U postgres -d postgres -Xqc "SELECT 1" >/dev/null 2>&1 && break
  sleep 0.1
done
run_one ndpdb "jdbc:postgresql://127.0.0.1:$port" | tee -a "$results"
kill $server; wait $server 2>/dev/null || true
scripts/postgres-baseline.sh -- "$0" --benchbase "$benchbase" --benchmarks "$benchmarks" \
  --isolation "$isolation" --terminals "$terminals" --scale "$scale" --seconds "$seconds" \
  --out "$out" --inner postgres | tee -a "$results"

echo
echo "system | benchmark | isolation | requests/s | goodput/s | completed | aborted | retried | unexpected errors | cancelled after the run"
echo "---|---|---|---:|---:|---:|---:|---:|---:|---:"
awk '{ printf "%s | %s | %s | %.1f | %.1f | %s | %s | %s | %s | %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }' "$results"
