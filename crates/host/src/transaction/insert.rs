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
//!             OnConflict::DoNothing → no row; under REPEATABLE READ a
//!                                     live row the snapshot does not
//!                                     see is 40001, as in PostgreSQL
//! ```
//!
//! A table without a primary key has no conflicts: every row gets a new
//! VID.

use ndpdb_formats::record::RecordHeader;
use ndpdb_formats::{RecId, SqlState, Value, Vid};

use super::{Isolation, Transaction};
use crate::database::TableState;
use crate::error::{Error, Result};

/// What an insert does when the key is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnConflict {
    /// 23505 unique_violation.
    Error,
    /// `ON CONFLICT DO NOTHING`: the row is not inserted.
    DoNothing,
}

impl Transaction {
    /// Inserts a row (values already of the column types).
    pub fn insert(&mut self, ts: &TableState, row: Vec<Value>) -> Result<Vid> {
        match self.insert_with(ts, row, OnConflict::Error)? {
            Some(vid) => Ok(vid),
            None => Err(Error::new(SqlState::INTERNAL_ERROR, "insert skipped a row")),
        }
    }

    /// Inserts a row; `None` when the key is taken and `on_conflict` is
    /// [`OnConflict::DoNothing`].
    pub fn insert_with(
        &mut self,
        ts: &TableState,
        row: Vec<Value>,
        on_conflict: OnConflict,
    ) -> Result<Option<Vid>> {
        self.check_row(ts, &row)?;
        let Some(pk) = ts.pk.get() else {
            let vid = ts.vids.allocate();
            self.put(ts, vid, RecId::NULL, &row, false)?;
            return Ok(Some(vid));
        };
        let key = ts.pk_key(&row).unwrap_or_default();
        let (vid, _) = pk.get_or_insert(key, || ts.vids.allocate())?;
        let lock_key = (ts.id, vid);
        if let Some(e) = self.writes.get(&lock_key) {
            if !e.tombstone {
                return match on_conflict {
                    OnConflict::Error => Err(Self::duplicate_key(ts, &row)),
                    OnConflict::DoNothing => Ok(None),
                };
            }
            let pred = e.pred;
            self.put(ts, vid, pred, &row, false)?;
            return Ok(Some(vid));
        }
        self.lock(lock_key)?;
        let head = self.head_of(ts, vid);
        if !head.is_null() {
            let bytes = self.db.inner.fetch(head)?;
            let h = RecordHeader::parse(&bytes)?;
            if !h.is_tombstone() {
                return match on_conflict {
                    OnConflict::Error => Err(Self::duplicate_key(ts, &row)),
                    OnConflict::DoNothing
                        if self.isolation != Isolation::ReadCommitted
                            && !self.snapshot.sees(h.creator) =>
                    {
                        Err(Error::serialization())
                    }
                    OnConflict::DoNothing => Ok(None),
                };
            }
        }
        self.put(ts, vid, head, &row, false)?;
        Ok(Some(vid))
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
