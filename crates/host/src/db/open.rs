//! Opening a database on a connected device: the catalog, the device's
//! maps, the WAL replayed (`crate::recovery`), the PK indexes loaded or
//! rebuilt, a checkpoint, and the background workers started.
//!
//! ```text
//!  lock DIR/LOCK ─► catalog, sequences ─► device L2P + VID maps
//!    ─► WAL from the last checkpoint (or a backup's) ─► replay
//!    ─► PK indexes: loaded if their manifest names that checkpoint,
//!       else rebuilt from the heads ─► secondary indexes built
//!    ─► checkpoint ─► overflow logs listed for removal
//!    ─► autovacuum and checkpointer started
//! ```

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use ndpdb_formats::record::RecordView;
use ndpdb_formats::{Lsn, SqlState, TableId};
use ndpdb_link::DeviceClient;
use ndpdb_slt::SharedLockTable;
use ndpdb_wal::Wal;

use super::handle::Database;
use super::state::{Engine, RecoveryReport};
use super::table::TableState;
use crate::background::{autovacuum, checkpointer};
use crate::catalog::Catalog;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::gc::GcState;
use crate::mvcc::locks::LockTable;
use crate::mvcc::snapshot::TxManager;
use crate::recovery;
use crate::sequence::Sequences;
use crate::stats::EngineCounters;
use crate::storage::buffer_pool::BufferPool;
use crate::storage::maps::{L2pMap, VidMap};
use crate::storage::pk_index::{self, PkIndex};
use crate::storage::space::SpaceMap;

/// The shared lock table `config` asks for (none with 0 buckets), in
/// this process's memory.
pub fn new_slt(config: &Config) -> Result<Option<Arc<SharedLockTable>>> {
    if config.slt_buckets == 0 {
        return Ok(None);
    }
    SharedLockTable::in_process(config.slt_buckets)
        .map(|t| Some(Arc::new(t)))
        .map_err(|e| Error::new(e.sqlstate(), e.to_string()))
}

/// Takes an exclusive lock on `DIR/LOCK` so two processes never open
/// the same database.
fn lock_directory(dir: &Path) -> Result<std::fs::File> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("LOCK"))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::new(
            SqlState::OBJECT_IN_USE,
            format!("database {} is in use by another process", dir.display()),
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(e.into()),
    }
}

impl Database {
    /// Opens the host side on an already connected device (with its own
    /// shared lock table, which that device does not see).
    pub fn open_on(dir: &Path, config: Config, device: DeviceClient) -> Result<Database> {
        let slt = new_slt(&config)?;
        Database::open_on_with(dir, config, device, slt)
    }

    /// Opens the host side on a device that shares `slt` with it.
    pub fn open_on_with(
        dir: &Path,
        config: Config,
        device: DeviceClient,
        slt: Option<Arc<SharedLockTable>>,
    ) -> Result<Database> {
        Database::open_recovering(dir, config, device, slt, None)
    }

