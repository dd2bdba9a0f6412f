//! `ALTER TABLE … ADD PRIMARY KEY`: a key for a table created without
//! one (pgbench creates its tables keyless, loads them, then adds keys).
//!
//! ```text
//!  wait until no transaction runs ─► TxManager held: none can begin
//!    every VID: visible version (all finished transactions) ─► key
//!      NULL in a key column ─► 23502     key seen before ─► 23505
//!    PK index of the keys ─► catalog (key columns NOT NULL), durable
//!    ─► table state: index and catalog entry set in place
//! ```
//!
//! The build runs while no transaction runs and none can begin (flushes,
//! checkpoints and GC go on: they take no TxId), so every
//! version is committed or gone, and no plan — prepared ones included —
//! writes the table meanwhile. Plans made before read the index and key
//! from the table state when they run, so they maintain the new index.
//! Deleted tuples (tombstone heads) are not indexed: a key re-inserted
//! after the key exists gets its own VID; only a live version names a
//! key, as the recovery rebuild keeps it (live heads win over
//! tombstones). The index reaches its files at the next checkpoint;
//! until then a crash rebuilds it from the heads at open.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ndpdb_formats::record::RecordView;
use ndpdb_formats::{SqlState, TxId, Vid};

use crate::db::{Database, Engine, TableState};
use crate::error::{Error, Result};
use crate::interrupt::Interrupt;
use crate::mvcc::snapshot::{find_visible, Snapshot, Visible};
use crate::storage::pk_index::{encode_key, PkIndex};

impl Database {
    /// Gives table `name` the primary key `key` (column positions),
    /// waiting up to `wait` for running transactions to end (55P03 after);
    /// `interrupt` (cancel, statement_timeout) ends the wait too.
    pub fn add_primary_key(
        &self,
        name: &str,
        key: &[usize],
        wait: Duration,
        interrupt: &Interrupt,
    ) -> Result<()> {
        let inner = &self.inner;
        inner.check_ok()?;
        let _change = inner.catalog_change();
        let ts = self.table(name)?;
        let meta = ts.meta();
        if ts.pk.get().is_some() {
            return Err(Error::new(
                SqlState::INVALID_TABLE_DEFINITION,
                format!("multiple primary keys for table \"{name}\" are not allowed"),
            ));
        }
        if key.is_empty() || key.iter().any(|&k| k >= meta.schema.columns.len()) {
            return Err(Error::new(
                SqlState::UNDEFINED_COLUMN,
                "primary key column does not exist",
            ));
        }
        for (i, k) in key.iter().enumerate() {
            if key[..i].contains(k) {
                return Err(Error::new(
                    SqlState::DUPLICATE_COLUMN,
                    format!(
                        "column \"{}\" appears twice in primary key constraint",
                        meta.schema.columns[*k].name
                    ),
                ));
            }
        }
        when_alone(name, wait, interrupt, || {
            inner.txm.exclusive(|next| inner.build_key(&ts, key, next))
        })
    }
}

/// Retries `attempt` (an exclusive section: `None` while a transaction
/// runs) until it runs, for up to `wait` (55P03 naming `relation` after);
/// `interrupt` (cancel, statement_timeout) ends the wait too. DDL that
/// needs the table to itself waits here, as PostgreSQL's waits for its
/// lock.
pub(crate) fn when_alone<R>(
    relation: &str,
    wait: Duration,
    interrupt: &Interrupt,
    mut attempt: impl FnMut() -> Option<Result<R>>,
) -> Result<R> {
    // No deadline when `wait` reaches beyond what an Instant holds.
    let deadline = Instant::now().checked_add(wait);
    loop {
        if let Some(done) = attempt() {
            return done;
        }
        interrupt.check()?;
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(Error::new(
                SqlState::LOCK_NOT_AVAILABLE,
                format!("could not obtain lock on relation \"{relation}\""),
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

impl Engine {
    /// Visits every tuple's latest version, all transactions below `next`
    /// finished (none runs: DDL builds, and the index build at open).
    pub(crate) fn latest_rows(
        &self,
        ts: &TableState,
        next: TxId,
        mut visit: impl FnMut(Vid, Vec<ndpdb_formats::Value>) -> Result<()>,
    ) -> Result<()> {
        let all_finished = Snapshot {
            txid: next,
            xmin: next,
            xmax: next,
            in_flight: Vec::new(),
        };
        for (vid, head) in ts.vids.entries() {
            let visible = find_visible(head, &all_finished, |rid| {
                let rec = self.fetch(rid)?;
                let header = RecordView::parse(&rec)?.header;
                Ok::<_, Error>((header, rec))
            })?;
            if let Visible::Version(_, rec) = visible {
                visit(vid, RecordView::parse(&rec)?.decode(&ts.types)?)?;
            }
        }
        Ok(())
    }

    /// The build, with no transaction running below `next`.
    fn build_key(&self, ts: &TableState, key: &[usize], next: TxId) -> Result<()> {
        let meta = ts.meta();
        let mut keys: HashMap<Vec<u8>, Vid> = HashMap::new();
        self.latest_rows(ts, next, |vid, row| {
            if let Some(&k) = key.iter().find(|&&k| row[k].is_null()) {
                return Err(Error::new(
                    SqlState::NOT_NULL_VIOLATION,
                    format!(
                        "column \"{}\" of relation \"{}\" contains null values",
                        meta.schema.columns[k].name, meta.name
                    ),
                ));
            }
            let values: Vec<_> = key.iter().map(|&k| &row[k]).collect();
            if keys.insert(encode_key(&values), vid).is_some() {
                return Err(Error::new(
                    SqlState::UNIQUE_VIOLATION,
                    format!(
                        "could not create unique index \"{}\"",
                        meta.pk_constraint_name()
                    ),
                )
                .with_detail(format!("{} is duplicated.", meta.key_detail(key, &row))));
            }
            Ok(())
        })?;
        let index = PkIndex::default();
        for (k, vid) in keys {
            index.insert(k, vid)?;
        }
        let meta = self.catalog.lock().set_primary_key(&meta.name, key)?;
        ts.set_key(meta, index)
    }
}
