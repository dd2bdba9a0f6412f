//! A host attached to a device in another process (`ndpdb device`),
//! through the socket link (`ndpdb_link::socket`).
//!
//! ```text
//!  Database::attach ── SocketTransport (unix:PATH | tcp:HOST:PORT) ──► ndpdb device
//!        │                  Welcome { SLT region name }
//!        ├── unix: SharedLockTable::open_shm(region) ◄── the device created it in /dev/shm
//!        └── tcp:  SharedLockTable::remote(SyncPlane) ── SLT_LOAD / SLT_CAS messages
//! ```
//!
//! The host and the device lock tuples in one shared lock table. Over a
//! unix socket both map it; over TCP (a device that may be on another
//! machine) the host's loads and compare-and-swaps travel on the sync
//! plane and the device's PEs use it locally. A device that offers none
//! (a store opened without one) runs reads only: its update jobs fail
//! with 0A000. A region the host cannot map is an error rather than two
//! lock tables that do not see each other.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ndpdb_formats::SqlState;
use ndpdb_link::socket::{Endpoint, SocketTransport};
use ndpdb_link::sync_plane::SyncPlane;
use ndpdb_link::DeviceClient;
use ndpdb_slt::SharedLockTable;

use crate::backup::DeviceConnection;
use crate::config::Config;
use crate::db::Database;
use crate::error::{Error, Result};

/// Longest a request to the device may take before the link is called
/// broken (a dead device's socket fails at once; this covers a device
/// that stops answering).
pub const DEVICE_TIMEOUT: Duration = Duration::from_secs(30);

/// Connects to the device at `endpoint` and maps its shared lock table.
pub fn connect_device(endpoint: &str, token: Vec<u8>, config: &Config) -> Result<DeviceConnection> {
    let endpoint = Endpoint::parse(endpoint)?;
    let (transport, welcome) =
        SocketTransport::connect(&endpoint, token, config.link, Some(DEVICE_TIMEOUT))?;
    let client = DeviceClient::new(Arc::new(transport));
    let slt = open_slt(&endpoint, &welcome.slt_region, &client)?;
    Ok((client, slt))
}

/// The device's shared lock table named `region`: mapped from /dev/shm
/// over a unix socket, reached by sync-plane messages over TCP; none if
/// the device offers none.
fn open_slt(
    endpoint: &Endpoint,
    region: &str,
    client: &DeviceClient,
) -> Result<Option<Arc<SharedLockTable>>> {
    if region.is_empty() {
        return Ok(None);
    }
    let table = if matches!(endpoint, Endpoint::Tcp(_)) {
        let remote = Arc::new(SyncPlane::new(client.clone()));
        SharedLockTable::remote(remote).map_err(|e| {
            Error::new(
                e.sqlstate(),
                format!("cannot reach the device's shared lock table: {e}"),
            )
        })?
    } else {
        SharedLockTable::open_shm(region).map_err(|e| {
            Error::new(
                SqlState::CONNECTION_FAILURE,
                format!(
                    "cannot map the device's shared lock table \"{region}\": {e} (attach to a device on another machine with tcp:)"
                ),
            )
        })?
    };
    Ok(Some(Arc::new(table)))
}

impl Database {
    /// Opens the database in `dir` on the device process at `endpoint`
    /// (`unix:PATH` or `tcp:HOST:PORT`). When the device restarts, the
    /// host reattaches to it by itself (`crate::background::reattach`).
    pub fn attach(dir: &Path, config: Config, endpoint: &str, token: Vec<u8>) -> Result<Database> {
        let (device, slt) = connect_device(endpoint, token, &config)?;
        let db = Database::open_on_with(dir, config, device, slt)?;
        let parsed = Endpoint::parse(endpoint)?;
        db.inner.watch_device(Box::new(move |region, client| {
            open_slt(&parsed, region, client)
        }));
        Ok(db)
    }
}
