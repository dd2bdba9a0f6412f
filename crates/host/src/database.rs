//! Opening, recovery, commit, flush & append and checkpoints.
//!
//! ```text
//!  DIR/catalog.bin        host catalog
//!  DIR/wal/*.seg          host WAL
//!  DIR/device/…           the embedded device's storage (pages, maps)
//! ```
//!
//! **Commit** (in one critical section, so WAL order equals page order):
//! place the write set's encoded versions in the delta buffer, move the VID
//! heads, append redo images and the commit record to the WAL buffer. Then
//! group-commit fsync, and only then is the transaction removed from the
//! in-flight set (new snapshots see it) and its locks released.
//!
//! **Flush & append** makes the WAL durable first (no page reaches the
//! device before its log records), then writes the sealed pages, then
//! merges ΔL2P/ΔVID into the device maps (the device fsyncs pages before
//! logging the merge).
//!
//! **Recovery**: load the catalog, the device's L2P and VID maps, then replay
//! the WAL after the last checkpoint (`crate::recovery`; from a backup's
//! checkpoint for a restore, `crate::backup`), rebuild the PK indexes,
//! and take a checkpoint. Uncommitted work never reached storage, so there
//! is nothing to undo.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, RwLock};

use ndpdb_formats::page::PageRef;
use ndpdb_formats::record::{RecordHeader, RecordView};
use ndpdb_formats::{
    Column, DataType, Lpn, Lsn, Ppn, RecId, Schema, SqlState, TableId, TxId, Value, Vid,
};
use ndpdb_link::{DeviceClient, VidEntry};
use ndpdb_wal::{CheckpointInfo, Wal};

use crate::autovacuum::Autovacuum;
use crate::buffer_pool::BufferPool;
use crate::catalog::{Catalog, ColumnDefault, Dependent, IndexMeta, TableMeta, ViewMeta};
use crate::checkpointer::Checkpointer;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::foreign_key::ForeignKeyMeta;
use crate::gc::GcState;
use crate::locks::LockTable;
use crate::maps::{L2pMap, VidMap};
use crate::pk_index::{self, encode_key, PkIndex};
use crate::recovery;
use crate::secondary_index::SecondaryIndex;
use crate::sequence::{Incarnation, SequenceMeta, Sequences};
use crate::shared_state::DeltaBuffer;
use crate::space::SpaceMap;
use crate::stats::{get, EngineCounters};
use crate::txn::{find_visible, Snapshot, TxManager, Visible};
use ndpdb_slt::SharedLockTable;

/// Runtime state of one table.
pub struct TableState {
    /// The catalog entry; replaced when `ALTER TABLE … ADD PRIMARY KEY`
    /// gives the table a key (nothing else changes it).
    meta: RwLock<Arc<TableMeta>>,
    /// The table's id (never changes; read without the catalog entry).
    pub id: TableId,
    pub types: Vec<DataType>,
    pub vids: VidMap,
    /// The primary-key index, once the table has a key.
    pub pk: OnceLock<PkIndex>,
    /// Update and lock jobs running on the device: they certify against
    /// heads captured when they started, so GC moves no head meanwhile.
    device_writers: AtomicU64,
    /// Versions written since the last GC run (autovacuum's trigger).
    pub(crate) changes_since_gc: AtomicU64,
    /// The horizon the last successful GC run collected below (0: none
    /// yet). Until the horizon passes it, another run finds nothing new.
    pub(crate) gc_horizon: AtomicU64,
    /// Secondary indexes, as the catalog entry lists them.
    indexes: RwLock<Vec<Arc<SecondaryIndex>>>,
}

/// Marks a device job that locks tuples of a table as running.
pub(crate) struct DeviceWriter<'a>(&'a AtomicU64);

impl Drop for DeviceWriter<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl TableState {
    fn new(meta: Arc<TableMeta>, vids: VidMap) -> TableState {
        TableState::with_pk(meta, vids, None)
    }

    /// A table whose PK index (if it has a key) is `pk`, or empty.
    fn with_pk(meta: Arc<TableMeta>, vids: VidMap, pk: Option<PkIndex>) -> TableState {
        let keyed = !meta.schema.primary_key.is_empty();
        let index = OnceLock::new();
        if keyed {
            let _ = index.set(pk.unwrap_or_default());
        }
        TableState {
            id: meta.id,
            types: meta.schema.types(),
            pk: index,
            meta: RwLock::new(meta),
            vids,
            device_writers: AtomicU64::new(0),
            changes_since_gc: AtomicU64::new(0),
            gc_horizon: AtomicU64::new(0),
            indexes: RwLock::new(Vec::new()),
        }
    }

    /// The table's secondary indexes.
    pub fn indexes(&self) -> Vec<Arc<SecondaryIndex>> {
        self.indexes.read().clone()
    }

    /// Whether `index` is (still) one of the table's indexes, or the
    /// primary key's ordered index.
    pub fn has_index(&self, index: &Arc<SecondaryIndex>) -> bool {
        self.indexes.read().iter().any(|i| Arc::ptr_eq(i, index))
            || self
                .pk
                .get()
                .and_then(PkIndex::ordered_if_built)
                .is_some_and(|o| Arc::ptr_eq(o, index))
    }

    /// The primary key in SQL order, as an index named `<table>_pkey`
    /// (`pk_index/order.rs`): built on the first call; `None` for a
    /// table without a key.
    pub fn key_order(&self) -> Result<Option<Arc<SecondaryIndex>>> {
        let meta = self.meta();
        let columns = &meta.schema.primary_key;
        let Some(pk) = self.pk.get().filter(|_| !columns.is_empty()) else {
            return Ok(None);
        };
        let types: Vec<DataType> = columns.iter().map(|&c| self.types[c]).collect();
        Ok(Some(pk.ordered(
            &meta.pk_constraint_name(),
            columns,
            &types,
        )?))
    }

