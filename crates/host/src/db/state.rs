//! The engine: everything one open database shares ([`Engine`]), behind
//! every [`crate::Database`] handle.
//!
//! ```text
//!  Engine ── catalog, sequences, tables (TableState by id)
//!         ├─ L2P map, delta buffer, buffer pool, space map   (storage)
//!         ├─ WAL, TxManager, SSI, lock table                  (MVCC)
//!         ├─ GC state, NDP tags, overflow logs, violable txs  (NDP, GC)
//!         └─ handles of the background workers (autovacuum, checkpointer,
//!            device reattach), which own their loops in `crate::background`
//! ```
//!
//! Methods on `Engine` live with what they do: reads in `read.rs`, flush
//! & append in `flush.rs`, checkpoints in `checkpoint.rs`, commit in
//! `crate::transaction::commit`, NDP in `crate::ndp`, GC in `crate::gc`. This file
//! holds the state, the close (a flush and a checkpoint when the engine
//! drops) and the few methods every part needs (`check_ok`, table lookup).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, RwLock};

use ndpdb_formats::{Lpn, Lsn, SqlState, TableId, TxId};
use ndpdb_link::DeviceClient;
use ndpdb_wal::Wal;

use super::table::TableState;
use crate::background::autovacuum::Autovacuum;
use crate::background::checkpointer::Checkpointer;
use crate::background::reattach::{self, Reattach, SltOpener};
use crate::catalog::Catalog;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::gc::GcState;
use crate::mvcc::delta_buffer::DeltaBuffer;
use crate::mvcc::locks::LockTable;
use crate::mvcc::snapshot::TxManager;
use crate::mvcc::ssi::Ssi;
use crate::ndp::{Eot, TagPool};
use crate::sequence::Sequences;
use crate::stats::EngineCounters;
use crate::storage::buffer_pool::BufferPool;
use crate::storage::maps::L2pMap;
use crate::storage::space::SpaceMap;

/// The state one open database shares: see the module docs.
pub(crate) struct Engine {
    /// Counts finished catalog changes (`Database::catalog_generation`).
    pub(super) catalog_generation: AtomicU64,
    pub dir: PathBuf,
    pub config: Config,
    pub device: DeviceClient,
    pub(crate) catalog: Mutex<Catalog>,
    pub(crate) sequences: Sequences,
    pub(crate) tables: RwLock<HashMap<TableId, Arc<TableState>>>,
    pub(crate) l2p: L2pMap,
    pub(crate) delta: RwLock<DeltaBuffer>,
    pub pool: BufferPool,
    pub wal: Wal,
    pub txm: TxManager,
    /// SERIALIZABLE transactions' reads, writes and rw-antidependencies.
    pub(crate) ssi: Ssi,
    pub locks: LockTable,
    pub(super) next_lpn: AtomicU64,
    /// Free and released device pages.
    pub(crate) space: SpaceMap,
    /// One garbage collection at a time; per table, what its last run found.
    pub(crate) gc: Mutex<GcState>,
    pub(crate) gc_running: Mutex<()>,
    pub(crate) autovacuum: Arc<Autovacuum>,
    /// Takes the checkpoints commits ask for (`crate::background::checkpointer`).
    pub(crate) checkpointer: Arc<Checkpointer>,
    /// A commit carried a table past its autovacuum threshold.
    pub(crate) gc_due: AtomicBool,
    /// Clones of the database users hold.
    pub(super) user_handles: AtomicU64,
    /// SLT tags of transactions with update jobs.
    pub(crate) ndp_tags: Mutex<TagPool>,
    /// Overflow logs of committed transactions: removed by the next
    /// checkpoint (see `overflow_log`).
    pub(crate) overflow_committed: Mutex<Vec<Lsn>>,
    /// Overflow logs a checkpoint covered while a base backup is kept:
    /// removed when the next backup completes (see `crate::backup`).
    pub(crate) overflow_retained: Mutex<Vec<Lsn>>,
    /// One backup at a time.
    pub(crate) backup_running: Mutex<()>,
    /// Update-NDP transactions committing with lock violation, and the
    /// end their dependents wait for (`crate::ndp::lock_violation`).
    pub(crate) violable: Mutex<rustc_hash::FxHashMap<TxId, Arc<Eot>>>,
    pub(super) flush_lock: Mutex<()>,
    pub(crate) checkpoint_gate: RwLock<()>,
    /// The next TxId of the WAL's last checkpoint record, set under the
    /// gate: the PK index manifest may name only that checkpoint.
    pub(super) last_checkpoint: AtomicU64,
    /// One PK index save at a time (they run after the gate is released).
    pub(super) pk_save: Mutex<()>,
    pub(super) failed: AtomicBool,
    /// How a device process that restarted is joined again
    /// (`crate::background::reattach`); set when the host attaches to one.
    pub(crate) slt_opener: OnceLock<SltOpener>,
    pub counters: EngineCounters,
    pub recovery: RecoveryReport,
    /// Held open (and locked) while the database is open.
    pub(super) _dir_lock: std::fs::File,
}

