//! Reads in key order through the primary key's ordered index, dropping
//! the entries of tuples that are dead to every snapshot as the read
//! passes them — as PostgreSQL's index scans mark dead index tuples so
//! later scans skip them.
//!
//! ```text
//!  ordered index ─► a batch of entries (4, 16, 64 … 1,024), looked at
//!  under its lock: a tombstone noted, still the head, its delete seen,
//!  and not yet droppable? ─► passed over there, not copied
//!  each entry copied out ─► its VID:
//!      a tombstone noted, still the head, its delete seen? ─► passed, no read
//!      visible version?  yes ─► visit (stop when it says so)
//!                        no  ─► a tombstone at the head? ─► noted
//!                               dead to every snapshot? (no head left,
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
//! A snapshot in use holds the horizon back: an analytical query running
//! for seconds keeps every order delivered meanwhile in the key order.
//! The noted tombstones (`pk_index::order`) let each Delivery pass those
//! entries with a map lookup instead of reading and parsing their pages,
//! and without copying them out of the index: at 10,000 such entries a
//! read of a district's oldest order took 0.99 ms through the wire when
//! each was copied, 0.28 ms when they are passed under the lock.
//! A note is trusted only while the tuple's head is the noted record (a
//! RecId is never reused) and the reader's snapshot sees the delete.
//!
//! Safety: an entry is dropped only while the dropping read holds the
//! tuple's lock and sees the head it judged dead. An insert of the key
//! takes that lock too, and puts the entry back once it holds it
//! (`insert.rs`: a key seen before, or any key when entries were dropped
//! since it looked the key up). So every tuple with a version some
//! snapshot sees keeps its entry.

use parking_lot::RwLockReadGuard;
use rustc_hash::FxHashMap;

use ndpdb_formats::record::RecordHeader;
use ndpdb_formats::{RecId, TxId, Value, Vid};

use super::Transaction;
use crate::db::TableState;
use crate::error::Result;
use crate::stats::EngineCounters;
use crate::storage::pk_index::Tombstone;
use crate::storage::secondary_index::{DeadRun, Entry, KeyRange, PassDead, SecondaryIndex};

/// Entries of the first batch; each next batch is four times larger, up
/// to [`MAX_BATCH`].
const FIRST_BATCH: usize = 4;
const MAX_BATCH: usize = 1024;

