//! One table's runtime state ([`TableState`]): its catalog entry, its
//! VID map (VID → newest version), its primary-key index and secondary
//! indexes, and the counters GC and autovacuum read.
//!
//! ```text
//!  TableState ── meta (catalog entry, replaced by ALTER TABLE)
//!             ├─ vids: VidMap          heads of the table's tuples
//!             ├─ pk: PkIndex           once the table has a key
//!             ├─ indexes               CREATE [UNIQUE] INDEX
//!             └─ device_writers        update / lock jobs running now
//!                                      (GC moves no head meanwhile)
//! ```
//!
//! Nothing here knows the engine: a table is handed to transactions, NDP
//! jobs and recovery as it is.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;

use ndpdb_formats::{DataType, SqlState, TableId, Value, Vid};

use crate::catalog::TableMeta;
use crate::error::{Error, Result};
use crate::storage::maps::VidMap;
use crate::storage::pk_index::{encode_key, PkIndex};
use crate::storage::secondary_index::SecondaryIndex;

/// Runtime state of one table.
pub struct TableState {
    /// The catalog entry; replaced when `ALTER TABLE … ADD PRIMARY KEY`
    /// gives the table a key (nothing else changes it).
    pub(super) meta: RwLock<Arc<TableMeta>>,
    /// The table's id (never changes; read without the catalog entry).
    pub id: TableId,
    pub types: Vec<DataType>,
    pub vids: VidMap,
    /// The primary-key index, once the table has a key.
    pub pk: OnceLock<PkIndex>,
    /// Update and lock jobs running on the device: they certify against
    /// heads captured when they started, so GC moves no head meanwhile.
    pub(super) device_writers: AtomicU64,
    /// Versions written since the last GC run (autovacuum's trigger).
    pub(crate) changes_since_gc: AtomicU64,
    /// The horizon the last successful GC run collected below (0: none
    /// yet). Until the horizon passes it, another run finds nothing new.
    pub(crate) gc_horizon: AtomicU64,
    /// Secondary indexes, as the catalog entry lists them.
    pub(super) indexes: RwLock<Vec<Arc<SecondaryIndex>>>,
}

/// Marks a device job that locks tuples of a table as running.
pub(crate) struct DeviceWriter<'a>(&'a AtomicU64);

impl Drop for DeviceWriter<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl TableState {
    pub(crate) fn new(meta: Arc<TableMeta>, vids: VidMap) -> TableState {
        TableState::with_pk(meta, vids, None)
    }

    /// A table whose PK index (if it has a key) is `pk`, or empty.
    pub(super) fn with_pk(meta: Arc<TableMeta>, vids: VidMap, pk: Option<PkIndex>) -> TableState {
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