/// Most delta-buffer pages of a table an NDP job takes along (4 MiB).
pub const PASS_ALONG_MAX_PAGES: usize = 512;

impl Drop for Engine {
    /// A clean shutdown: flush the delta buffer and checkpoint, so the next
    /// open has no log to replay. (After a crash, recovery does this.)
    fn drop(&mut self) {
        if !self.failed.load(Ordering::Acquire) {
            let _ = self.checkpoint();
        }
    }
}

/// What the last open had to recover.
#[derive(Clone, Debug, Default)]
pub struct RecoveryReport {
    pub replayed_transactions: u64,
    pub replayed_versions: u64,
    pub wal_bytes_cut: u64,
    /// PK indexes read from their checkpoint files, and rebuilt from the
    /// head records (no file current for the WAL's checkpoint).
    pub pk_indexes_loaded: u64,
    pub pk_indexes_rebuilt: u64,
    /// Restore: overflow logs whose pages were written back to the device.
    pub overflow_logs_written_back: u64,
}

/// Marks a catalog change as finished when it goes out of scope
/// (success or not): plans made before then are made again.
pub(crate) struct CatalogChange<'a>(&'a AtomicU64);

impl Drop for CatalogChange<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Release);
    }
}

impl Engine {
    /// Starts a change of the catalog (DDL): see [`CatalogChange`].
    pub(crate) fn catalog_change(&self) -> CatalogChange<'_> {
        CatalogChange(&self.catalog_generation)
    }

    pub fn check_ok(&self) -> Result<()> {
        if self.failed.load(Ordering::Acquire) {
            return Err(Error::new(
                SqlState::IO_ERROR,
                "the database hit an I/O error and must be reopened",
            ));
        }
        Ok(())
    }

    pub(crate) fn fail(&self) {
        self.failed.store(true, Ordering::Release);
    }

    pub(crate) fn is_failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// Every table's state.
    /// Copies the catalog file to `to` (nothing if no table was ever
    /// created), with DDL held off meanwhile.
    pub(crate) fn copy_catalog(&self, to: &Path) -> Result<()> {
        let _catalog = self.catalog.lock();
        let from = self.dir.join("catalog.bin");
        if from.exists() {
            std::fs::copy(&from, to)?;
        }
        Ok(())
    }

    pub(crate) fn all_tables(&self) -> Vec<Arc<TableState>> {
        self.tables.read().values().cloned().collect()
    }

    pub fn table_state(&self, id: TableId) -> Result<Arc<TableState>> {
        self.tables.read().get(&id).cloned().ok_or_else(|| {
            Error::new(
                SqlState::UNDEFINED_TABLE,
                format!("table {} was dropped", id.0),
            )
        })
    }

    pub(crate) fn alloc_lpn(&self) -> Lpn {
        Lpn(self.next_lpn.fetch_add(1, Ordering::AcqRel))
    }
}

impl Engine {
    /// Starts the thread that reattaches to the device when it comes back
    /// after a restart (`crate::background::reattach`); it ends with the
    /// database.
    pub(crate) fn watch_device(self: &Arc<Self>, opener: SltOpener) {
        if self.slt_opener.set(opener).is_err() {
            return;
        }
        reattach::watch(self);
    }
}

impl Reattach for Engine {
    fn is_failed(&self) -> bool {
        Engine::is_failed(self)
    }

    fn reattach_if_restarted(&self) -> Result<bool> {
        let Some(opener) = self.slt_opener.get() else {
            return Ok(false);
        };
        reattach::reattach_if_restarted(&self.device, &self.locks, opener, &self.counters)
    }
}
