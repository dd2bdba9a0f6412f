//! A transaction's writes on the host: the tuple lock, certification
//! against the VID head, and the new version into the write set
//! (UPDATE, DELETE, SELECT … FOR UPDATE).
//!
//! ```text
//!   lock (table, vid) ──► head == version read? ──yes──► write new version
//!                                │ no (a newer version committed meanwhile)
//!                   SNAPSHOT ────┴──── READ COMMITTED
//!             40001 serialization      re-read the newest committed version,
//!             failure                  re-evaluate WHERE on it, write or skip
//! ```
//!
//! A tuple one of the transaction's update jobs holds on the device is
//! its own already; a key sharing an SLT bucket with such a tuple is
//! locked in the HLT only.

use ndpdb_formats::codec::Writer;
use ndpdb_formats::page::{PageBuf, PAGE_SIZE};
use ndpdb_formats::record::{encode_record, RecordHeader, FLAG_TOMBSTONE};
use ndpdb_formats::{RecId, SqlState, Value, Vid};

use super::{Isolation, Transaction, UpdateFn, WriteEntry, WriteOutcome};
use crate::db::TableState;
use crate::error::{Error, Result};
use crate::mvcc::locks::{Acquired, LockKey, LockMode};
use crate::stats::EngineCounters;

/// The current state of a locked tuple.
pub(super) enum Current {
    Own(Vec<Value>),
    Committed(RecId, Vec<Value>),
    Gone,
}

impl Transaction {
    pub(super) fn lock(&mut self, key: LockKey) -> Result<()> {
        if self.ndp_locked.contains(&key) {
            // One of this transaction's update jobs holds it.
            return Ok(());
        }
        let inner = &self.db.inner;
        // A key sharing an SLT bucket with a tuple one of this
        // transaction's update jobs locked: that bucket is already ours.
        let use_slt = match inner.locks.slt() {
            Some(slt) if !self.ndp_buckets.is_empty() => {
                !self.ndp_buckets.contains(&slt.index(key))
            }
            _ => true,
        };
        self.lock_as(key, LockMode::Exclusive, use_slt)
    }

    /// Locks relation name `name` for a CREATE or DROP of it, held to the
    /// end of this transaction ([`crate::mvcc::locks::relation_name_key`]):
    /// another transaction's CREATE of the name waits until this one
    /// ends, then finds the name taken or free.
    pub fn lock_relation_name(&mut self, name: &str) -> Result<()> {
        self.lock_as(
            crate::mvcc::locks::relation_name_key(name),
            LockMode::Exclusive,
            false,
        )
    }

    /// Takes `key` in `mode` (HLT only unless `use_slt`), held to the end.
    pub(super) fn lock_as(&mut self, key: LockKey, mode: LockMode, use_slt: bool) -> Result<()> {
        let inner = &self.db.inner;
        match inner.locks.acquire_mode(
            self.id,
            key,
            mode,
            self.lock_wait,
            use_slt,
            self.interrupt.as_ref(),
        ) {
            Ok(Acquired::Immediately) => {}
            Ok(Acquired::AfterWait) => EngineCounters::inc(&inner.counters.lock_waits),
            Err(e) => {
                if e.code == SqlState::DEADLOCK_DETECTED {
                    EngineCounters::inc(&inner.counters.deadlocks);
                }
                return Err(e);
            }
        }
        if self.locks.insert(key) {
            self.note_lock(key);
        }
        Ok(())
    }

