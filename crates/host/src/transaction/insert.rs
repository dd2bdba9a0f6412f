//! Inserting a row: the primary key names the VID, the key's lock keeps a
//! concurrent inserter of the same key out, and the head says whether a
//! live row already holds the key.
//!
//! ```text
//!  row ─► PK index: key → VID (allocated on first sight)
//!      ─► this transaction wrote the VID?   live → conflict, tombstone → put
//!      ─► lock (ts, VID)  (waits for another writer of the key)
//!      ─► head live?  → conflict          else put over the head
//!
//!  conflict:  OnConflict::Error     → 23505 with PostgreSQL's detail
//!             OnConflict::DoNothing → Inserted::Skipped
//!             OnConflict::Report    → Inserted::Conflict (the key's lock
//!                                     held: ON CONFLICT DO UPDATE then
//!                                     updates that row)
//!             under REPEATABLE READ a live row the snapshot does not
//!             see is 40001 for both, as in PostgreSQL
//! ```
//!
//! A table without a primary key has no conflicts: every row gets a new
//! VID.

use ndpdb_formats::record::RecordHeader;
use ndpdb_formats::{RecId, SqlState, Value, Vid};

use super::{Isolation, Transaction};
use crate::db::TableState;
use crate::error::{Error, Result};

/// What an insert does when the key is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnConflict {
    /// 23505 unique_violation.
    Error,
    /// `ON CONFLICT DO NOTHING`: the row is not inserted.
    DoNothing,
    /// `ON CONFLICT DO UPDATE`: the row holding the key is reported.
    Report,
}

/// What an insert did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inserted {
    Row(Vid),
    /// The key was taken ([`OnConflict::DoNothing`]).
    Skipped,
    /// The key is taken by the live row `vid` whose current version is
    /// `head` (`RecId::NULL`: this transaction's own row); its lock is
    /// held ([`OnConflict::Report`]).
    Conflict {
        vid: Vid,
        head: RecId,
    },
}

impl Transaction {
    /// Inserts a row (values already of the column types).
    pub fn insert(&mut self, ts: &TableState, row: Vec<Value>) -> Result<Vid> {
        match self.insert_with(ts, row, OnConflict::Error)? {
            Inserted::Row(vid) => Ok(vid),
            _ => Err(Error::new(SqlState::INTERNAL_ERROR, "insert skipped a row")),
        }
    }

    /// Inserts a row, or says which row holds its key (`on_conflict`);
    /// the row's foreign keys are checked once it is written.
    pub fn insert_with(
        &mut self,
        ts: &TableState,
        row: Vec<Value>,
        on_conflict: OnConflict,
    ) -> Result<Inserted> {
        if ts.meta().foreign_keys.is_empty() {
            return self.insert_row(ts, row, on_conflict);
        }
        let inserted = self.insert_row(ts, row.clone(), on_conflict)?;
        if let Inserted::Row(_) = inserted {
            self.check_references(ts, None, &row)?;
        }
        Ok(inserted)
    }

    /// The insert half of an UPDATE that changes the primary key (its
    /// caller checks the foreign keys of the whole update).
    pub(super) fn insert_unchecked(&mut self, ts: &TableState, row: Vec<Value>) -> Result<Vid> {
        match self.insert_row(ts, row, OnConflict::Error)? {
            Inserted::Row(vid) => Ok(vid),
            _ => Err(Error::new(SqlState::INTERNAL_ERROR, "insert skipped a row")),
        }
    }

    fn insert_row(
        &mut self,
        ts: &TableState,
        row: Vec<Value>,
        on_conflict: OnConflict,
    ) -> Result<Inserted> {
        self.check_row(ts, &row)?;
        let Some(pk) = ts.pk.get() else {
            let vid = ts.vids.allocate();
            self.check_unique(ts, vid, None, &row)?;
            self.put(ts, vid, RecId::NULL, &row, false)?;
            return Ok(Inserted::Row(vid));
        };
        let key = ts.pk_key(&row).unwrap_or_default();
        let forgotten = pk.forgotten();
        let (vid, fresh) = pk.get_or_insert(&key, || ts.vids.allocate())?;
        let lock_key = (ts.id, vid);
        if let Some(e) = self.writes.get(&lock_key) {
            if !e.tombstone {
                return match on_conflict {
                    OnConflict::Error => Err(Self::duplicate_key(ts, &row)),
                    OnConflict::DoNothing => Ok(Inserted::Skipped),
                    OnConflict::Report => Ok(Inserted::Conflict {
                        vid,
                        head: RecId::NULL,
                    }),
                };
            }
            let pred = e.pred;
            self.check_unique(ts, vid, None, &row)?;
            self.put(ts, vid, pred, &row, false)?;
            return Ok(Inserted::Row(vid));
        }
        self.lock(lock_key)?;
        // A key-order read drops the ordered entry of a tuple dead to
        // every snapshot while it holds the tuple's lock: the entry of a
        // key inserted again, or one dropped since `get_or_insert`, is
        // put back now that this insert holds it.
        if !fresh || pk.forgotten() != forgotten {
            pk.restore_ordered(&key, vid)?;
        }
        let head = self.head_of(ts, vid);
        if !head.is_null() {
            let bytes = self.db.inner.fetch(head)?;
            let h = RecordHeader::parse(&bytes)?;
            if !h.is_tombstone() {
                if on_conflict == OnConflict::Error {
                    return Err(Self::duplicate_key(ts, &row));
                }
                if self.isolation != Isolation::ReadCommitted && !self.snapshot.sees(h.creator) {
                    return Err(Error::serialization());
                }
                return Ok(match on_conflict {
                    OnConflict::Report => Inserted::Conflict { vid, head },
                    _ => Inserted::Skipped,
                });
            }
        }
        self.check_unique(ts, vid, None, &row)?;
        self.put(ts, vid, head, &row, false)?;
        Ok(Inserted::Row(vid))
    }

    fn duplicate_key(ts: &TableState, row: &[Value]) -> Error {
        let meta = ts.meta();
        Error::new(
            SqlState::UNIQUE_VIOLATION,
            format!(
                "duplicate key value violates unique constraint \"{}\"",
                meta.pk_constraint_name()
            ),
        )
        .with_detail(format!(
            "{} already exists.",
            meta.key_detail(&meta.schema.primary_key, row)
        ))
    }
}
