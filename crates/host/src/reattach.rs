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

use std::sync::{Arc, Weak};
use std::time::Duration;

use ndpdb_link::DeviceClient;
use ndpdb_slt::SharedLockTable;

use crate::database::DbInner;
use crate::error::Result;
use crate::stats::EngineCounters;

/// Opens a restarted device's lock table from the region name it
/// announced.
pub type SltOpener =
    Box<dyn Fn(&str, &DeviceClient) -> Result<Option<Arc<SharedLockTable>>> + Send + Sync>;

/// How often the watcher looks at a link that failed.
const PROBE_EVERY: Duration = Duration::from_millis(50);

impl DbInner {
    /// Starts the thread that reattaches to the device when it comes back
    /// after a restart; it ends with the database.
    pub(crate) fn watch_device(self: &Arc<Self>, opener: SltOpener) {
        if self.slt_opener.set(opener).is_err() {
            return;
        }
        let weak: Weak<DbInner> = Arc::downgrade(self);
        let _ = std::thread::Builder::new()
            .name("device-watch".into())
            .spawn(move || loop {
                std::thread::sleep(PROBE_EVERY);
                let Some(inner) = weak.upgrade() else { break };
                if inner.is_failed() {
                    break;
                }
                let _ = inner.reattach_if_restarted();
            });
    }

    /// Reattaches if the device came back as a new incarnation; returns
    /// whether it did. A device still down is an error (08006). Only the
    /// watcher calls it, so one reattach runs at a time.
    fn reattach_if_restarted(&self) -> Result<bool> {
        let Some(opener) = self.slt_opener.get() else {
            return Ok(false);
        };
        if !self.device.probe()? {
            return Ok(false);
        }
        let device = &self.device;
        let swapped = self.locks.swap_slt_with(|| {
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
        self.device.finish_restart();
        EngineCounters::inc(&self.counters.device_reattaches);
        Ok(true)
    }
}