    /// Locks a tuple read at version `seen` and certifies it (see module docs).
    /// `seen_row`: the version `seen` already decoded (by the scan that
    /// found it), so that an unmoved head is not read again.
    pub(super) fn lock_and_certify(
        &mut self,
        ts: &TableState,
        vid: Vid,
        seen: RecId,
        seen_row: Option<Vec<Value>>,
    ) -> Result<Current> {
        let key = (ts.id, vid);
        if let Some(e) = self.writes.get(&key) {
            return Ok(if e.tombstone {
                Current::Gone
            } else {
                Current::Own(e.row(ts)?)
            });
        }
        self.lock(key)?;
        let head = self.head_of(ts, vid);
        if head == seen {
            if let Some(row) = seen_row {
                return Ok(Current::Committed(head, row));
            }
            let bytes = self.db.inner.fetch(head)?;
            let (_, row) = Self::decode(ts, &bytes)?;
            return Ok(Current::Committed(head, row));
        }
        if head.is_null() {
            return match self.isolation {
                Isolation::Snapshot | Isolation::Serializable => {
                    EngineCounters::inc(&self.db.inner.counters.serialization_failures);
                    Err(Error::serialization())
                }
                Isolation::ReadCommitted => Ok(Current::Gone),
            };
        }
        let bytes = self.db.inner.fetch(head)?;
        let (h, row) = Self::decode(ts, &bytes)?;
        // A transaction committing with lock violation wrote the head.
        let violable = self.db.inner.violable_eot(h.creator);
        match self.isolation {
            Isolation::Snapshot | Isolation::Serializable => {
                // Garbage collection may have moved the version read: a
                // head this snapshot sees has no newer committed version.
                if self.snapshot.sees(h.creator) && !h.is_tombstone() {
                    return Ok(Current::Committed(head, row));
                }
                let counters = &self.db.inner.counters;
                EngineCounters::inc(&counters.serialization_failures);
                if violable.is_some() {
                    // Failed while that transaction commits, not after it.
                    EngineCounters::inc(&counters.ndp_violation_early_aborts);
                }
                Err(Error::serialization())
            }
            Isolation::ReadCommitted => {
                if let Some(eot) = violable {
                    // This one commits after it, or not at all.
                    self.dependencies.add(eot);
                }
                Ok(if h.is_tombstone() {
                    Current::Gone
                } else {
                    Current::Committed(head, row)
                })
            }
        }
    }

    /// Locks and certifies; `(predecessor, current row)` or `None` if gone.
    /// Rows of this transaction keep the predecessor of their first write.
    pub(super) fn lock_for_write(
        &mut self,
        ts: &TableState,
        vid: Vid,
        seen: RecId,
        seen_row: Option<Vec<Value>>,
    ) -> Result<Option<(RecId, Vec<Value>)>> {
        Ok(match self.lock_and_certify(ts, vid, seen, seen_row)? {
            Current::Gone => None,
            Current::Own(row) => Some((RecId::NULL, row)),
            Current::Committed(head, row) => Some((head, row)),
        })
    }

    pub(super) fn check_row(&self, ts: &TableState, row: &[Value]) -> Result<()> {
        let cols = &ts.meta().schema.columns;
        if row.len() != cols.len() {
            return Err(Error::new(
                SqlState::SYNTAX_ERROR,
                format!("row has {} values for {} columns", row.len(), cols.len()),
            ));
        }
        for (c, v) in cols.iter().zip(row) {
            if v.is_null() && !c.nullable {
                return Err(Error::new(
                    SqlState::NOT_NULL_VIOLATION,
                    format!(
                        "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                        c.name, ts.meta().name
                    ),
                ));
            }
        }
        Ok(())
    }

    pub(super) fn put(
        &mut self,
        ts: &TableState,
        vid: Vid,
        pred: RecId,
        row: &[Value],
        tombstone: bool,
    ) -> Result<()> {
        let key = (ts.id, vid);
        let pred = self.writes.get(&key).map_or(pred, |e| e.pred);
        if tombstone && pred.is_null() {
            // Inserted and deleted by this transaction: nothing to write.
            self.note_undo(key);
            self.writes.remove(&key);
            return Ok(());
        }
        let header = RecordHeader {
            creator: self.id,
            pred,
            vid,
            flags: if tombstone { FLAG_TOMBSTONE } else { 0 },
        };
        // Sized for the row up front: a bulk UPDATE encodes a million.
        let approx = row.iter().map(|v| match v {
            Value::Text(t) => t.len() + 4,
            Value::Bytea(b) => b.len() + 4,
            _ => 16,
        });
        let mut w = Writer::with_capacity(64 + approx.sum::<usize>());
        encode_record(&header, &ts.types, row, &mut w)?;
        let record = w.into_inner();
        let needed = PageBuf::bytes_for_one(&ts.types, &record)?;
        if needed > PAGE_SIZE {
            return Err(Error::new(
                SqlState::PROGRAM_LIMIT_EXCEEDED,
                format!("row is too big: size {needed}, maximum size {PAGE_SIZE}"),
            ));
        }
        if !self.writes.contains_key(&key) {
            self.ssi_write_row(ts, vid, row)?;
            self.order.push(key);
        }
        self.note_undo(key);
        self.writes.insert(
            key,
            WriteEntry {
                pred,
                tombstone,
                record,
            },
        );
        if !tombstone {
            ts.index_row(row, vid);
        }
        Ok(())
    }

