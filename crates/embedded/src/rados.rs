//! A host with its device engine in this process and the device's store
//! in Ceph RADOS: the WAL, catalog and PK indexes stay in `DIR`, the
//! pages and device maps live in a pool (`ndpdb_device::store::rados`,
//! `ndpdb_device::maps::rados`).
//!
//! ```text
//!  DIR/device.rados   pool NAME / prefix ndpdb.<16 hex>     (which objects are this database's)
//!  pool NAME          <prefix>.head, <prefix>.maps.*, <prefix>.pages.N
//! ```
//!
//! The prefix is drawn once, when the database is created, and kept in
//! `DIR/device.rados`: every later open finds the same objects, and two
//! databases can share a pool.

use std::path::Path;
use std::sync::Arc;

use ndpdb_device::DeviceEngine;
use ndpdb_formats::SqlState;
use ndpdb_host::backup::DeviceConnection;
use ndpdb_host::{Config, Database, Error, Result};
use ndpdb_link::{DeviceClient, InProcessTransport, Transport};
use ndpdb_rados::Cluster;

const MARKER: &str = "device.rados";

/// Where a database's device store lives in RADOS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RadosStore {
    pub pool: String,
    pub prefix: String,
}

impl RadosStore {
    fn parse(text: &str) -> Option<RadosStore> {
        let mut pool = None;
        let mut prefix = None;
        for line in text.lines() {
            match line.split_once('=') {
                Some(("pool", v)) => pool = Some(v.trim().to_string()),
                Some(("prefix", v)) => prefix = Some(v.trim().to_string()),
                _ => {}
            }
        }
        Some(RadosStore {
            pool: pool.filter(|p| !p.is_empty())?,
            prefix: prefix.filter(|p| !p.is_empty() && !p.contains('\0'))?,
        })
    }

    /// The store `dir` names, or a new one in `pool` (written to `dir`).
    pub fn of(dir: &Path, pool: &str) -> Result<RadosStore> {
        let marker = dir.join(MARKER);
        match std::fs::read_to_string(&marker) {
            Ok(text) => {
                let store = RadosStore::parse(&text).ok_or_else(|| {
                    Error::new(
                        SqlState::DATA_CORRUPTED,
                        format!("\"{}\" is damaged", marker.display()),
                    )
                })?;
                if store.pool != pool {
                    return Err(Error::new(
                        SqlState::INVALID_PARAMETER_VALUE,
                        format!(
                            "the database in \"{}\" keeps its device store in pool \"{}\", not \"{pool}\"",
                            dir.display(),
                            store.pool
                        ),
                    ));
                }
                Ok(store)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if dir.join("device").exists() {
                    return Err(Error::new(
                        SqlState::INVALID_PARAMETER_VALUE,
                        format!(
                            "the database in \"{}\" keeps its device store in \"{}/device\", not in RADOS",
                            dir.display(),
                            dir.display()
                        ),
                    ));
                }
                let mut id = [0u8; 8];
                std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut id)?;
                let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
                let store = RadosStore {
                    pool: pool.to_string(),
                    prefix: format!("ndpdb.{hex}"),
                };
                let tmp = dir.join(format!("{MARKER}.tmp"));
                std::fs::write(
                    &tmp,
                    format!("pool={}\nprefix={}\n", store.pool, store.prefix),
                )?;
                std::fs::File::open(&tmp)?.sync_all()?;
                std::fs::rename(&tmp, &marker)?;
                std::fs::File::open(dir)?.sync_all()?;
                Ok(store)
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// The cluster config and pool the environment names for benchmarks and
/// test variants: `$CEPH_CONF`, and `$NDPDB_RADOS_POOL` or `ndpdb`.
pub fn cluster_from_env() -> Result<(std::path::PathBuf, String)> {
    let conf = std::env::var_os("CEPH_CONF").ok_or_else(|| {
        Error::new(
            SqlState::UNDEFINED_FILE,
            "a device store in RADOS needs CEPH_CONF (the cluster's ceph.conf)",
        )
    })?;
    let pool = std::env::var("NDPDB_RADOS_POOL").unwrap_or_else(|_| "ndpdb".into());
    Ok((conf.into(), pool))
}

/// A RADOS error as a database error: a missing library or object is
/// 58P01, an unreachable cluster 08006, anything else 58030.
pub fn rados_error(e: ndpdb_rados::Error) -> Error {
    let state = match e {
        ndpdb_rados::Error::Unavailable(_) => SqlState::UNDEFINED_FILE,
        ndpdb_rados::Error::Connect { .. } => SqlState::CONNECTION_FAILURE,
        ndpdb_rados::Error::NotFound(_) => SqlState::UNDEFINED_FILE,
        _ => SqlState::IO_ERROR,
    };
    Error::new(state, e.to_string())
}

/// The device engine over the database's objects in `pool` of the
/// cluster `ceph_conf` names, behind an in-process transport.
pub fn connect_rados(
    dir: &Path,
    config: &Config,
    ceph_conf: &Path,
    pool: &str,
) -> Result<DeviceConnection> {
    std::fs::create_dir_all(dir)?;
    let store = RadosStore::of(dir, pool)?;
    let cluster = Cluster::connect(ceph_conf).map_err(rados_error)?;
    let pool = Arc::new(cluster.pool(&store.pool).map_err(rados_error)?);
    let slt = ndpdb_host::database::new_slt(config)?;
    let mut options = crate::device_options(config);
    options.slt = slt.clone();
    let engine = DeviceEngine::open_rados(pool, &store.prefix, options)?;
    let transport: Arc<dyn Transport> = Arc::new(InProcessTransport::with_model(
        Arc::new(engine),
        config.link,
    ));
    Ok((DeviceClient::new(transport), slt))
}

/// Opens (or creates) the database in `dir` with its device store in
/// RADOS.
pub fn open_rados(dir: &Path, config: Config, ceph_conf: &Path, pool: &str) -> Result<Database> {
    let (device, slt) = connect_rados(dir, &config, ceph_conf, pool)?;
    Database::open_on_with(dir, config, device, slt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_names_one_store_for_good() {
        let dir = tempfile::tempdir().unwrap();
        let a = RadosStore::of(dir.path(), "ndpdb").unwrap();
        assert!(a.prefix.starts_with("ndpdb.") && a.prefix.len() == 22);
        assert_eq!(RadosStore::of(dir.path(), "ndpdb").unwrap(), a);
        let other = RadosStore::of(dir.path(), "elsewhere").unwrap_err();
        assert_eq!(other.code, SqlState::INVALID_PARAMETER_VALUE);
        std::fs::write(dir.path().join(MARKER), "pool=\n").unwrap();
        assert_eq!(
            RadosStore::of(dir.path(), "ndpdb").unwrap_err().code,
            SqlState::DATA_CORRUPTED
        );
        let local = tempfile::tempdir().unwrap();
        std::fs::create_dir(local.path().join("device")).unwrap();
        assert!(RadosStore::of(local.path(), "ndpdb").is_err());
    }
}