/// A tuple a key-order read passed without seeing it.
enum Unseen {
    /// No head left: GC removed the tuple.
    Gone,
    /// Its head is a tombstone.
    Deleted(Tombstone),
}

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
        // The primary key in order: its tombstones are noted and its
        // dead entries dropped.
        let pk = ts.pk.get().filter(|pk| {
            pk.ordered_if_built()
                .is_some_and(|o| std::ptr::eq(&**o, index))
        });
        // Taken once: a horizon only moves forward, so an older one is
        // a safe judge of "dead to every snapshot".
        let horizon = self.db.inner.txm.horizon();
        let mut dead: Vec<(Entry, RecId)> = Vec::new();
        let mut after: Option<Entry> = None;
        let mut batch = FIRST_BATCH;
        'walk: loop {
            let walked = {
                // Noted tombstones this read may trust and no read may
                // drop yet (an older snapshot may still see the tuple):
                // passed over under the index's lock, without a copy of
                // the entry. An analytical query holding the horizon for
                // a minute leaves thousands of them at the head of
                // NEW-ORDER's districts, and every Delivery passes them.
                let mut noted = NotedDead {
                    tx: self,
                    ts,
                    notes: pk.and_then(|pk| pk.noted_tombstones()),
                    horizon,
                };
                index.walk_in_order(range, descending, after.as_ref(), batch, &mut noted)
            };
            for entry in walked.kept {
                let vid = entry.1;
                // A tombstone noted before, still the head, and a delete
                // this snapshot sees: nothing to read.
                let note = pk.and_then(|pk| pk.tombstone(vid));
                let noted = note.filter(|t| self.trusts_note(ts, vid, t));
                let seen = match noted {
                    Some(_) => None,
                    None => self.get(ts, vid)?,
                };
                if let Some((rid, row)) = seen {
                    if !visit(vid, rid, row)? {
                        break 'walk;
                    }
                } else if let Some(pk) = pk {
                    let unseen = match noted {
                        Some(t) => Some(Unseen::Deleted(t)),
                        None => self.unseen(ts, vid)?,
                    };
                    match unseen {
                        Some(Unseen::Gone) => dead.push((entry, RecId::NULL)),
                        Some(Unseen::Deleted(t)) => {
                            // Written once per tombstone, not by every
                            // older snapshot that cannot use the note.
                            if note != Some(t) {
                                pk.note_tombstone(vid, t);
                            }
                            if t.deleter < horizon {
                                dead.push((entry, t.head));
                            }
                        }
                        None => {}
                    }
                }
            }
            if walked.ended {
                break;
            }
            after = walked.last;
            batch = (batch * 4).min(MAX_BATCH);
        }
        self.forget_dead(ts, dead);
        Ok(())
    }

    /// Whether a noted tombstone stands for what this transaction would
    /// read at `vid`: the tuple is not its own, the note is still the
    /// head (a RecId is never reused), and its snapshot sees the delete.
    fn trusts_note(&self, ts: &TableState, vid: Vid, t: &Tombstone) -> bool {
        !self.touched(ts, vid) && self.head_of(ts, vid) == t.head && self.snapshot.sees(t.deleter)
    }

    /// Whether this transaction's snapshot sees the delete of every
    /// tuple of `run` (its deleters committed: they were seen).
    fn sees_every_delete(&self, run: &DeadRun) -> bool {
        let s = &self.snapshot;
        run.newest < s.xmax && s.in_flight.iter().all(|t| !run.deleters.contains(t))
    }

    /// Whether this transaction touched any tuple of `run`
    /// ([`Self::touched`]), looking at whichever side is smaller.
    fn touched_any(&self, ts: &TableState, run: &DeadRun) -> bool {
        let mine =
            self.writes.len() + self.locks.len() + self.ndp_locked.len() + self.ndp_heads.len();
        if mine > run.vids.len() {
            return run.vids.iter().any(|&vid| self.touched(ts, vid));
        }
        let inside =
            |key: &(ndpdb_formats::TableId, Vid)| key.0 == ts.id && run.vids.contains(&key.1);
        self.writes.keys().any(inside)
            || self.locks.iter().any(inside)
            || self.ndp_locked.iter().any(inside)
            || self.ndp_heads.keys().any(inside)
    }

    /// Whether this transaction wrote, locked or holds a device head of
    /// `vid`: what it reads there is its own, never a noted tombstone.
    fn touched(&self, ts: &TableState, vid: Vid) -> bool {
        let key = (ts.id, vid);
        self.writes.contains_key(&key)
            || self.locks.contains(&key)
            || self.ndp_locked.contains(&key)
            || self.ndp_heads.contains_key(&key)
    }

    /// Why a tuple this transaction cannot see is unseen, when that may
    /// make its entry droppable: no head left (GC removed the tuple), or
    /// a tombstone at its head. `None` for a tuple this transaction
    /// touched, or one with a live head (created after the snapshot).
    fn unseen(&self, ts: &TableState, vid: Vid) -> Result<Option<Unseen>> {
        if self.touched(ts, vid) {
            return Ok(None);
        }
        let head = ts.vids.head(vid);
        if head.is_null() {
            return Ok(Some(Unseen::Gone));
        }
        let bytes = self.db.inner.fetch(head)?;
        let h = RecordHeader::parse(&bytes)?;
        Ok(h.is_tombstone().then_some(Unseen::Deleted(Tombstone {
            head,
            deleter: h.creator,
        })))
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

/// What a key-order read of a primary key passes over under the index's
/// lock: noted tombstones it may trust (`Transaction::trusts_note`) and
/// no read may drop yet (deleted at or after the horizon), one by one or
/// a remembered run of them at once (`secondary_index/dead_runs.rs`).
struct NotedDead<'a> {
    tx: &'a Transaction,
    ts: &'a TableState,
    /// `None`: not the primary key in order (nothing is passed over).
    notes: Option<RwLockReadGuard<'a, FxHashMap<Vid, Tombstone>>>,
    horizon: TxId,
}

impl PassDead for NotedDead<'_> {
    fn pass(&mut self, vid: Vid) -> Option<TxId> {
        let t = self.notes.as_ref()?.get(&vid)?;
        (t.deleter >= self.horizon && self.tx.trusts_note(self.ts, vid, t)).then_some(t.deleter)
    }

    fn unlocked(&mut self, vid: Vid) -> bool {
        !self.tx.db.inner.locks.is_locked((self.ts.id, vid))
    }

    /// A run's tuples still have the tombstones its reader passed (an
    /// insert of one of their keys would have ended it): this reader
    /// may jump over it when it sees every delete, touched none of the
    /// tuples, and no entry of the run may be dropped yet (else the walk
    /// reads them, and drops what it can).
    fn may_jump(&mut self, run: &DeadRun) -> bool {
        let may = self.notes.is_some()
            && run.oldest >= self.horizon
            && self.tx.sees_every_delete(run)
            && !self.tx.touched_any(self.ts, run);
        if may {
            EngineCounters::inc(&self.tx.db.inner.counters.dead_runs_jumped);
        }
        may
    }
}
