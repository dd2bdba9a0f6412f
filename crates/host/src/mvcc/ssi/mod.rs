//! Serializable Snapshot Isolation (DESIGN.md §3): SERIALIZABLE as
//! PostgreSQL implements it (Cahill et al.; Ports & Grittner, VLDB 2012).
//!
//! A SERIALIZABLE transaction runs at snapshot isolation and, besides,
//! records what it read and wrote here. A *rw-antidependency* `R ──rw──► W`
//! exists when `R` read data that a concurrent `W` wrote (`R` did not see
//! the write). Every non-serializable execution under snapshot isolation
//! contains a *dangerous structure*
//!
//! ```text
//!   T_in ──rw──► T_pivot ──rw──► T_out      with T_out committing first
//! ```
//!
//! so the registry aborts a transaction (40001) whenever one forms.
//!
//! ```text
//!   read  (scan, device scan, key lookup) ─► SIREAD lock on the table
//!          │                                  or on one primary key
//!          └─► a concurrent writer already marked it?  ─► R ──rw──► W
//!   write (host row or device bulk write)  ─► write mark on the key/table
//!          └─► a concurrent reader holds a SIREAD lock? ─► R ──rw──► W
//!   every new edge: a dangerous structure? ─► doom one (conflict.rs)
//!   commit: pre-commit check, then the commit sequence number
//! ```
//!
//! Reads are tracked per table or per primary key ([`targets`]): a table
//! scan — on the host or on the device, where the scan never reports
//! single rows — locks the whole table, which stays correct for any
//! predicate; a primary-key lookup locks its key (found or not, so a later
//! insert of the key conflicts) and a scan with `col = v` terms on the
//! first columns of a composite primary key locks that key prefix (rows
//! written mark every prefix of their key); more than [`KEYS_PER_TABLE`] key
//! locks of one transaction in one table are promoted to a table lock, as
//! PostgreSQL promotes predicate locks. Writes leave *write marks* at the
//! same granularities, so that a reader finds the concurrent writers of
//! what it reads without walking version chains (the device's visibility
//! walk cannot report them).
//!
//! A committed transaction's locks, marks and edges stay until no running
//! SERIALIZABLE transaction is concurrent with it. Only SERIALIZABLE
//! transactions take part; the others pay nothing.

mod conflict;
mod targets;

use std::sync::Arc;

use parking_lot::Mutex;
use rustc_hash::{FxHashMap, FxHashSet};

use ndpdb_formats::{TableId, TxId};

use crate::error::Result;
use crate::mvcc::snapshot::Snapshot;

use targets::Targets;

/// Key locks one transaction holds in one table before they become a
/// table lock.
pub const KEYS_PER_TABLE: usize = 64;

/// Where a doomed transaction learns of it (PostgreSQL's reason codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum During {
    ConflictOut,
    ConflictIn,
    Commit,
}

/// One SERIALIZABLE transaction's record.
pub(crate) struct Sxact {
    snapshot: Snapshot,
    /// The last commit sequence number handed out when the snapshot was
    /// taken.
    last_commit_before_snapshot: u64,
    /// Set by the pre-commit check: from then on it cannot be doomed.
    prepare_seq: Option<u64>,
    commit_seq: Option<u64>,
    /// Declared READ ONLY, or committed without writing.
    read_only: bool,
    did_write: bool,
    doomed: bool,
    /// At commit: the earliest commit among the committed transactions
    /// it had rw-conflicts out to (PostgreSQL's `earliestOutConflictCommit`).
    conflict_out: Option<u64>,
    /// Readers with an rw-antidependency on this transaction.
    ins: FxHashSet<TxId>,
    /// Writers this transaction has an rw-antidependency on.
    outs: FxHashSet<TxId>,
    /// Its SIREAD locks and write marks, for release.
    reads: targets::Held,
    writes: targets::Held,
}

impl Sxact {
    fn committed(&self) -> bool {
        self.commit_seq.is_some()
    }

    fn prepared(&self) -> bool {
        self.prepare_seq.is_some()
    }
}

/// All SERIALIZABLE transactions that can still take part in a conflict.
#[derive(Default)]
pub(crate) struct Graph {
    sxacts: FxHashMap<TxId, Sxact>,
    targets: Targets,
    last_commit_seq: u64,
}

/// The registry, one per database.
#[derive(Default, Clone)]
pub struct Ssi {
    graph: Arc<Mutex<Graph>>,
}

/// What a SERIALIZABLE transaction read or wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    Table(TableId),
    /// One value of the primary key or of a prefix of its columns (its
    /// [`key_hash`]).
    Key(TableId, u64),
}

/// The hash the first `columns` primary-key columns' values (encoded
/// as the primary-key index encodes keys) are locked and marked under: a
/// row written marks every prefix of its key, so a reader of `k1 = v`
/// on a key (k1, k2) conflicts with writers of rows with k1 = v only.
pub fn key_hash(columns: usize, encoded: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write_usize(columns);
    h.write(encoded);
    h.finish()
}

impl Ssi {
    /// Registers a SERIALIZABLE transaction at its first statement; its
    /// snapshot is taken by `take_snapshot` under the registry's lock, so
    /// that no transaction it cannot see is released meanwhile.
    pub(crate) fn register(
        &self,
        id: TxId,
        read_only: bool,
        take_snapshot: impl FnOnce() -> Snapshot,
    ) -> Snapshot {
        let mut g = self.graph.lock();
        let snapshot = take_snapshot();
        let last_commit_before_snapshot = g.last_commit_seq;
        g.sxacts.insert(
            id,
            Sxact {
                snapshot: snapshot.clone(),
                last_commit_before_snapshot,
                prepare_seq: None,
                commit_seq: None,
                read_only,
                did_write: false,
                doomed: false,
                conflict_out: None,
                ins: FxHashSet::default(),
                outs: FxHashSet::default(),
                reads: Default::default(),
                writes: Default::default(),
            },
        );
        snapshot
    }

