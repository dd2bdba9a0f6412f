//! Savepoints: `SAVEPOINT`, `ROLLBACK TO SAVEPOINT`, `RELEASE SAVEPOINT`
//! (PostgreSQL's subtransactions, DESIGN.md §3).
//!
//! A transaction's work lives in its private write set, its lock set and
//! its update-NDP parts until commit, so a savepoint is a mark in each:
//!
//! ```text
//!   SAVEPOINT s   ─► mark = (undo log length, write order length,
//!                           locks taken so far, NDP parts so far)
//!   put / lock    ─► while a mark exists: undo log ← the write-set entry
//!                    it replaces; lock log ← a newly taken tuple lock
//!   ROLLBACK TO s ─► undo log replayed backwards to the mark, the write
//!                    order cut, the locks taken since released (waiters
//!                    go on, as in PostgreSQL), the NDP parts since
//!                    discarded: their versions' pages released, their
//!                    device locks freed, no End-NDP ever written
//!   RELEASE s     ─► the mark (and the later ones) forgotten
//! ```
//!
//! Nothing reaches the WAL before commit except the Start-NDP records of
//! update jobs; a discarded job has no End-NDP, which recovery treats as
//! never committed. Sequence values are not given back (as in PostgreSQL)
//! and SSI keeps what the rolled-back statements read.

use rustc_hash::FxHashSet;

use super::{Transaction, WriteEntry};
use crate::error::{Error, Result};
use crate::mvcc::locks::LockKey;
use ndpdb_formats::{SqlState, TableId, Vid};

/// Where a savepoint was taken.
pub(super) struct Mark {
    undo: usize,
    order: usize,
    locks: usize,
    ndp_parts: usize,
}

/// A savepoint of a transaction: its depth in the savepoint stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SavepointId(pub usize);

/// The entry a write replaced (`None`: the tuple had none).
pub(super) type Undo = ((TableId, Vid), Option<WriteEntry>);

impl Transaction {
    /// Takes a savepoint.
    pub fn savepoint(&mut self) -> SavepointId {
        self.savepoints.push(Mark {
            undo: self.undo.len(),
            order: self.order.len(),
            locks: self.lock_log.len(),
            ndp_parts: self.ndp_parts.len(),
        });
        SavepointId(self.savepoints.len() - 1)
    }

    /// Savepoints taken and not released.
    pub fn savepoint_count(&self) -> usize {
        self.savepoints.len()
    }

    /// Forgets savepoint `id` and those taken after it; their work stays.
    pub fn release_savepoint(&mut self, id: SavepointId) {
        self.savepoints.truncate(id.0);
        if self.savepoints.is_empty() {
            self.undo.clear();
            self.lock_log.clear();
        }
    }

    /// Undoes everything done since savepoint `id`, which stays (later
    /// ones go).
    pub fn rollback_to_savepoint(&mut self, id: SavepointId) -> Result<()> {
        let Some(mark) = self.savepoints.get(id.0) else {
            return Err(Error::new(
                SqlState::INTERNAL_ERROR,
                "no such savepoint in this transaction",
            ));
        };
        let (undo, order, locks, parts) = (mark.undo, mark.order, mark.locks, mark.ndp_parts);
        self.savepoints.truncate(id.0 + 1);
        while self.undo.len() > undo {
            let Some((key, before)) = self.undo.pop() else {
                break;
            };
            match before {
                Some(e) => self.writes.insert(key, e),
                None => self.writes.remove(&key),
            };
        }
        self.order.truncate(order);
        let taken: FxHashSet<LockKey> = self.lock_log.drain(locks..).collect();
        for k in &taken {
            self.locks.remove(k);
        }
        self.db.inner.locks.release_all(self.id, &taken);
        self.discard_parts_since(parts);
        Ok(())
    }

    /// Records the write-set entry a write is about to replace.
    pub(super) fn note_undo(&mut self, key: (TableId, Vid)) {
        if !self.savepoints.is_empty() {
            let before = self.writes.get(&key).cloned();
            self.undo.push((key, before));
        }
    }

    /// Records a tuple lock newly taken.
    pub(super) fn note_lock(&mut self, key: LockKey) {
        if !self.savepoints.is_empty() {
            self.lock_log.push(key);
        }
    }

    /// Discards the update-NDP statements after the first `keep`.
    fn discard_parts_since(&mut self, keep: usize) {
        if self.ndp_parts.len() <= keep {
            return;
        }
        if let Some(stage) = self.take_stage() {
            // Device memory only.
            let _ = self.release_stage(stage);
        }
        let dropped = self.ndp_parts.split_off(keep);
        // What the remaining statements hold.
        self.ndp_heads.clear();
        self.ndp_locked.clear();
        self.ndp_buckets.clear();
        let kept = std::mem::take(&mut self.ndp_parts);
        for part in kept {
            self.add_ndp_part(part);
        }
        let inner = self.db.inner.clone();
        let mut released_buckets = FxHashSet::default();
        for part in &dropped {
            if part.result.stage != 0 {
                let _ = inner.release_stages(&[part.result.stage]);
            }
            // The job's pages were mapped when it ended.
            inner.release_mapped(&part.result.delta.l2p);
            inner.free_space(&part.result.unused);
            if let Some(start) = part.start_ndp {
                self.overflow_streams.retain(|(s, _)| *s != start);
                if part.extended {
                    let _ = crate::ndp::overflow_log::remove(&inner.dir, start);
                }
            }
            // Device locks on buckets no remaining statement holds.
            let free: Vec<Vid> = match inner.locks.slt() {
                Some(slt) => part
                    .result
                    .locked
                    .iter()
                    .filter(|v| {
                        let b = slt.index((part.table, **v));
                        !self.ndp_buckets.contains(&b) && released_buckets.insert(b)
                    })
                    .copied()
                    .collect(),
                None => Vec::new(),
            };
            inner.release_job_locks(part.table, part.tag, &free);
        }
    }
}
