#!/usr/bin/env bash
# A Ceph RADOS cluster on loopback for ndpdb's RADOS device tests and
# benchmarks: 1 monitor, 1 manager, 3 OSDs on BlueStore over sparse files,
# no authentication, every daemon started by hand (no systemd).
#
#   scripts/ceph-test-cluster.sh start DIR   installs Debian's Ceph packages
#                                            when missing, starts the
#                                            cluster, creates the pool
#                                            `ndpdb` (3 replicas, min_size
#                                            2) and prints CEPH_CONF=DIR/ceph.conf
#   scripts/ceph-test-cluster.sh install DIR only the packages (the object
#                                            class builds against their headers)
#   scripts/ceph-test-cluster.sh stop DIR    stops every daemon by its pid
#                                            file DIR/run/$name.pid
#   scripts/ceph-test-cluster.sh status DIR  `ceph -s` against it
#   scripts/ceph-test-cluster.sh start-osd DIR N   starts osd.N again (a test
#                                            killed it) and waits for health
#
#   DIR/ceph.conf        the cluster's config (clients read it too)
#   DIR/run/NAME.pid     one per daemon: mon.a, mgr.x, osd.0 … osd.2
#   DIR/run/NAME.asok    admin sockets
#   DIR/log/NAME.log     daemon logs
#   DIR/mon/, DIR/mgr/, DIR/osd/N/   daemon data (osd/N/block: a sparse file)
#   DIR/classes/         object classes the OSDs load: Debian's, linked,
#                        and ndpdb's own (libcls_ndp.so from $NDPDB_CLS_DIR,
#                        default target/release: cargo build --release -p ndpdb-cls)
#
# Replicas share the host (`osd crush chooseleaf type = 0`). OSDs load
# classes on first call, but only from what DIR/classes held when they
# started: a class built later needs a restart, or `install-classes` and
# a new method version.
#
# Environment: CEPH_MON_PORT (default: a free port), CEPH_OSDS (default 3),
# CEPH_OSD_BLOCK_GIB (sparse block file size, default 8).
set -euo pipefail

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || {
  echo "usage: $0 install|start|stop|status|install-classes|start-osd DIR [N]" >&2
  exit 2
}
root="$(cd "$(dirname "$0")/.." && pwd)"
osds=${CEPH_OSDS:-3}

apt_install() {
  command -v apt-get >/dev/null 2>&1 || { echo "ceph-test-cluster: need $* and there is no apt-get here" >&2; return 1; }
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1 || {
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  }
}

