#!/usr/bin/env bash
# go-ycsb — PingCAP's YCSB port, its `postgresql` driver (lib/pq, prepared
# statements) unmodified — against `ndpdb serve` and against PostgreSQL 15
# (scripts/postgres-baseline.sh), one after the other in one invocation:
# `go-ycsb load`, then `go-ycsb run` for workloads A, B, C and F.
#
#   scripts/go-ycsb.sh [--records 100000] [--operations 200000]
#                      [--threads 4] [--workloads a,b,c,f]
#
# go-ycsb v1.0.1 comes from the Go module proxy. `go install …@v1.0.1`
# refuses it (its go.mod has replace directives), so the module's source
# is downloaded with `go mod download` and built in a cache folder
# (~/.cache/ndpdb/go-ycsb-v1.0.1); Go comes from the distribution's
# packages if missing. Both systems run at their default isolation (READ
# COMMITTED) with synchronous commit; ndpdb with its default buffer pool
# (64 MiB), PostgreSQL with shared_buffers 64 MB. The workload files are
# go-ycsb's own (uniform request distribution, 10 fields of 100 bytes);
# only recordcount, operationcount and threadcount are set here. Prints
# one line per system and phase and a summary table; go-ycsb's own output
# goes to OUT (default a fresh folder under bench-results/).
set -euo pipefail
cd "$(dirname "$0")/.."

records=100000 operations=200000 threads=4 workloads=a,b,c,f
out="bench-results/go-ycsb-$(date +%s)"
version=v1.0.1
while [ $# -gt 0 ]; do
  case "$1" in
    --records) records=$2; shift 2 ;;
    --operations) operations=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --workloads) workloads=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --inner) inner=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/ndpdb/go-ycsb-$version"
bin="$cache/go-ycsb"

install_go_ycsb() {
  [ -x "$bin" ] && return
  if ! command -v go >/dev/null; then
    sudo_cmd=""
    [ "$(id -u)" -ne 0 ] && sudo_cmd=sudo
    $sudo_cmd apt-get update -q && $sudo_cmd apt-get install -y -q golang-go
  fi
  echo "building go-ycsb $version from the Go module proxy" >&2
  local src
  src=$(go mod download -json "github.com/pingcap/go-ycsb@$version" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  rm -rf "$cache" && mkdir -p "$cache/src"
  cp -r "$src/." "$cache/src" && chmod -R u+w "$cache/src"
  (cd "$cache/src" && go build -o "$bin" ./cmd/go-ycsb)
}

# "ops/s p50 p99" of one go-ycsb summary line (TOTAL, or the named op).
summary() {
  local file=$1 op=$2
  awk -v op="$op" '$1 == op && $2 == "-" {
      ops = ""; p50 = ""; p99 = ""
      for (i = 3; i <= NF; i++) {
        if ($i == "OPS:") ops = $(i + 1)
        if ($i == "50th(us):") p50 = $(i + 1)
        if ($i == "99th(us):") p99 = $(i + 1)
      }
      gsub(",", "", ops); gsub(",", "", p50); gsub(",", "", p99)
      line = ops " " p50 " " p99
    }
    END { print (line == "" ? "error - -" : line) }' "$file"
}

# One system: load, then every workload; "system phase ops p50 p99 errors".
run_one() {
  local system=$1 host=$2 port=$3 db=$4
  local props=(-p "pg.host=$host" -p "pg.port=$port" -p pg.user=postgres -p "pg.db=$db"
    -p pg.sslmode=disable -p "recordcount=$records" -p "operationcount=$operations"
    -p "threadcount=$threads" -p dropdata=true)
  local w="$cache/src/workloads"
  "$bin" load postgresql -P "$w/workloada" "${props[@]}" >"$out/$system-load.log" 2>&1 || true
  local errors
  errors=$(grep -c '_ERROR' "$out/$system-load.log" || true)
  echo "$system load $(summary "$out/$system-load.log" INSERT) $errors"
  echo "$system load: $(summary "$out/$system-load.log" INSERT) (ops/s p50 p99 µs), error lines $errors" >&2
  props=("${props[@]/dropdata=true/dropdata=false}")
  for wl in ${workloads//,/ }; do
    "$bin" run postgresql -P "$w/workload$wl" "${props[@]}" >"$out/$system-$wl.log" 2>&1 || true
    errors=$(grep -c '_ERROR' "$out/$system-$wl.log" || true)
    echo "$system $wl $(summary "$out/$system-$wl.log" TOTAL) $errors"
    echo "$system $wl: $(summary "$out/$system-$wl.log" TOTAL) (ops/s p50 p99 µs), error lines $errors" >&2
  done
}

install_go_ycsb
if [ -n "${inner:-}" ]; then
  # Inside scripts/postgres-baseline.sh: PostgreSQL's turn.
  pg_host=$(sed -n 's/.*host=\([^ ]*\).*/\1/p' <<<"$NDPDB_POSTGRES")
  pg_port=$(sed -n 's/.*port=\([^ ]*\).*/\1/p' <<<"$NDPDB_POSTGRES")
  pg_db=$(sed -n 's/.*dbname=\([^ ]*\).*/\1/p' <<<"$NDPDB_POSTGRES")
  run_one postgres "$pg_host" "$pg_port" "$pg_db"
  exit 0
fi

. scripts/lib/serve.sh
port=55434
start_ndpdb_server "$port" "$out/ndpdb-serve.log"
echo "go-ycsb $version: $records records, $operations operations, $threads threads" >&2
run_one ndpdb 127.0.0.1 "$port" postgres >"$out/ndpdb.txt"
stop_ndpdb_server
bash scripts/postgres-baseline.sh -- bash "$0" --inner 1 --records "$records" \
  --operations "$operations" --threads "$threads" --workloads "$workloads" --out "$out" \
  >"$out/postgres.txt"

echo
printf '%-6s %12s %9s %9s %6s %12s %9s %9s %6s %8s\n' phase "ndpdb ops/s" "p50 µs" "p99 µs" errors \
  "PG ops/s" "p50 µs" "p99 µs" errors "ndpdb/PG"
for phase in load ${workloads//,/ }; do
  read -r _ _ nops np50 np99 nerr < <(grep " $phase " "$out/ndpdb.txt")
  read -r _ _ pops pp50 pp99 perr < <(grep " $phase " "$out/postgres.txt")
  ratio=$(awk -v n="$nops" -v p="$pops" 'BEGIN { if (p + 0 > 0) printf "%.2f", n / p; else print "?" }')
  printf '%-6s %12s %9s %9s %6s %12s %9s %9s %6s %8s\n' "$phase" "$nops" "$np50" "$np99" "$nerr" \
    "$pops" "$pp50" "$pp99" "$perr" "$ratio"
done
echo "logs: $out"