    /// Whether a secondary index has column `c` in its key.
    pub fn indexes_column(&self, c: usize) -> bool {
        self.indexes
            .read()
            .iter()
            .any(|i| i.meta.columns.contains(&c))
    }

    /// Records a version of tuple `vid` with `row` in every index.
    pub(crate) fn index_row(&self, row: &[Value], vid: Vid) {
        for i in self.indexes.read().iter() {
            i.add(row, vid);
        }
    }

    /// The catalog entry after a rewrite renamed the table.
    pub(crate) fn replace_meta(&self, meta: Arc<TableMeta>) {
        *self.meta.write() = meta;
    }

    pub(crate) fn set_indexes(&self, indexes: Vec<Arc<SecondaryIndex>>) {
        *self.indexes.write() = indexes;
    }

    /// A new index and the catalog entry listing it (no transaction runs).
    pub(crate) fn attach_index(&self, index: Arc<SecondaryIndex>, meta: Arc<TableMeta>) {
        self.indexes.write().push(index);
        *self.meta.write() = meta;
    }

    pub(crate) fn detach_index(&self, name: &str, meta: Arc<TableMeta>) {
        self.indexes.write().retain(|i| i.meta.name != name);
        *self.meta.write() = meta;
    }

    /// Counts a device job that locks tuples until the guard drops; taken
    /// before the job captures the shared state.
    pub(crate) fn device_writer(&self) -> DeviceWriter<'_> {
        self.device_writers.fetch_add(1, Ordering::SeqCst);
        DeviceWriter(&self.device_writers)
    }

    /// Whether a device job that locks tuples is running (read under the
    /// delta-buffer lock, which such a job's capture also takes).
    pub(crate) fn device_writers_running(&self) -> bool {
        self.device_writers.load(Ordering::SeqCst) > 0
    }

    /// Gives the keyless table its key: the index, then the catalog
    /// entry naming the key (called with no transaction running).
    pub(crate) fn set_key(&self, meta: Arc<TableMeta>, index: PkIndex) -> Result<()> {
        self.pk.set(index).map_err(|_| {
            Error::new(
                SqlState::INVALID_TABLE_DEFINITION,
                format!(
                    "multiple primary keys for table \"{}\" are not allowed",
                    meta.name
                ),
            )
        })?;
        *self.meta.write() = meta;
        Ok(())
    }

    /// The table's catalog entry as of now.
    pub fn meta(&self) -> Arc<TableMeta> {
        self.meta.read().clone()
    }

    /// The encoded primary key of `row`, if the table has a key.
    pub fn pk_key(&self, row: &[Value]) -> Option<Vec<u8>> {
        let meta = self.meta.read();
        let pk = &meta.schema.primary_key;
        if pk.is_empty() {
            return None;
        }
        let vals: Vec<&Value> = pk.iter().map(|&i| &row[i]).collect();
        Some(encode_key(&vals))
    }
}

/// A version's record bytes (header + row body), gathered from the
/// minipages of a PAX page or copied from the delta buffer.
pub enum RecordBytes {
    Owned(Vec<u8>),
}

impl std::ops::Deref for RecordBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            RecordBytes::Owned(v) => v,
        }
    }
}

pub(crate) struct DbInner {
    /// Counts finished catalog changes ([`Database::catalog_generation`]).
    catalog_generation: AtomicU64,
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
    pub(crate) ssi: crate::ssi::Ssi,
    pub locks: LockTable,
    next_lpn: AtomicU64,
    /// Free and released device pages.
    pub(crate) space: SpaceMap,
    /// One garbage collection at a time; per table, what its last run found.
    pub(crate) gc: Mutex<GcState>,
    pub(crate) gc_running: Mutex<()>,
    pub(crate) autovacuum: Arc<Autovacuum>,
    /// Takes the checkpoints commits ask for (`crate::checkpointer`).
    pub(crate) checkpointer: Arc<Checkpointer>,
    /// A commit carried a table past its autovacuum threshold.
    pub(crate) gc_due: AtomicBool,
    /// Clones of the database users hold.
    user_handles: AtomicU64,
    /// SLT tags of transactions with update jobs.
    pub(crate) ndp_tags: Mutex<crate::ndp::TagPool>,
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
    pub(crate) violable: Mutex<rustc_hash::FxHashMap<TxId, Arc<crate::ndp::lock_violation::Eot>>>,
    flush_lock: Mutex<()>,
    pub(crate) checkpoint_gate: RwLock<()>,
    /// The next TxId of the WAL's last checkpoint record, set under the
    /// gate: the PK index manifest may name only that checkpoint.
    last_checkpoint: AtomicU64,
    /// One PK index save at a time (they run after the gate is released).
    pk_save: Mutex<()>,
    failed: AtomicBool,
    /// How a device process that restarted is joined again
    /// (`crate::reattach`); set when the host attaches to one.
    pub(crate) slt_opener: std::sync::OnceLock<crate::reattach::SltOpener>,
    pub counters: EngineCounters,
    pub recovery: RecoveryReport,
    /// Held open (and locked) while the database is open.
    _dir_lock: std::fs::File,
}

/// Most delta-buffer pages of a table an NDP job takes along (4 MiB).
pub const PASS_ALONG_MAX_PAGES: usize = 512;

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

impl Drop for DbInner {
    /// A clean shutdown: flush the delta buffer and checkpoint, so the next
    /// open has no log to replay. (After a crash, recovery does this.)
    fn drop(&mut self) {
        if !self.failed.load(Ordering::Acquire) {
            let _ = self.checkpoint();
        }
    }
}

/// What the last open had to recover.
/// What a CREATE TABLE declares besides its columns and primary key.
#[derive(Clone, Debug, Default)]
pub struct NewTable {
    /// Column defaults, by column position.
    pub defaults: Vec<ColumnDefault>,
    /// Sequences of SERIAL and identity columns, owned by the table.
    pub sequences: Vec<SequenceMeta>,
    /// Indexes of UNIQUE constraints.
    pub indexes: Vec<IndexMeta>,
    /// FOREIGN KEYs, resolved against the table.
    pub foreign_keys: Vec<ForeignKeyMeta>,
}

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