    /// Updates the tuple read at version `seen`. `apply` gets the row the
    /// update applies to (under READ COMMITTED possibly a newer one) and
    /// returns the new row, or `None` if the row no longer qualifies.
    pub fn update(
        &mut self,
        ts: &TableState,
        vid: Vid,
        seen: RecId,
        apply: &mut UpdateFn<'_>,
    ) -> Result<WriteOutcome> {
        self.update_read(ts, vid, seen, None, apply)
    }

    /// [`Transaction::update`] with the whole row of version `seen` as the
    /// caller's scan decoded it: when the head has not moved, the version
    /// is not read again (a bulk UPDATE's scan has long evicted its page).
    pub fn update_read(
        &mut self,
        ts: &TableState,
        vid: Vid,
        seen: RecId,
        seen_row: Option<Vec<Value>>,
        apply: &mut UpdateFn<'_>,
    ) -> Result<WriteOutcome> {
        let Some((pred, row)) = self.lock_for_write(ts, vid, seen, seen_row)? else {
            return Ok(WriteOutcome::Skipped);
        };
        let Some(new_row) = apply(&row)? else {
            return Ok(WriteOutcome::Skipped);
        };
        self.check_row(ts, &new_row)?;
        if ts.pk.get().is_some() && ts.pk_key(&row) != ts.pk_key(&new_row) {
            // The key names the VID: a key change is delete + insert.
            self.put(ts, vid, pred, &row, true)?;
            self.insert_unchecked(ts, new_row.clone())?;
        } else {
            self.check_unique(ts, vid, Some(&row), &new_row)?;
            self.put(ts, vid, pred, &new_row, false)?;
        }
        self.check_references(ts, Some(&row), &new_row)?;
        self.on_referenced_change(ts, &row, Some(&new_row))?;
        Ok(WriteOutcome::Done(new_row))
    }

    /// Deletes the tuple read at version `seen` (writes a tombstone).
    /// `recheck` re-evaluates the predicate on a newer version (READ COMMITTED).
    pub fn delete(
        &mut self,
        ts: &TableState,
        vid: Vid,
        seen: RecId,
        recheck: &mut dyn FnMut(&[Value]) -> Result<bool>,
    ) -> Result<WriteOutcome> {
        self.delete_read(ts, vid, seen, None, recheck)
    }

    /// [`Transaction::delete`] with the whole row of version `seen` (see
    /// [`Transaction::update_read`]).
    pub fn delete_read(
        &mut self,
        ts: &TableState,
        vid: Vid,
        seen: RecId,
        seen_row: Option<Vec<Value>>,
        recheck: &mut dyn FnMut(&[Value]) -> Result<bool>,
    ) -> Result<WriteOutcome> {
        let Some((pred, row)) = self.lock_for_write(ts, vid, seen, seen_row)? else {
            return Ok(WriteOutcome::Skipped);
        };
        if !recheck(&row)? {
            return Ok(WriteOutcome::Skipped);
        }
        self.put(ts, vid, pred, &row, true)?;
        self.on_referenced_change(ts, &row, None)?;
        Ok(WriteOutcome::Done(row))
    }

    /// SELECT … FOR UPDATE: locks and certifies the tuple; returns the row
    /// as locked.
    pub fn lock_row(
        &mut self,
        ts: &TableState,
        vid: Vid,
        seen: RecId,
        recheck: &mut dyn FnMut(&[Value]) -> Result<bool>,
    ) -> Result<WriteOutcome> {
        let row = match self.lock_and_certify(ts, vid, seen, None)? {
            Current::Gone => return Ok(WriteOutcome::Skipped),
            Current::Own(row) | Current::Committed(_, row) => row,
        };
        Ok(if recheck(&row)? {
            WriteOutcome::Done(row)
        } else {
            WriteOutcome::Skipped
        })
    }
}
