//! A SERIALIZABLE transaction's part in SSI (`crate::mvcc::ssi`): what its
//! reads and writes report, and its pre-commit check.
//!
//! ```text
//!   scan, device scan, index range ─► read  Table(t)
//!   primary-key lookup             ─► read  Key(t, hash(key))
//!   row written on the host        ─► write Key(t, hash(key))
//!   device UPDATE/DELETE           ─► write Table(t)
//!   COMMIT                         ─► pre-commit check ─► commit ─► committed
//! ```
//!
//! Transactions at other levels report nothing.

use ndpdb_formats::{TableId, Value, Vid};

use super::Transaction;
use crate::db::TableState;
use crate::error::Result;
use crate::mvcc::ssi::{key_hash, Target};
use crate::stats::EngineCounters;
use crate::storage::pk_index::encode_key;

impl Transaction {
    fn counted(&self, r: Result<()>) -> Result<()> {
        if r.is_err() {
            EngineCounters::inc(&self.db.inner.counters.serialization_failures);
        }
        r
    }

    /// Reports a read of `target` (a no-op below SERIALIZABLE).
    pub(crate) fn ssi_read(&self, target: Target) -> Result<()> {
        if !self.serializable {
            return Ok(());
        }
        self.counted(self.db.inner.ssi.read(self.id, target))
    }

    /// Reports a write of `target` (a no-op below SERIALIZABLE).
    pub(crate) fn ssi_write(&self, target: Target) -> Result<()> {
        if !self.serializable {
            return Ok(());
        }
        self.counted(self.db.inner.ssi.write(self.id, target))
    }

    /// A read of rows a predicate chose in a way SSI cannot name row by
    /// row (an index range): the whole table counts as read.
    pub fn read_predicate(&self, ts: &TableState) -> Result<()> {
        self.ssi_read(Target::Table(ts.id))
    }

    /// A primary-key lookup of `encoded`, a key of `columns` columns
    /// (found or not).
    pub(crate) fn ssi_read_key(
        &self,
        table: TableId,
        columns: usize,
        encoded: &[u8],
    ) -> Result<()> {
        self.ssi_read(Target::Key(table, key_hash(columns, encoded)))
    }

    /// A read of the rows whose first primary-key columns equal `prefix`
    /// (values of the columns' types): a scan filtered by `k1 = v, …`.
    pub fn read_key_prefix(&self, ts: &TableState, prefix: &[Value]) -> Result<()> {
        if !self.serializable {
            return Ok(());
        }
        let refs: Vec<&Value> = prefix.iter().collect();
        self.ssi_read_key(ts.id, prefix.len(), &encode_key(&refs))
    }

    /// A row written on the host: every prefix of its primary key, or for
    /// a table without one its VID (such a table is only read whole).
    pub(crate) fn ssi_write_row(&self, ts: &TableState, vid: Vid, row: &[Value]) -> Result<()> {
        if !self.serializable {
            return Ok(());
        }
        let pk = ts.meta().schema.primary_key.clone();
        if pk.is_empty() {
            let hash = key_hash(0, &vid.0.to_le_bytes());
            return self.ssi_write(Target::Key(ts.id, hash));
        }
        let values: Vec<&Value> = pk.iter().map(|&c| &row[c]).collect();
        for p in 1..=values.len() {
            let hash = key_hash(p, &encode_key(&values[..p]));
            self.ssi_write(Target::Key(ts.id, hash))?;
        }
        Ok(())
    }

    /// The pre-commit check of SSI.
    pub(super) fn ssi_pre_commit(&self) -> Result<()> {
        if !self.serializable {
            return Ok(());
        }
        self.counted(self.db.inner.ssi.pre_commit(self.id))
    }

    /// Registers with SSI at the first statement; returns the snapshot.
    pub(super) fn ssi_register(&mut self) {
        let inner = &self.db.inner;
        let id = self.id;
        self.snapshot = inner
            .ssi
            .register(id, self.read_only, || inner.txm.snapshot(id));
        self.serializable = true;
    }

    /// Tells SSI how the transaction ended.
    pub(super) fn ssi_end(&mut self, committed: bool) {
        if !std::mem::take(&mut self.serializable) {
            return;
        }
        match committed {
            true => self.db.inner.ssi.committed(self.id),
            false => self.db.inner.ssi.aborted(self.id),
        }
    }
}