/// An open database. Cheap to clone; all clones share one engine. When
/// the last clone a user holds is dropped, the background worker stops
/// and the engine closes (final flush and checkpoint).
pub struct Database {
    pub(crate) inner: Arc<DbInner>,
    /// Held by a user (not the engine's own background worker).
    user: bool,
}

impl Clone for Database {
    fn clone(&self) -> Database {
        if self.user {
            self.inner.user_handles.fetch_add(1, Ordering::AcqRel);
        }
        Database {
            inner: self.inner.clone(),
            user: self.user,
        }
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if self.user && self.inner.user_handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.inner.autovacuum.stop();
            self.inner.checkpointer.stop();
        }
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
        let inner = DbInner {
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
            autovacuum: Arc::new(Autovacuum::default()),
            checkpointer: Arc::new(Checkpointer::default()),
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
        Autovacuum::start(&db.inner);
        Checkpointer::start(&db.inner);
        Ok(db)
    }

    /// A handle of the engine's own background worker.
    pub(crate) fn internal(inner: Arc<DbInner>) -> Database {
        Database { inner, user: false }
    }

    /// Closes this handle as a crash would: no final flush or checkpoint,
    /// so the next open recovers from the WAL. For tests and tools; other
    /// clones of the handle become unusable (58030).
    pub fn close_like_a_crash(self) {
        self.inner.fail();
    }

    /// The link preset the device's data plane runs under.
    pub fn link_model(&self) -> ndpdb_link::LinkModel {
        self.inner.device.model()
    }

    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    pub fn recovery_report(&self) -> RecoveryReport {
        self.inner.recovery.clone()
    }

    /// A number that grows with every DDL (CREATE, DROP or ALTER of a
    /// table, index, view, sequence or constraint), once the change has
    /// finished: a plan made when it read `g` may hold handles of objects
    /// changed since, if it now reads more than `g`.
    pub fn catalog_generation(&self) -> u64 {
        self.inner.catalog_generation.load(Ordering::Acquire)
    }

    pub fn table(&self, name: &str) -> Result<Arc<TableState>> {
        let meta = self
            .inner
            .catalog
            .lock()
            .get(name)
            .ok_or_else(|| Error::undefined_table(name))?;
        self.inner.table_state(meta.id)
    }

    pub fn tables(&self) -> Vec<Arc<TableMeta>> {
        self.inner.catalog.lock().tables()
    }

    /// The FOREIGN KEY constraints that refer to table `parent`, with
    /// their tables.
    pub fn referencing(&self, parent: &str) -> Vec<(Arc<TableMeta>, ForeignKeyMeta)> {
        self.inner.catalog.lock().referencing(parent)
    }

    pub fn create_table(&self, name: &str, schema: Schema) -> Result<Arc<TableMeta>> {
        self.create_table_with(name, schema, NewTable::default())
    }

