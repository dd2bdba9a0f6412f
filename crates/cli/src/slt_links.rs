//! `ndpdb bench slt` across a process boundary: the host side of the
//! shared lock table when a device process owns it, mapped from
//! /dev/shm (`shm`, what a unix-socket host does) or reached by sync-plane
//! messages (`tcp`, a remote compare-and-swap per change), and
//! PostgreSQL's lock manager as a client reaches it.
//!
//! ```text
//!  bench ── attach::connect_device ──► ndpdb device (fresh store)
//!    ├─ unix: SharedLockTable::open_shm   one CAS instruction per change
//!    └─ tcp:  SharedLockTable::remote     one SLT_CAS round trip per change
//!  bench ── librados ──► a lock object in pool ndpdb ($CEPH_CONF)
//!    └─ rados: compare-and-write          one OSD write operation per change
//! ```

use ndpdb_bench::sltbench::{describe, host_rows, postgres_row, LatencyRow};
use ndpdb_bench::target::Target;
use ndpdb_embedded::process::{DeviceAt, LinkKind};
use ndpdb_formats::SqlState;
use ndpdb_host::{Config, Error, Result};

/// Rows for each of `links` (`shm`, `tcp`) and, unless `target` is
/// `none`, PostgreSQL.
pub fn run(links: &[String], ops: u64, target: &str) -> Result<Vec<LatencyRow>> {
    let mut rows = Vec::new();
    let bin = std::env::current_exe()?;
    let config = Config::default();
    for name in links {
        let (label, kind) = match name.as_str() {
            "shm" | "unix" => ("shm", LinkKind::Unix),
            "tcp" => ("tcp", LinkKind::Tcp),
            "rados" => {
                let r = rados_row(ops)?;
                println!("{}", describe(&r));
                rows.push(r);
                continue;
            }
            other => {
                return Err(Error::new(
                    SqlState::INVALID_PARAMETER_VALUE,
                    format!("unknown link {other} (shm, tcp, rados)"),
                ))
            }
        };
        let dir = tempfile::Builder::new()
            .prefix("slt-device-")
            .tempdir_in(std::env::temp_dir())?;
        let Some(at) = DeviceAt::start(dir.path(), &config, kind, &bin)? else {
            continue;
        };
        let (_client, slt) =
            ndpdb_host::attach::connect_device(&at.listen, at.secret.clone(), &config)?;
        let slt = slt.ok_or_else(|| {
            Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                "the device process offers no shared lock table",
            )
        })?;
        for r in host_rows(label, slt, ops) {
            println!("{}", describe(&r));
            rows.push(r);
        }
        drop(at);
    }
    if target != "none" {
        match Target::parse(target) {
            Ok(Target::Postgres(conninfo)) => {
                let r = postgres_row(&conninfo, ops)?;
                println!("{}", describe(&r));
                rows.push(r);
            }
            Ok(_) => {
                return Err(Error::new(
                    SqlState::INVALID_PARAMETER_VALUE,
                    "--target takes postgres[=CONNSTRING] or none",
                ))
            }
            Err(e) => println!("PostgreSQL column skipped: {e}"),
        }
    }
    Ok(rows)
}

/// The `rados` row: lock entries in an object of pool `ndpdb` (or
/// `$NDPDB_RADOS_POOL`) of the cluster `$CEPH_CONF` names.
fn rados_row(ops: u64) -> Result<LatencyRow> {
    use ndpdb_embedded::rados::{cluster_from_env, rados_error};
    let (conf, pool) = cluster_from_env()?;
    let cluster = ndpdb_rados::Cluster::connect(&conf).map_err(rados_error)?;
    let pool = cluster.pool(&pool).map_err(rados_error)?;
    ndpdb_bench::sltbench::rados_row(&pool, ops)
}
