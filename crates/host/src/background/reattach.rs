//! Surviving a device restart: the host reattaches to the new incarnation
//! by itself and goes on serving (DESIGN.md §10; the device is a machine
//! part that fails on its own).
//!
//! ```text
//!  device killed ─► requests fail at once (08006); host-only work goes on
//!  device back   ─► watcher: probe sees a new Welcome (new lock table)
//!                   └─ under the lock manager's mutex:
//!                        accept_restart (only the sync plane passes)
//!                        open the new lock table (/dev/shm or remote)
//!                        host locks re-entered, device tags stale
//!                      finish_restart ─► requests flow again
//! ```
//!
//! What died with the device: its jobs, their tuple locks and pipeline
//! stages, and the passed-along state. A transaction that ran update NDP
//! on the old incarnation cannot commit (40001, its locks are gone); one
//! that only ran on the host keeps its locks and commits. The host's
//! delta buffer keeps every page a failed flush did not finish, and the
//! next flush writes them again; committed work lives in the host's WAL
//! meanwhile, so nothing acknowledged depends on the device being up.
//!
//! The watcher reaches the engine through [`Reattach`] (implemented in
//! `crate::db::state`); the reattach itself takes the parts it swaps.

use std::sync::{Arc, Weak};
use std::time::Duration;

use ndpdb_link::DeviceClient;
use ndpdb_slt::SharedLockTable;

use crate::error::Result;
use crate::mvcc::locks::LockTable;
use crate::stats::EngineCounters;

/// Opens a restarted device's lock table from the region name it
/// announced.
pub type SltOpener =
    Box<dyn Fn(&str, &DeviceClient) -> Result<Option<Arc<SharedLockTable>>> + Send + Sync>;

/// How often the watcher looks at a link that failed.
const PROBE_EVERY: Duration = Duration::from_millis(50);

/// What the watcher needs of the engine whose device it watches.
pub(crate) trait Reattach: Send + Sync + 'static {
    /// The engine failed (the watcher then ends).
    fn is_failed(&self) -> bool;
    /// [`reattach_if_restarted`] with the engine's parts.
    fn reattach_if_restarted(&self) -> Result<bool>;
}

/// Starts the thread that reattaches `engine` to its device when it comes
/// back after a restart; it ends with the engine.
pub(crate) fn watch<E: Reattach>(engine: &Arc<E>) {
    let weak: Weak<E> = Arc::downgrade(engine);
    let _ = std::thread::Builder::new()
        .name("device-watch".into())
        .spawn(move || loop {
            std::thread::sleep(PROBE_EVERY);
            let Some(engine) = weak.upgrade() else { break };
            if engine.is_failed() {
                break;
            }
            let _ = engine.reattach_if_restarted();
        });
}

/// Reattaches if the device came back as a new incarnation; returns
/// whether it did. A device still down is an error (08006). Only the
/// watcher calls it, so one reattach runs at a time.
pub(crate) fn reattach_if_restarted(
    device: &DeviceClient,
    locks: &LockTable,
    opener: &SltOpener,
    counters: &EngineCounters,
) -> Result<bool> {
    if !device.probe()? {
        return Ok(false);
    }
    let swapped = locks.swap_slt_with(|| {
        let region = device.accept_restart().unwrap_or_default();
        opener(&region, device)
    });
    // On failure the new incarnation stays refused but for the sync
    // plane: its lock table could not be joined, and update NDP on a
    // table the host does not lock in would be unsafe.
    if let Err(e) = swapped {
        eprintln!(
            "ndpdb: cannot join the restarted device's lock table ({}): {}; restart the host once it is fixed",
            e.code.0, e.message
        );
        return Err(e);
    }
    device.finish_restart();
    EngineCounters::inc(&counters.device_reattaches);
    Ok(true)
}