    /// CREATE TABLE with column defaults and the sequences they draw
    /// from (SERIAL and identity columns; each owned by its column).
    /// CREATE TABLE with what its definition declares besides the columns:
    /// defaults and the sequences they own, the indexes of UNIQUE
    /// constraints and FOREIGN KEYs (resolved, see
    /// [`Database::resolve_foreign_key`]), all in one catalog write.
    pub fn create_table_with(
        &self,
        name: &str,
        mut schema: Schema,
        parts: NewTable,
    ) -> Result<Arc<TableMeta>> {
        let NewTable {
            defaults,
            sequences,
            indexes,
            foreign_keys,
        } = parts;
        self.inner.check_ok()?;
        let _change = self.inner.catalog_change();
        if self.relation_exists(name) {
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            ));
        }
        let mut names: Vec<&str> = vec![name];
        for other in sequences
            .iter()
            .map(|s| s.name.as_str())
            .chain(indexes.iter().map(|i| i.name.as_str()))
        {
            if self.relation_exists(other) || names.contains(&other) {
                return Err(Error::new(
                    SqlState::DUPLICATE_TABLE,
                    format!("relation \"{other}\" already exists"),
                ));
            }
            names.push(other);
        }
        if indexes
            .iter()
            .any(|i| i.columns.is_empty() || i.columns.iter().any(|&c| c >= schema.columns.len()))
        {
            return Err(Error::new(
                SqlState::UNDEFINED_COLUMN,
                "index column does not exist",
            ));
        }
        for &k in &schema.primary_key {
            if k >= schema.columns.len() {
                return Err(Error::new(
                    SqlState::UNDEFINED_COLUMN,
                    "primary key column does not exist",
                ));
            }
            schema.columns[k].nullable = false;
        }
        let mut seen = HashSet::new();
        for c in &schema.columns {
            if !seen.insert(c.name.as_str()) {
                return Err(Error::new(
                    SqlState::DUPLICATE_COLUMN,
                    format!("column \"{}\" specified more than once", c.name),
                ));
            }
        }
        let meta = self.inner.catalog.lock().create(
            name,
            schema,
            defaults,
            indexes.clone(),
            foreign_keys,
        )?;
        for mut s in sequences {
            if let Some((_, c)) = s.owner {
                s.owner = Some((meta.id, c));
            }
            self.inner.sequences.create(s)?;
        }
        let ts = TableState::new(meta.clone(), VidMap::default());
        ts.set_indexes(
            indexes
                .into_iter()
                .map(|i| Arc::new(SecondaryIndex::new(i)))
                .collect(),
        );
        self.inner.tables.write().insert(meta.id, Arc::new(ts));
        Ok(meta)
    }

    /// Whether `name` is taken by a table, an index or a sequence (one
    /// namespace, as PostgreSQL's relations).
    pub fn relation_exists(&self, name: &str) -> bool {
        let catalog = self.inner.catalog.lock();
        catalog.get(name).is_some()
            || catalog.view(name).is_some()
            || catalog.index_owner(name).is_some()
            || self.inner.sequences.exists(name)
    }

    /// `CREATE SEQUENCE`.
    pub fn create_sequence(&self, meta: SequenceMeta) -> Result<()> {
        self.inner.check_ok()?;
        let _change = self.inner.catalog_change();
        if self.relation_exists(&meta.name) {
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{}\" already exists", meta.name),
            ));
        }
        self.inner.sequences.create(meta)
    }

    /// `DROP SEQUENCE`.
    pub fn drop_sequence(&self, name: &str) -> Result<()> {
        self.inner.check_ok()?;
        let _change = self.inner.catalog_change();
        self.inner.sequences.drop_sequence(name)
    }

    /// A sequence's definition.
    /// The names of every sequence, in order.
    pub fn sequence_names(&self) -> Vec<String> {
        self.inner.sequences.names()
    }

    pub fn sequence(&self, name: &str) -> Option<SequenceMeta> {
        self.inner.sequences.get(name)
    }

    /// `nextval(name)`: never the same value twice, whatever the
    /// transactions that asked do.
    /// Also says which sequence of that name gave it.
    pub fn nextval(&self, name: &str) -> Result<(i64, Incarnation)> {
        self.inner.check_ok()?;
        self.inner.sequences.next(name)
    }

    /// `setval(name, value, called)`.
    pub fn setval(&self, name: &str, value: i64, called: bool) -> Result<(i64, Incarnation)> {
        self.inner.check_ok()?;
        self.inner.sequences.set(name, value, called)
    }

    /// Which sequence `name` is now (`None`: there is none).
    pub fn sequence_incarnation(&self, name: &str) -> Option<Incarnation> {
        self.inner.sequences.incarnation(name)
    }

    /// Drops table `name` (2BP01 if views depend on it).
    pub fn drop_table(&self, name: &str) -> Result<()> {
        self.drop_relations(&[name.to_string()], false).map(|_| ())
    }

    /// `DROP TABLE` / `DROP VIEW`: the tables and views `names` go in one
    /// catalog write, with the views that depend on them if `cascade`
    /// (else 2BP01 when any does); then the tables' storage. Returns the
    /// other objects dropped with them (`view v`, `constraint f on table t`).
    pub fn drop_relations(&self, names: &[String], cascade: bool) -> Result<Vec<String>> {
        self.inner.check_ok()?;
        let _change = self.inner.catalog_change();
        let (tables, views) = self.inner.catalog.lock().drop_relations(names, cascade)?;
        // Tables that kept their rows but lost constraints (CASCADE).
        for meta in self.inner.catalog.lock().tables() {
            if let Some(ts) = self.inner.tables.read().get(&meta.id) {
                if ts.meta().foreign_keys != meta.foreign_keys {
                    ts.replace_meta(meta.clone());
                }
            }
        }
        for meta in tables {
            self.inner.sequences.drop_owned_by(meta.id)?;
            self.inner.tables.write().remove(&meta.id);
            self.inner.delta.write().forget_table(meta.id);
            self.inner.device.drop_vid_map(meta.id)?;
            pk_index::remove(&pk_index::index_dir(&self.inner.dir), meta.id)?;
        }
        Ok(views)
    }

    /// `CREATE [OR REPLACE] VIEW` (see [`Catalog::create_view`]).
    pub fn create_view(
        &self,
        name: &str,
        sql: String,
        columns: Vec<Column>,
        depends: Vec<String>,
        replace: bool,
    ) -> Result<Arc<ViewMeta>> {
        self.inner.check_ok()?;
        let _change = self.inner.catalog_change();
        if self.inner.sequences.exists(name) {
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            ));
        }
        self.inner
            .catalog
            .lock()
            .create_view(name, sql, columns, depends, replace)
    }

    /// View `name`'s definition.
    pub fn view(&self, name: &str) -> Option<Arc<ViewMeta>> {
        self.inner.catalog.lock().view(name)
    }

    /// Every view, by name.
    pub fn views(&self) -> Vec<Arc<ViewMeta>> {
        self.inner.catalog.lock().views()
    }

    /// The views that depend on relations `names` (see
    /// [`Catalog::dependents`]).
    pub fn view_dependents(&self, names: &[String]) -> Vec<Dependent> {
        self.inner.catalog.lock().dependents(names)
    }

    /// Writes the delta buffer to the device (flush & append).
    pub fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// Flushes everything and starts a new WAL segment.
    pub fn checkpoint(&self) -> Result<()> {
        self.inner.checkpoint()
    }

    /// `(name, value)` rows for `SHOW STATS`.
    pub fn stats(&self) -> Vec<(String, i64)> {
        let i = &self.inner;
        let mut rows: Vec<(String, i64)> = i
            .device
            .stats()
            .rows()
            .into_iter()
            .map(|(k, v)| (k, v as i64))
            .collect();
        let (delta_bytes, delta_vids) = {
            let d = i.delta.read();
            (d.bytes(), d.delta_vid_len())
        };
        let c = &i.counters;
        let (free_pages, released_pages, file_pages) = i.space.counts();
        let page = ndpdb_formats::page::PAGE_SIZE as u64;
        let live_bytes = i.storage_live_bytes();
        let slt = i.locks.slt().map(|s| s.stats()).unwrap_or_default();
        let hits = get(&i.pool.hits);
        let misses = get(&i.pool.misses);
        rows.extend([
            ("buffer.hits".to_string(), hits as i64),
            ("buffer.misses".into(), misses as i64),
            ("buffer.scan_reads".into(), get(&i.pool.scan_reads) as i64),
            ("buffer.evictions".into(), get(&i.pool.evictions) as i64),
            (
                "buffer.resident_pages".into(),
                i.pool.resident_pages() as i64,
            ),
            (
                "buffer.capacity_pages".into(),
                i.pool.capacity_pages() as i64,
            ),
            ("delta_buffer.bytes".into(), delta_bytes as i64),
            ("delta_buffer.vid_entries".into(), delta_vids as i64),
            ("delta_buffer.flushes".into(), get(&c.delta_flushes) as i64),
            (
                "delta_buffer.pages_flushed".into(),
                get(&c.pages_flushed) as i64,
            ),
            ("slt.cas_attempts".into(), slt.cas_attempts as i64),
            ("slt.cas_failures".into(), slt.cas_failures as i64),
            ("wal.bytes".into(), get(&i.wal.stats.bytes) as i64),
            ("wal.fsyncs".into(), get(&i.wal.stats.fsyncs) as i64),
            (
                "wal.bytes_since_checkpoint".into(),
                i.wal.bytes_since_checkpoint() as i64,
            ),
            ("wal.checkpoints".into(), get(&c.checkpoints) as i64),
            (
                "pk_index.save_failures".into(),
                get(&c.pk_index_save_failures) as i64,
            ),
            (
                "wal.checkpoint_failures".into(),
                get(&c.checkpoint_failures) as i64,
            ),
            (
                "recovery.pk_indexes_loaded".into(),
                i.recovery.pk_indexes_loaded as i64,
            ),
            (
                "recovery.pk_indexes_rebuilt".into(),
                i.recovery.pk_indexes_rebuilt as i64,
            ),
            ("gc.runs".into(), get(&c.gc_runs) as i64),
            ("gc.failures".into(), get(&c.gc_failures) as i64),
            ("gc.micros".into(), i.gc_micros() as i64),
            (
                "gc.versions_reclaimed".into(),
                get(&c.gc_versions_reclaimed) as i64,
            ),
            (
                "gc.versions_relocated".into(),
                get(&c.gc_versions_relocated) as i64,
            ),
            ("gc.tuples_removed".into(), get(&c.gc_tuples_removed) as i64),
            ("gc.pages_freed".into(), get(&c.gc_pages_freed) as i64),
            ("gc.pages_scanned".into(), get(&c.gc_pages_scanned) as i64),
            ("gc.pages_skipped".into(), get(&c.gc_pages_skipped) as i64),
            (
                "index.dead_runs_jumped".into(),
                get(&c.dead_runs_jumped) as i64,
            ),
            ("storage.file_bytes".into(), (file_pages * page) as i64),
            ("storage.free_pages".into(), free_pages as i64),
            ("storage.released_pages".into(), released_pages as i64),
            ("storage.mapped_pages".into(), i.l2p.len() as i64),
            ("storage.live_bytes".into(), live_bytes as i64),
            ("txn.commits".into(), get(&c.commits) as i64),
            ("txn.aborts".into(), get(&c.aborts) as i64),
            (
                "txn.serialization_failures".into(),
                get(&c.serialization_failures) as i64,
            ),
            ("txn.deadlocks".into(), get(&c.deadlocks) as i64),
            ("txn.lock_waits".into(), get(&c.lock_waits) as i64),
            ("txn.active".into(), i.txm.active_count() as i64),
            ("ndp.calls".into(), get(&c.ndp_calls) as i64),
            (
                "ndp.shared_state_bytes".into(),
                get(&c.ndp_shared_bytes) as i64,
            ),
            ("ndp.result_rows".into(), get(&c.ndp_result_rows) as i64),
            ("ndp.device_micros".into(), get(&c.ndp_device_micros) as i64),
            ("ndp.pe_micros".into(), get(&c.ndp_pe_micros) as i64),
            ("ndp.tuples".into(), get(&c.ndp_tuples) as i64),
            ("ndp.pages_read".into(), get(&c.ndp_pages_read) as i64),
            ("ndp.pages_pruned".into(), get(&c.ndp_pages_pruned) as i64),
            ("ndp.bytes_touched".into(), get(&c.ndp_bytes_touched) as i64),
            ("scan.pages".into(), get(&c.scan_pages) as i64),
            ("scan.pages_pruned".into(), get(&c.scan_pages_pruned) as i64),
            (
                "scan.bytes_touched".into(),
                get(&c.scan_bytes_touched) as i64,
            ),
            ("ndp.rows_modified".into(), get(&c.ndp_rows_modified) as i64),
            (
                "ndp.space_round_trips".into(),
                get(&c.ndp_space_round_trips) as i64,
            ),
            ("ndp.early_aborts".into(), get(&c.ndp_early_aborts) as i64),
            (
                "ndp.validation_failures".into(),
                get(&c.ndp_validation_failures) as i64,
            ),
            (
                "ndp.device_lock_micros".into(),
                get(&c.ndp_device_lock_micros) as i64,
            ),
            (
                "ndp.overflow_bytes".into(),
                get(&c.ndp_overflow_bytes) as i64,
            ),
            (
                "ndp.overflow_streamed_bytes".into(),
                get(&c.ndp_overflow_streamed_bytes) as i64,
            ),
            (
                "ndp.lock_violations".into(),
                get(&c.ndp_lock_violations) as i64,
            ),
            (
                "ndp.pipelined_statements".into(),
                get(&c.ndp_pipelined) as i64,
            ),
            ("device.reattaches".into(), get(&c.device_reattaches) as i64),
            (
                "delta_buffer.flushes_deferred".into(),
                get(&c.flushes_deferred) as i64,
            ),
            (
                "ndp.commit_dependencies".into(),
                get(&c.ndp_commit_dependencies) as i64,
            ),
            (
                "ndp.violation_early_aborts".into(),
                get(&c.ndp_violation_early_aborts) as i64,
            ),
            (
                "ndp.overflow_micros".into(),
                get(&c.ndp_overflow_micros) as i64,
            ),
            (
                "ndp.host_release_micros".into(),
                get(&c.ndp_host_release_micros) as i64,
            ),
            ("locks.held".into(), i.locks.locked_keys() as i64),
            ("locks.waiting".into(), i.locks.waiting() as i64),
            ("ssi.tracked".into(), i.ssi.tracked() as i64),
        ]);
        rows
    }

    /// A single named counter (0 if unknown).
    /// Lock requests waiting now (host transactions).
    pub fn lock_waiters(&self) -> usize {
        self.inner.locks.waiting()
    }

    /// Pages the host buffer pool holds at most.
    pub fn buffer_pool_pages(&self) -> usize {
        self.inner.pool.capacity_pages()
    }

    pub fn stat(&self, name: &str) -> i64 {
        self.stats()
            .into_iter()
            .find(|(k, _)| k == name)
            .map_or(0, |(_, v)| v)
    }

    /// Checks that every PK index entry names a VID whose newest version
    /// carries that key, and that every live tuple is indexed.
    pub fn verify_pk_indexes(&self) -> Result<()> {
        let tables: Vec<Arc<TableState>> = self.inner.tables.read().values().cloned().collect();
        for ts in tables {
            let Some(pk) = ts.pk.get() else { continue };
            let mut indexed: HashMap<Vid, Vec<u8>> = HashMap::new();
            for (key, vid) in pk.entries()? {
                indexed.insert(vid, key);
            }
            for (vid, head) in ts.vids.entries() {
                let rec = self.inner.fetch(head)?;
                let view = RecordView::parse(&rec)?;
                let row = view.decode(&ts.types)?;
                let key = ts.pk_key(&row).unwrap_or_default();
                let unindexed_deleted = view.header.is_tombstone() && !indexed.contains_key(&vid);
                if indexed.get(&vid) != Some(&key) && !unindexed_deleted {
                    return Err(Error::new(
                        SqlState::DATA_CORRUPTED,
                        format!(
                            "PK index disagrees with VID map for {} vid {}",
                            ts.meta().name,
                            vid.0
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// [`DbInner::read_visible_head_row`] on the device page `page` of the
/// head: the row if `snapshot` sees the head, `Some(None)` for a
/// tombstone, `None` when the chain must be walked.
pub(crate) fn visible_head_row(
    page: &[u8],
    head: RecId,
    snapshot: &Snapshot,
    wanted: Option<&[bool]>,
) -> Result<Option<Option<Vec<Value>>>> {
    let view = PageRef::parse(page)?;
    if head.slot() >= view.slot_count() {
        return Ok(None);
    }
    visible_head_row_in(&view.columns_for(wanted)?, head, snapshot)
}

/// [`visible_head_row`] on a page whose columns a scan looked up once.
pub(crate) fn visible_head_row_in(
    columns: &ndpdb_formats::page::PageColumns<'_>,
    head: RecId,
    snapshot: &Snapshot,
) -> Result<Option<Option<Vec<Value>>>> {
    let view = &columns.page;
    if head.slot() >= view.slot_count() {
        return Ok(None);
    }
    let Some(header) = view.header(head.slot())? else {
        return Ok(None);
    };
    if !snapshot.sees(header.creator) {
        return Ok(None);
    }
    if header.is_tombstone() {
        return Ok(Some(None));
    }
    let mut row = Vec::with_capacity(view.column_count());
    columns.decode_row_into(head.slot(), &mut row)?;
    Ok(Some(Some(row)))
}

/// The record at `rid` inside a device page; `None` if the page has no
/// such slot (an older copy of the LPN).
fn record_if_present(page: &[u8], rid: RecId) -> Result<Option<RecordBytes>> {
    let view = PageRef::parse(page)?;
    if rid.slot() >= view.slot_count() {
        return Ok(None);
    }
    let rec = view.record(rid.slot())?.ok_or_else(|| {
        Error::from(ndpdb_formats::Error::corrupted(format!(
            "{rid} is an empty slot"
        )))
    })?;
    Ok(Some(RecordBytes::Owned(rec)))
}

/// The record at `rid` inside a device page.
fn record_in(page: &[u8], rid: RecId) -> Result<RecordBytes> {
    record_if_present(page, rid)?.ok_or_else(|| {
        Error::from(ndpdb_formats::Error::corrupted(format!(
            "{rid} is beyond its page"
        )))
    })
}

/// Marks a catalog change as finished when it goes out of scope
/// (success or not): plans made before then are made again.
pub(crate) struct CatalogChange<'a>(&'a AtomicU64);

impl Drop for CatalogChange<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Release);
    }
}

impl DbInner {
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

    /// `n` device pages to write (free ones first), none in the buffer pool.
    pub(crate) fn alloc_ppns(&self, n: usize) -> Vec<Ppn> {
        let ppns = self.space.alloc(n);
        for p in &ppns {
            // An earlier page at this PPN may still be cached.
            self.pool.forget(*p);
        }
        ppns
    }

    /// Frees the released pages nobody can read any more: their LPNs are
    /// unmapped on the device (durably) and on the host first.
    pub(crate) fn reclaim(&self) -> Result<()> {
        let oldest = self.txm.oldest_active();
        let Some(ripe) = self.space.ripe(oldest) else {
            return Ok(());
        };
        if !ripe.unmap.is_empty() {
            let unmap = ripe.unmap.iter().map(|l| (*l, Ppn::NONE)).collect();
            if let Err(e) = self.device.merge_maps(unmap, Vec::new()) {
                self.space.retry(ripe, oldest);
                return Err(e.into());
            }
            self.l2p.remove_all(&ripe.unmap);
        }
        self.space.free(ripe);
        Ok(())
    }

    /// Maps an update job's new pages on host and device. Safe before the
    /// job commits: no VID head points into them yet.
    pub(crate) fn map_ndp_pages(&self, l2p: &[(Lpn, Ppn)]) -> Result<()> {
        self.device.merge_maps(l2p.to_vec(), Vec::new())?;
        self.l2p.insert_all(l2p);
        Ok(())
    }

    /// The table's unflushed shared state: its delta-buffer pages and its
    /// ΔVID overlay (newest entry per VID), taken atomically. More than
    /// [`PASS_ALONG_MAX_PAGES`] pages are flushed instead (the device
    /// then reads them from its store), so that a job started right after
    /// a bulk commit does not carry a gigabyte of pages along.
    pub fn capture_shared(&self, table: TableId) -> Result<ndpdb_link::ndp::SharedState> {
        if self.delta.read().table_pages(table) > PASS_ALONG_MAX_PAGES {
            self.flush()?;
        }
        let captured = self.delta.read().capture(table);
        Ok(captured.into_shared())
    }

    /// The bytes of the record at `rid`: delta buffer first, then
    /// L2P → buffer pool (→ READ_PAGE on a miss).
    pub fn fetch(&self, rid: RecId) -> Result<RecordBytes> {
        Ok(self.fetch_in_page(rid)?.0)
    }

    /// [`DbInner::fetch`], also returning the device page it came from.
    fn fetch_in_page(&self, rid: RecId) -> Result<(RecordBytes, Option<crate::buffer_pool::Page>)> {
        if let Some(r) = self.delta.read().record(rid) {
            return Ok((RecordBytes::Owned(r?), None));
        }
        let ppn = self.l2p.get(rid.lpn()).ok_or_else(|| {
            Error::from(ndpdb_formats::Error::corrupted(format!(
                "{rid} points to an unmapped page"
            )))
        })?;
        let page = self.pool.get(ppn, &self.device)?;
        Ok((record_in(&page, rid)?, Some(page)))
    }

    /// A point read's fast path: when `head` lies on a flushed page and is
    /// the version `snapshot` sees, its row decoded straight from the
    /// page's minipages (`Some(None)` for a tombstone). `None` when the
    /// chain must be walked ([`DbInner::read_visible`]).
    pub fn read_visible_head_row(
        &self,
        head: RecId,
        snapshot: &Snapshot,
    ) -> Result<Option<Option<Vec<Value>>>> {
        if self.delta.read().has_page(head.lpn()) {
            return Ok(None);
        }
        let Some(ppn) = self.l2p.get(head.lpn()) else {
            return Ok(None);
        };
        let page = self.pool.get(ppn, &self.device)?;
        visible_head_row(&page, head, snapshot, None)
    }

    /// The version of the chain starting at `head` visible to `snapshot`.
    pub fn read_visible(&self, head: RecId, snapshot: &Snapshot) -> Result<Visible<RecordBytes>> {
        self.read_visible_with(head, snapshot, &mut None)
    }

    /// Like [`DbInner::read_visible`], reusing `last` — the device page of
    /// the previous record — without touching any lock when the record is
    /// on the same page (scans walk VIDs that mostly share pages). Safe
    /// because a page on the device is never modified.
    pub fn read_visible_with(
        &self,
        head: RecId,
        snapshot: &Snapshot,
        last: &mut Option<(Lpn, crate::buffer_pool::Page)>,
    ) -> Result<Visible<RecordBytes>> {
        find_visible(head, snapshot, |rid| {
            // The same LPN may have been flushed again since (flush &
            // append): an older copy lacks the newer slots.
            let cached = match last {
                Some((lpn, page)) if *lpn == rid.lpn() => record_if_present(page, rid)?,
                _ => None,
            };
            let bytes = match cached {
                Some(b) => b,
                None => {
                    let (b, page) = self.fetch_in_page(rid)?;
                    if let Some(page) = page {
                        *last = Some((rid.lpn(), page));
                    }
                    b
                }
            };
            let h = RecordHeader::parse(&bytes)?;
            Ok((h, bytes))
        })
    }

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

    /// Counts `n` new versions of `ts`; true when they carry it past its
    /// autovacuum threshold.
    pub(crate) fn count_changes(&self, ts: &TableState, n: u64) -> bool {
        let before = ts.changes_since_gc.fetch_add(n, Ordering::Relaxed);
        let limit = crate::autovacuum::threshold(self, ts);
        before < limit && before + n >= limit
    }

    /// Background-style maintenance after a commit.
    pub(crate) fn after_commit(&self) -> Result<()> {
        if self.delta.read().bytes() >= self.config.delta_buffer_bytes {
            // A flush already under way takes this commit's pages too.
            if let Some(guard) = self.flush_lock.try_lock() {
                self.flush_holding(guard)?;
            }
        }
        if self.wal.bytes_since_checkpoint() >= self.config.checkpoint_wal_bytes
            && !self.checkpointer.request()
        {
            self.checkpoint()?;
        }
        // After the flush: GC then finds the new heads on device pages.
        if self.gc_due.swap(false, Ordering::AcqRel) {
            self.autovacuum.wake();
        }
        Ok(())
    }

    pub fn flush(&self) -> Result<()> {
        self.flush_holding(self.flush_lock.lock())
    }

    /// Flush & append while holding the flush lock.
    fn flush_holding(&self, _flush: parking_lot::MutexGuard<'_, ()>) -> Result<()> {
        self.check_ok()?;
        let batch = self.delta.write().take_for_flush();
        if batch.pages.is_empty() && batch.delta_vid.is_empty() {
            return Ok(());
        }
        let result = (|| -> Result<Vec<(Lpn, Ppn)>> {
            // WAL before data.
            self.wal.sync(self.wal.current_lsn())?;
            self.reclaim()?;
            let ppns = self.alloc_ppns(batch.pages.len());
            let l2p: Vec<(Lpn, Ppn)> = batch
                .pages
                .iter()
                .zip(ppns)
                .map(|((lpn, _), ppn)| (*lpn, ppn))
                .collect();
            for chunk in batch.pages.chunks(64).zip(l2p.chunks(64)) {
                let pages: Vec<(Ppn, &[u8])> = chunk
                    .0
                    .iter()
                    .zip(chunk.1)
                    .map(|((_, image), (_, ppn))| (*ppn, &image[..]))
                    .collect();
                self.device.write_page_images(&pages)?;
            }
            let live: HashSet<TableId> = self.tables.read().keys().copied().collect();
            let vids: Vec<VidEntry> = batch
                .delta_vid
                .iter()
                .filter(|e| live.contains(&e.table))
                .copied()
                .collect();
            self.device.merge_maps(l2p.clone(), vids)?;
            Ok(l2p)
        })();
        let l2p = match result {
            Ok(l) => l,
            // The device is unreachable (or restarted): every page stays in
            // the delta buffer and the next flush writes it again. Pages
            // this attempt wrote are not referenced by the host's maps; a
            // map merge the device applied without answering is written
            // over by the retry.
            Err(e) if e.code == SqlState::CONNECTION_FAILURE => {
                EngineCounters::inc(&self.counters.flushes_deferred);
                return Err(e);
            }
            Err(e) => {
                self.fail();
                return Err(e);
            }
        };
        {
            let mut d = self.delta.write();
            // Older copies of re-flushed LPNs: free once their readers end.
            let replaced = self.l2p.insert_all(&l2p);
            self.space.release(self.txm.next_txid(), &[], &replaced);
            // A bulk flush would only evict the pages readers use (as
            // PostgreSQL's bulk writes keep to a ring of buffers).
            if batch.pages.len() <= self.pool.capacity_pages() / 8 {
                for ((_, image), (_, ppn)) in batch.pages.into_iter().zip(&l2p) {
                    self.pool.insert(*ppn, image);
                }
            }
            let lpns: Vec<Lpn> = l2p.iter().map(|(l, _)| *l).collect();
            d.complete_flush(&lpns, batch.delta_vid.len());
        }
        EngineCounters::inc(&self.counters.delta_flushes);
        self.counters
            .pages_flushed
            .fetch_add(l2p.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Writes the PK indexes that gained keys, then a manifest naming the
    /// checkpoint logged for `next_txid` — if that is still the WAL's last
    /// one. Runs after the checkpoint record, outside the gate: every key
    /// of a version the checkpoint covers was in the index before the
    /// record was logged (keys go in at insert time and never leave), so
    /// files written now hold a superset of them. A crash before the
    /// manifest leaves one naming an older checkpoint, and the next open
    /// rebuilds the indexes from the head records.
    pub(crate) fn save_pk_indexes(&self, next_txid: TxId, pace: pk_index::Pace<'_>) {
        let _one = self.pk_save.lock();
        let dir = pk_index::index_dir(&self.dir);
        let tables: Vec<Arc<TableState>> = self.tables.read().values().cloned().collect();
        let mut ok = true;
        for ts in &tables {
            if let Some(pk) = ts.pk.get() {
                ok &= pk.save(&dir, ts.id, pace).is_ok() && !pk.is_broken();
            }
        }
        if self.last_checkpoint.load(Ordering::Acquire) != next_txid.0 {
            // A later checkpoint was logged meanwhile: its own save names it.
            return;
        }
        if !(ok && pk_index::write_manifest(&dir, next_txid).is_ok()) {
            EngineCounters::inc(&self.counters.pk_index_save_failures);
        }
    }

    /// A checkpoint. Commits wait (the gate) only while the delta buffer's
    /// remainder is flushed and the record is logged: most of the buffer
    /// is flushed before; the older WAL segments are deleted and the PK
    /// index files written after.
    pub fn checkpoint(&self) -> Result<()> {
        // A spread save under way holds the PK index files this one waits
        // for.
        self.checkpointer.hurry();
        let (logged, removed) = self.checkpoint_record()?;
        self.save_pk_indexes(logged.next_txid, pk_index::Pace::DiskSpeed);
        removed
    }

    /// A checkpoint up to its PK index files: flush, the record under the
    /// gate, the older WAL segments deleted. Returns the record and the
    /// outcome of the deletion (segments left by a failure there go at
    /// the next checkpoint); the caller then calls
    /// [`Self::save_pk_indexes`].
    pub(crate) fn checkpoint_record(&self) -> Result<(Logged, Result<()>)> {
        self.flush()?;
        let logged = {
            let _g = self.checkpoint_gate.write();
            self.checkpoint_holding_gate()?
        };
        let removed = self.wal.remove_obsolete().map_err(Into::into);
        Ok((logged, removed))
    }

    /// The part of a checkpoint done while the caller holds the checkpoint
    /// gate: flush, sequences, the WAL record. The caller then releases
    /// the gate, deletes the older WAL segments (`Wal::remove_obsolete`)
    /// and calls [`Self::save_pk_indexes`].
    pub(crate) fn checkpoint_holding_gate(&self) -> Result<Logged> {
        self.check_ok()?;
        self.flush()?;
        let next_txid = self.txm.next_txid();
        self.sequences.checkpoint()?;
        let covered = std::mem::take(&mut *self.overflow_committed.lock());
        let at = match self.wal.log_checkpoint(CheckpointInfo { next_txid }) {
            Ok(at) => at,
            Err(e) => {
                self.fail();
                return Err(e.into());
            }
        };
        self.last_checkpoint.store(next_txid.0, Ordering::Release);
        if self.wal.retained_from().is_some() {
            // A restore from the kept backup replays those jobs.
            self.overflow_retained.lock().extend(covered);
        } else {
            // The maps now hold those jobs' pages durably.
            for start in covered {
                crate::ndp::overflow_log::remove(&self.dir, start)?;
            }
        }
        EngineCounters::inc(&self.counters.checkpoints);
        Ok(Logged { at, next_txid })
    }
}

/// A checkpoint record in the WAL.
pub(crate) struct Logged {
    pub at: Lsn,
    pub next_txid: TxId,
}
