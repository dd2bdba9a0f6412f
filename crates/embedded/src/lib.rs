//! A database whose device runs in the same process (the default way to
//! run ndpdb): the device engine over `DIR/device`, the host over `DIR`,
//! joined by the in-process transport and one shared lock table in this
//! process's memory.
//!
//! ```text
//!   ndpdb_host::Database ── DeviceClient ── InProcessTransport ── DeviceEngine (DIR/device)
//!            │                                                          │
//!            └──────────────── SharedLockTable (one region) ────────────┘
//! ```
//!
//! The host crate knows the device only through `ndpdb_link`; this crate
//! is where the two meet. A device in another process attaches through
//! a socket transport instead (`Database::attach`); [`process`] opens a
//! database either way for the suites that run on every engine variant.

pub mod process;
pub mod rados;

pub use rados::open_rados;

use std::path::Path;
use std::sync::Arc;

use ndpdb_device::{DeviceEngine, DeviceOptions};
use ndpdb_host::backup::DeviceConnection;
use ndpdb_host::{Config, Database, Error, Result};
use ndpdb_link::{DeviceClient, InProcessTransport, Transport};

/// Opens (or creates) the database in `dir` with default settings.
pub fn open(dir: &Path) -> Result<Database> {
    open_with(dir, Config::default())
}

/// Opens (or creates) the database in `dir`.
pub fn open_with(dir: &Path, config: Config) -> Result<Database> {
    let (device, slt) = connect(dir, &config)?;
    Database::open_on_with(dir, config, device, slt)
}

/// How the embedded device is built from the host's settings.
pub fn device_options(config: &Config) -> DeviceOptions {
    DeviceOptions {
        pes: config.device_pes,
        cpus: config.device_cpus.clone(),
        nvm: config.device_nvm,
        slt: None,
        objects_in_flight: config.rados_objects_in_flight,
    }
}

/// The embedded device of the database in `dir` (`DIR/device`) and the
/// shared lock table host and device map.
pub fn connect(dir: &Path, config: &Config) -> Result<DeviceConnection> {
    std::fs::create_dir_all(dir)?;
    let slt = ndpdb_host::database::new_slt(config)?;
    let mut options = device_options(config);
    options.slt = slt.clone();
    let engine = DeviceEngine::open_with(&dir.join("device"), options)?;
    let transport: Arc<dyn Transport> = Arc::new(InProcessTransport::with_model(
        Arc::new(engine),
        config.link,
    ));
    Ok((DeviceClient::new(transport), slt))
}

/// Rebuilds the lost device store of the database in `dir` (its
/// `device/` folder gone) from the backup in `backup` and opens the
/// database (see `Database::restore_on`). On failure the device folder
/// it began is removed again, so the restore can be retried.
pub fn restore(dir: &Path, backup: &Path, config: Config) -> Result<Database> {
    restore_with_progress(dir, backup, config, &|_, _| {})
}

/// [`restore`], calling `progress(done, total)` as the backup's pages
/// are written back.
pub fn restore_with_progress(
    dir: &Path,
    backup: &Path,
    config: Config,
    progress: &dyn Fn(u64, u64),
) -> Result<Database> {
    let device_dir = dir.join("device");
    if std::fs::read_dir(&device_dir).is_ok_and(|mut d| d.next().is_some()) {
        return Err(Error::new(
            ndpdb_formats::SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!(
                "\"{}\" exists: a restore rebuilds a lost device store; move it away first",
                device_dir.display()
            ),
        ));
    }
    let result = Database::restore_on(
        dir,
        backup,
        config,
        &mut |config| connect(dir, config),
        progress,
    );
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&device_dir);
    }
    result
}