    /// Opens the host side; with `restore_from` (a base backup's
    /// checkpoint, the device rebuilt from that backup) the WAL is
    /// replayed from there and the pages of later jobs come from their
    /// overflow logs (see `crate::recovery`).
    pub(crate) fn open_recovering(
        dir: &Path,
        config: Config,
        device: DeviceClient,
        slt: Option<Arc<SharedLockTable>>,
        restore_from: Option<Lsn>,
    ) -> Result<Database> {
        std::fs::create_dir_all(dir)?;
        let dir_lock = lock_directory(dir)?;
        let catalog = Catalog::open(dir)?;
        let sequences = Sequences::open(dir)?;
        let l2p = L2pMap::from_runs(&device.dump_l2p()?);
        let (wal, recovered) = Wal::open_from(&dir.join("wal"), restore_from)?;
        let horizon = crate::backup::read_horizon(dir)?;
        wal.retain_from(horizon);
        // PK indexes written at the WAL's last checkpoint, where present.
        let pk_dir = pk_index::index_dir(dir);
        let pk_current = match (pk_index::read_manifest(&pk_dir), &recovered.checkpoint) {
            (Ok(Some(at)), Some(c)) => at == c.next_txid,
            _ => false,
        };
        let mut tables = HashMap::new();
        let mut pk_loaded = HashSet::new();
        for meta in catalog.tables() {
            let vids = VidMap::from_runs(&device.dump_vid_map(meta.id)?)?;
            let keyed = !meta.schema.primary_key.is_empty();
            let pk = (keyed && pk_current)
                .then(|| PkIndex::load(&pk_dir, meta.id).ok())
                .flatten();
            if pk.is_some() {
                pk_loaded.insert(meta.id);
            }
            tables.insert(meta.id, Arc::new(TableState::with_pk(meta, vids, pk)));
        }
        let source = match restore_from {
            Some(_) => recovery::Source::OverflowLogs,
            None => recovery::Source::Device,
        };
        let replayed =
            recovery::replay(dir, &device, &l2p, &tables, &pk_loaded, &recovered, source)?;
        let mut report = RecoveryReport {
            replayed_transactions: replayed.transactions,
            replayed_versions: replayed.versions,
            overflow_logs_written_back: replayed.overflow_logs,
            wal_bytes_cut: recovered.cut_bytes,
            ..RecoveryReport::default()
        };
        // The store's size after the replay (a restore writes pages back).
        let info = device.info()?;
        report.pk_indexes_loaded = pk_loaded.len() as u64;
        report.pk_indexes_rebuilt = tables
            .values()
            .filter(|t| t.pk.get().is_some() && !pk_loaded.contains(&t.id))
            .count() as u64;
        let locks = match slt {
            None => LockTable::new(),
            Some(slt) => LockTable::with_slt(slt),
        };
        // Every page of the store no LPN maps to (after the replay) is free.
        let space = SpaceMap::open(info.page_count, l2p.ppns().into_iter());
        let inner = Engine {
            catalog_generation: AtomicU64::new(1),
            dir: dir.to_path_buf(),
            pool: BufferPool::new(config.buffer_pool_bytes),
            config,
            device,
            catalog: Mutex::new(catalog),
            sequences,
            tables: RwLock::new(tables),
            l2p,
            delta: RwLock::new(replayed.delta),
            wal,
            txm: TxManager::new(replayed.next_txid),
            ssi: Default::default(),
            locks,
            next_lpn: AtomicU64::new(replayed.max_lpn.map_or(0, |l| l.0 + 1)),
            space,
            gc: Mutex::new(GcState::default()),
            gc_running: Mutex::new(()),
            autovacuum: Default::default(),
            checkpointer: Default::default(),
            gc_due: AtomicBool::new(false),
            user_handles: AtomicU64::new(1),
            ndp_tags: Mutex::new(Default::default()),
            overflow_committed: Mutex::new(Vec::new()),
            overflow_retained: Mutex::new(Vec::new()),
            backup_running: Mutex::new(()),
            violable: Mutex::new(Default::default()),
            flush_lock: Mutex::new(()),
            checkpoint_gate: RwLock::new(()),
            last_checkpoint: AtomicU64::new(u64::MAX),
            pk_save: Mutex::new(()),
            failed: AtomicBool::new(false),
            slt_opener: std::sync::OnceLock::new(),
            counters: EngineCounters::default(),
            recovery: report,
            _dir_lock: dir_lock,
        };
        let db = Database {
            inner: Arc::new(inner),
            user: true,
        };
        db.inner.finish_pk_indexes(&pk_loaded)?;
        db.inner.build_indexes_at_open()?;
        db.drop_rewrite_leftovers()?;
        db.checkpoint()?;
        // The replayed jobs' pages are in the device's maps now: their logs
        // go with the next checkpoint (removing a gigabyte of them here
        // would double the time to open) — or, while a base backup is
        // kept, with the next backup.
        let found = crate::ndp::overflow_log::list(&db.inner.dir)?;
        match horizon {
            Some(_) => db.inner.overflow_retained.lock().extend(found),
            None => db.inner.overflow_committed.lock().extend(found),
        }
        autovacuum::start(&db.inner);
        checkpointer::start(&db.inner);
        Ok(db)
    }
}

impl Engine {
    /// Completes the PK indexes after the WAL replay: a loaded index
    /// moves its table's VID allocator past every VID it names (keys of
    /// transactions that never committed name VIDs without a version,
    /// which must not go to other keys); the others are rebuilt from the
    /// head of every VID.
    fn finish_pk_indexes(&self, loaded: &HashSet<TableId>) -> Result<()> {
        let tables: Vec<Arc<TableState>> = self.tables.read().values().cloned().collect();
        for ts in tables {
            let Some(pk) = ts.pk.get() else { continue };
            if loaded.contains(&ts.id) {
                ts.vids.allocate_from(pk.vid_bound());
                continue;
            }
            // A table keyed after it had rows (ALTER TABLE … ADD PRIMARY
            // KEY) may hold a deleted tuple with the key of a live one:
            // the live one keeps the key.
            let mut live = HashSet::new();
            for (vid, head) in ts.vids.entries() {
                let rec = self.fetch(head)?;
                let view = RecordView::parse(&rec)?;
                let row = view.decode(&ts.types)?;
                if let Some(key) = ts.pk_key(&row) {
                    if !view.header.is_tombstone() {
                        live.insert(key.clone());
                        pk.insert(key, vid)?;
                    } else if !live.contains(&key) && pk.get(&key)?.is_none() {
                        pk.insert(key, vid)?;
                    }
                }
            }
        }
        Ok(())
    }
}
