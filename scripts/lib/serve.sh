# Sourced by the scripts that run a PostgreSQL client against ndpdb and
# PostgreSQL side by side (pgbench.sh, go-ycsb.sh).
#
#   start_ndpdb_server PORT LOG   builds ndpdb, starts `ndpdb serve` on a
#                                 fresh database in a temporary folder,
#                                 waits until it accepts connections; sets
#                                 $server and an EXIT trap that stops it
#                                 and deletes the folder
#   stop_ndpdb_server             stops it now (PostgreSQL's turn next)

start_ndpdb_server() {
  local port=$1 log=$2
  command -v pg_isready >/dev/null || bash scripts/postgres-baseline.sh -- true
  cargo build --release -q --workspace --bins
  server_dir=$(mktemp -d)
  ./target/release/ndpdb serve --db "$server_dir/db" --listen "127.0.0.1:$port" >"$log" 2>&1 &
  server=$!
  trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true; rm -rf "$server_dir"' EXIT
  for _ in $(seq 100); do
    pg_isready -q -h 127.0.0.1 -p "$port" && return 0
    sleep 0.1
  done
  echo "ndpdb serve did not start on port $port (see $log)" >&2
  return 1
}

stop_ndpdb_server() {
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
}