    /// `me` read `target`: takes the SIREAD lock and flags rw-conflicts
    /// out to the concurrent transactions that wrote it.
    pub(crate) fn read(&self, me: TxId, target: Target) -> Result<()> {
        let mut g = self.graph.lock();
        g.check_doomed(me, During::ConflictOut)?;
        let writers = match g.lock_for_read(me, target) {
            Some(w) => w,
            None => return Ok(()),
        };
        for w in writers {
            g.conflict_out(me, w)?;
        }
        Ok(())
    }

    /// `me` wrote `target` (`Table`: rows anywhere in it, as a device
    /// bulk write does): marks it and flags rw-conflicts in from the
    /// concurrent transactions that read it.
    pub(crate) fn write(&self, me: TxId, target: Target) -> Result<()> {
        let mut g = self.graph.lock();
        g.check_doomed(me, During::ConflictIn)?;
        let readers = g.mark_write(me, target);
        for r in readers {
            g.conflict_in(r, me)?;
        }
        Ok(())
    }

    /// The pre-commit check: fails if `me` was doomed, dooms the pivot of
    /// a dangerous structure `me` completes, and makes `me` prepared.
    pub(crate) fn pre_commit(&self, me: TxId) -> Result<()> {
        self.graph.lock().pre_commit(me)
    }

    /// `me` committed (it is visible to new snapshots).
    pub(crate) fn committed(&self, me: TxId) {
        let mut g = self.graph.lock();
        g.commit(me);
        g.release_finished();
    }

    /// `me` aborted: everything it recorded goes.
    pub(crate) fn aborted(&self, me: TxId) {
        let mut g = self.graph.lock();
        g.remove(me);
        g.release_finished();
    }

    /// Transactions still tracked (running or committed and concurrent
    /// with a running one): `SHOW STATS`' `ssi.tracked`.
    pub fn tracked(&self) -> usize {
        self.graph.lock().sxacts.len()
    }
}

impl Graph {
    fn commit(&mut self, me: TxId) {
        self.last_commit_seq += 1;
        let seq = self.last_commit_seq;
        let Some(s) = self.sxacts.get_mut(&me) else {
            return;
        };
        s.commit_seq = Some(seq);
        if s.prepare_seq.is_none() {
            s.prepare_seq = Some(seq);
        }
        if !s.did_write {
            s.read_only = true;
        }
        let read_only = s.read_only;
        let outs: Vec<TxId> = s.outs.iter().copied().collect();
        let ins: Vec<TxId> = s.ins.iter().copied().collect();
        // Conflicts out to committed writers become the summary flag;
        // conflicts in from committed or read-only readers can no longer
        // take part in a dangerous structure.
        let mut earliest = self.sxacts[&me].conflict_out;
        for w in outs {
            let Some(ws) = self.sxacts.get(&w) else {
                continue;
            };
            if ws.committed() {
                if !read_only {
                    let p = ws.prepare_seq.unwrap_or(u64::MAX);
                    earliest = Some(earliest.map_or(p, |e| e.min(p)));
                }
                self.unlink(me, w);
            }
        }
        for r in ins {
            if self
                .sxacts
                .get(&r)
                .is_none_or(|rs| rs.committed() || rs.read_only)
            {
                self.unlink(r, me);
            }
        }
        if let Some(s) = self.sxacts.get_mut(&me) {
            s.conflict_out = earliest;
        }
    }

    fn unlink(&mut self, reader: TxId, writer: TxId) {
        if let Some(r) = self.sxacts.get_mut(&reader) {
            r.outs.remove(&writer);
        }
        if let Some(w) = self.sxacts.get_mut(&writer) {
            w.ins.remove(&reader);
        }
    }

    fn remove(&mut self, me: TxId) {
        let Some(s) = self.sxacts.remove(&me) else {
            return;
        };
        for w in &s.outs {
            if let Some(ws) = self.sxacts.get_mut(w) {
                ws.ins.remove(&me);
            }
        }
        for r in &s.ins {
            if let Some(rs) = self.sxacts.get_mut(r) {
                rs.outs.remove(&me);
            }
        }
        self.targets.release(me, &s.reads, &s.writes);
    }

    /// Drops committed transactions no running one is concurrent with:
    /// nothing they read or wrote can form a new conflict.
    fn release_finished(&mut self) {
        let running: Vec<&Snapshot> = self
            .sxacts
            .values()
            .filter(|s| !s.committed())
            .map(|s| &s.snapshot)
            .collect();
        let done: Vec<TxId> = self
            .sxacts
            .iter()
            .filter(|(id, s)| s.committed() && running.iter().all(|snap| snap.sees(**id)))
            .map(|(id, _)| *id)
            .collect();
        for id in done {
            self.remove(id);
        }
    }

    /// Fails if another transaction chose `me` to fail.
    fn check_doomed(&self, me: TxId, during: During) -> Result<()> {
        match self.sxacts.get(&me) {
            Some(s) if s.doomed => Err(conflict::failure(during.reason())),
            _ => Ok(()),
        }
    }
}

impl During {
    fn reason(self) -> &'static str {
        match self {
            During::ConflictOut => {
                "Canceled on identification as a pivot, during conflict out checking."
            }
            During::ConflictIn => {
                "Canceled on identification as a pivot, during conflict in checking."
            }
            During::Commit => "Canceled on identification as a pivot, during commit attempt.",
        }
    }
}

#[cfg(test)]
mod tests;
