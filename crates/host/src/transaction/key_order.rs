//! Reads in key order through the primary key's ordered index, dropping
//! the entries of tuples that are dead to every snapshot as the read
//! passes them — as PostgreSQL's index scans mark dead index tuples so
//! later scans skip them.
//!
//! ```text
//!  ordered index ─► a batch of entries (4, 16, 64 … 1,024) ─► each VID:
//!      visible version?  yes ─► visit (stop when it says so)
//!                        no  ─► dead to every snapshot? (no head left,
//!                               or a tombstone older than the horizon)
//!                               ─► remembered
//!  after the walk, each remembered entry: its tuple's lock taken without
//!  waiting ─► still the same dead head? ─► entry dropped ─► lock released
//! ```
//!
//! Why: the key keeps its VID for life (`pk_index`), so a key deleted
//! stays in the ordered index. TPC-C's Delivery reads each district's
//! oldest NEW-ORDER (`ORDER BY no_o_id LIMIT 1`) and deletes it; without
//! dropping, each Delivery walked past every order delivered before, and
//! TPC-C's throughput at 10 warehouses fell by a third within three
//! minutes.
//!
//! Safety: an entry is dropped only while the dropping read holds the
//! tuple's lock and sees the head it judged dead. An insert of the key
//! takes that lock too, and puts the entry back once it holds it
//! (`insert.rs`: a key seen before, or any key when entries were dropped
//! since it looked the key up). So every tuple with a version some
//! snapshot sees keeps its entry.

use ndpdb_formats::record::RecordHeader;
use ndpdb_formats::{RecId, Value, Vid};

use super::Transaction;
use crate::database::TableState;
use crate::error::Result;
use crate::secondary_index::{Entry, KeyRange, SecondaryIndex};

/// Entries of the first batch; each next batch is four times larger, up
/// to [`MAX_BATCH`].
const FIRST_BATCH: usize = 4;
const MAX_BATCH: usize = 1024;

impl Transaction {
    /// Calls `visit` with the tuples of `range` in `index`'s key order
    /// (backwards when `descending`) that have a version this
    /// transaction sees, until it returns false. When `index` is `ts`'s
    /// primary key in order, entries of dead tuples the walk passed are
    /// dropped.
    pub fn read_in_key_order(
        &mut self,
        ts: &TableState,
        index: &SecondaryIndex,
        range: &KeyRange,
        descending: bool,
        mut visit: impl FnMut(Vid, RecId, Vec<Value>) -> Result<bool>,
    ) -> Result<()> {
        let is_pk_order = ts
            .pk
            .get()
            .and_then(|pk| pk.ordered_if_built())
            .is_some_and(|o| std::ptr::eq(&**o, index));
        let mut dead: Vec<(Entry, RecId)> = Vec::new();
        let mut after: Option<Entry> = None;
        let mut batch = FIRST_BATCH;
        'walk: loop {
            let entries = index.entries_in_order(range, descending, after.as_ref(), batch);
            let last_batch = entries.len() < batch;
            for entry in entries {
                let vid = entry.1;
                match self.get(ts, vid)? {
                    Some((rid, row)) => {
                        let more = visit(vid, rid, row)?;
                        if !more {
                            break 'walk;
                        }
                    }
                    None if is_pk_order => {
                        if let Some(head) = self.dead_to_all(ts, vid)? {
                            dead.push((entry.clone(), head));
                        }
                    }
                    None => {}
                }
                after = Some(entry);
            }
            if last_batch {
                break;
            }
            batch = (batch * 4).min(MAX_BATCH);
        }
        self.forget_dead(ts, dead);
        Ok(())
    }

    /// The head of `vid` if no snapshot can see a version of it: none
    /// left (GC removed the tuple), or a tombstone whose writer ended
    /// before every running transaction began. Never for a tuple this
    /// transaction wrote or holds.
    fn dead_to_all(&self, ts: &TableState, vid: Vid) -> Result<Option<RecId>> {
        let key = (ts.id, vid);
        if self.writes.contains_key(&key)
            || self.locks.contains(&key)
            || self.ndp_locked.contains(&key)
            || self.ndp_heads.contains_key(&key)
        {
            return Ok(None);
        }
        let head = ts.vids.head(vid);
        if head.is_null() {
            return Ok(Some(head));
        }
        let bytes = self.db.inner.fetch(head)?;
        let h = RecordHeader::parse(&bytes)?;
        let gone = h.is_tombstone() && h.creator < self.db.inner.txm.horizon();
        Ok(gone.then_some(head))
    }

    /// Drops the ordered entries of `dead` whose tuple's lock is free and
    /// whose head has not moved since.
    fn forget_dead(&self, ts: &TableState, dead: Vec<(Entry, RecId)>) {
        let Some(pk) = ts.pk.get() else {
            return;
        };
        let locks = &self.db.inner.locks;
        for (entry, head) in dead {
            let key = (ts.id, entry.1);
            if !locks.try_acquire(self.id, key) {
                continue;
            }
            pk.forget_ordered(&entry, || ts.vids.head(entry.1) == head);
            locks.release_all(self.id, [&key]);
        }
    }
}