# Everything the cluster and ndpdb's RADOS code need: the daemons, the
# client tools, librados (loaded by ndpdb at run time) and the headers
# the object class builds against.
install_packages() {
  if ! command -v ceph-osd >/dev/null 2>&1 || ! command -v ceph-mon >/dev/null 2>&1 \
    || ! command -v ceph-mgr >/dev/null 2>&1 || ! command -v rados >/dev/null 2>&1 \
    || [ ! -f /usr/include/rados/objclass.h ] || [ ! -f /usr/include/rados/librados.h ]; then
    echo "ceph-test-cluster: installing Debian's Ceph packages" >&2
    apt_install ceph-mon ceph-osd ceph-mgr ceph-common librados-dev rados-objclass-dev libradospp-dev
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Debian's classes (the OSD needs cls_lock and friends for its own
# pools' features) and ndpdb's, into DIR/classes.
install_classes() {
  mkdir -p "$dir/classes"
  local sys=/usr/lib/x86_64-linux-gnu/rados-classes
  [ -d "$sys" ] || sys=$(dirname "$(dpkg -L ceph-osd 2>/dev/null | grep 'rados-classes/libcls_lock.so$' | head -1)")
  for f in "$sys"/libcls_*.so; do
    [ -e "$f" ] && ln -sf "$f" "$dir/classes/"
  done
  local own=${NDPDB_CLS_DIR:-${CARGO_TARGET_DIR:-$root/target}/release}
  if [ -e "$own/libcls_ndp.so" ]; then
    cp -f "$own/libcls_ndp.so" "$dir/classes/"
  else
    echo "ceph-test-cluster: no $own/libcls_ndp.so (cargo build --release -p ndpdb-cls): the OSDs run without class ndp" >&2
  fi
}

wait_for() { # SECONDS WHAT COMMAND…
  local limit=$1 what=$2
  shift 2
  local t0=$SECONDS
  until "$@" >/dev/null 2>&1; do
    if [ $((SECONDS - t0)) -ge "$limit" ]; then
      echo "ceph-test-cluster: $what did not happen within ${limit} s (logs in $dir/log)" >&2
      return 1
    fi
    sleep 0.2
  done
}

ceph_() { ceph -c "$dir/ceph.conf" --connect-timeout 10 "$@"; }

osds_up() {
  local up
  up=$(ceph_ osd stat -f json | python3 -c 'import json,sys; print(json.load(sys.stdin)["num_up_osds"])')
  [ "$up" -ge "$osds" ]
}

pgs_clean() {
  ceph_ pg stat -f json | python3 -c '
import json, sys
s = json.load(sys.stdin)
m = s.get("pg_summary", s)
states = {x["name"]: x["num"] for x in m.get("num_pg_by_state", [])}
total = m.get("num_pgs", 0)
sys.exit(0 if total > 0 and states.get("active+clean", 0) == total else 1)'
}

start() {
  local t0=$SECONDS
  install_packages
  if [ -f "$dir/run/mon.a.pid" ] && kill -0 "$(cat "$dir/run/mon.a.pid")" 2>/dev/null; then
    echo "ceph-test-cluster: a cluster already runs in $dir (stop it first)" >&2
    exit 1
  fi
  rm -rf "$dir"
  mkdir -p "$dir"/{run,log,mon,mgr/ceph-x,osd}
  dir=$(cd "$dir" && pwd)
  install_classes
  local port=${CEPH_MON_PORT:-$(free_port)}
  local fsid
  fsid=$(cat /proc/sys/kernel/random/uuid)
  cat >"$dir/ceph.conf" <<EOF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$port
public addr = 127.0.0.1
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = true
mon warn on insecure global id reclaim allowed = false
run dir = $dir/run
admin socket = $dir/run/\$name.asok
pid file = $dir/run/\$name.pid
log file = $dir/log/\$name.log
err to stderr = false
log to stderr = false
mon cluster log to stderr = false
ms bind ipv6 = false
osd pool default size = 3
osd pool default min size = 2
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
# A killed OSD is marked down within seconds, not the default 20+, so
# clients move on to the replicas while a test waits.
osd heartbeat interval = 1
osd heartbeat grace = 4
mon osd min down reporters = 1
mon osd reporter subtree level = osd
mon allow pool delete = true
mon allow pool size one = true
mon warn on pool no redundancy = false
mon data avail warn = 1
mon data avail crit = 0

[mon]
mon data = $dir/mon/\$cluster-\$id
mon initial members = a

[mgr]
mgr data = $dir/mgr/\$cluster-\$id
mgr disabled modules = dashboard prometheus restful
mgr initial modules = 

[osd]
osd data = $dir/osd/\$id
osd objectstore = bluestore
bluestore block create = true
bluestore block size = $(( ${CEPH_OSD_BLOCK_GIB:-8} * 1024 * 1024 * 1024 ))
bluestore block db create = false
bluestore block wal create = false
bluestore fsck on mount = false
osd memory target = 536870912
bluestore cache autotune = false
bluestore cache size = 67108864
osd class dir = $dir/classes
osd class load list = *
osd class default list = *
osd op num shards = 1
osd op num threads per shard = 2
EOF
  monmaptool --create --clobber --fsid "$fsid" --addv a "[v2:127.0.0.1:$port]" "$dir/monmap" >/dev/null
  ceph-mon -c "$dir/ceph.conf" --mkfs -i a --monmap "$dir/monmap" >/dev/null
  ceph-mon -c "$dir/ceph.conf" -i a
  wait_for 20 "the monitor's quorum" ceph_ mon stat
  ceph-mgr -c "$dir/ceph.conf" -i x
  for ((i = 0; i < osds; i++)); do
    local uuid id
    uuid=$(cat /proc/sys/kernel/random/uuid)
    id=$(ceph_ osd new "$uuid")
    mkdir -p "$dir/osd/$id"
    ceph-osd -c "$dir/ceph.conf" -i "$id" --mkfs --osd-uuid "$uuid" >/dev/null 2>&1 || {
      echo "ceph-test-cluster: osd.$id mkfs failed (log: $dir/log/osd.$id.log)" >&2
      exit 1
    }
    ceph_ osd crush add "osd.$id" 1.0 host=localhost root=default >/dev/null 2>&1
    ceph-osd -c "$dir/ceph.conf" -i "$id"
  done
  wait_for 45 "$osds OSDs up" osds_up
  ceph_ osd pool create ndpdb 32 32 >/dev/null 2>&1
  ceph_ osd pool set ndpdb size 3 >/dev/null 2>&1
  ceph_ osd pool set ndpdb min_size 2 >/dev/null 2>&1
  ceph_ osd pool application enable ndpdb ndpdb >/dev/null 2>&1
  wait_for 45 "placement groups active+clean" pgs_clean
  echo "ceph-test-cluster: up in $((SECONDS - t0)) s: mon.a on 127.0.0.1:$port, mgr.x, $osds OSDs, pool ndpdb" >&2
  echo "CEPH_CONF=$dir/ceph.conf"
}

stop() {
  [ -d "$dir/run" ] || return 0
  local pids=()
  for f in "$dir"/run/*.pid; do
    [ -e "$f" ] || continue
    local pid
    pid=$(cat "$f")
    if kill "$pid" 2>/dev/null; then pids+=("$pid"); fi
  done
  local t0=$SECONDS
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null; do
      if [ $((SECONDS - t0)) -ge 10 ]; then
        kill -9 "$pid" 2>/dev/null || true
      fi
      sleep 0.1
    done
  done
  rm -f "$dir"/run/*.pid
}

# Starts osd.N again (after a test killed it) and waits until every OSD
# is up and every placement group active+clean.
start_osd() {
  local id=${3:?usage: $0 start-osd DIR N}
  ceph-osd -c "$dir/ceph.conf" -i "$id"
  wait_for 60 "$osds OSDs up" osds_up
  wait_for 90 "placement groups active+clean" pgs_clean
}

case "$cmd" in
  install) install_packages ;;
  start) start ;;
  start-osd) start_osd "$@" ;;
  stop) stop ;;
  status) ceph_ -s ;;
  install-classes) install_classes ;;
  *)
    echo "usage: $0 install|start|stop|status|install-classes|start-osd DIR [N]" >&2
    exit 2
    ;;
esac
