//! UNIQUE secondary indexes at write time: a new key value is checked
//! against every other tuple the index lists for it.
//!
//! ```text
//!  key with no NULL, new for this tuple
//!    ─► lock the key (secondary_index::key_lock): one writer of a key at a time
//!    ─► each other tuple the key names: this transaction's own row, or
//!       lock it (waits out its writer) and read its committed head
//!    ─► a live version with the key ─► 23505 (PostgreSQL's message and detail)
//! ```

use std::cmp::Ordering;

use ndpdb_formats::record::RecordView;
use ndpdb_formats::{SqlState, Value, Vid};

use super::Transaction;
use crate::db::TableState;
use crate::error::{Error, Result};
use crate::storage::secondary_index::{key_lock, SecondaryIndex};

fn same_key(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.sql_cmp(y) == Some(Ordering::Equal))
}

impl Transaction {
    /// Checks that tuple `vid` may take the keys of `new` in the table's
    /// UNIQUE indexes; `old` is the row it replaces (keys it already had
    /// need no check).
    pub(crate) fn check_unique(
        &mut self,
        ts: &TableState,
        vid: Vid,
        old: Option<&[Value]>,
        new: &[Value],
    ) -> Result<()> {
        for index in ts.indexes() {
            if !index.meta.unique {
                continue;
            }
            let key = index.key_of(new);
            if key.iter().any(Value::is_null) {
                continue;
            }
            if old.is_some_and(|old| same_key(&index.key_of(old), &key)) {
                continue;
            }
            self.lock(key_lock(ts.id, &index.meta.name, &key))?;
            for other in index.holders(&key, vid) {
                if self.has_key(ts, &index, other, &key)? {
                    return Err(Error::new(
                        SqlState::UNIQUE_VIOLATION,
                        format!(
                            "duplicate key value violates unique constraint \"{}\"",
                            index.meta.name
                        ),
                    )
                    .with_detail(format!(
                        "{} already exists.",
                        ts.meta().key_detail(&index.meta.columns, new)
                    )));
                }
            }
        }
        Ok(())
    }

    /// Whether tuple `vid` has a live version with `key`: this
    /// transaction's own, or the committed one once its writer is done.
    fn has_key(
        &mut self,
        ts: &TableState,
        index: &SecondaryIndex,
        vid: Vid,
        key: &[Value],
    ) -> Result<bool> {
        if let Some(e) = self.writes.get(&(ts.id, vid)) {
            if e.tombstone {
                return Ok(false);
            }
            return Ok(same_key(&index.key_of(&e.row(ts)?), key));
        }
        self.lock((ts.id, vid))?;
        let head = self.head_of(ts, vid);
        if head.is_null() {
            return Ok(false);
        }
        let bytes = self.db.inner.fetch(head)?;
        let view = RecordView::parse(&bytes)?;
        if view.header.is_tombstone() {
            return Ok(false);
        }
        Ok(same_key(&index.key_of(&view.decode(&ts.types)?), key))
    }
}
