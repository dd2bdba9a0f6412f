//! Controlled lock violation (update NDP §5.4; Graefe et al., SIGMOD
//! 2013): while an update-NDP transaction moves its overflow logs to the
//! host, the rows it changed need not stay out of reach.
//!
//! ```text
//!  TX_NDP commit      validate ΔVID ─ apply heads ─┬─ move overflow logs ─ End-NDP + commit ─ EOT
//!                     (violable from here on)      │     (slow: pages read, written, fsync'd)  │
//!  host waiter        waits on the SLT ───────────►│ takes the lock, certifies:                │
//!                                                  │  snapshot older than the new head → 40001 │
//!                                                  │  (early abort); READ COMMITTED → writes   │
//!                                                  │  on the NDP version, commit dependency    │
//!                     COMMIT ─────────────────────────── waits for EOT ───────────────────────►│ commit
//! ```
//!
//! The violable state starts once the transaction can no longer fail
//! validation: its ΔVID is checked and the host's VID heads point at its
//! versions, whose creator is still in flight (so no snapshot sees them
//! and readers walk past them). Its SLT buckets are marked violable in
//! the lock table; host waiters take them past its device tag. The heads
//! reach the delta buffer's ΔVID list (and so the device's maps) only
//! with the commit, so a crash in the window leaves nothing of it on
//! storage, and no dependent has logged its commit record either: a
//! dependent appends it only after the NDP transaction's commit record is
//! durable (its end of transaction, EOT), and aborts if that transaction
//! fails. Recovery therefore never sees a dependent without its NDP
//! transaction. Device jobs do not violate locks (they wait as before).

use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use ndpdb_formats::{SqlState, TxId};
use ndpdb_slt::DeviceTag;

use super::validate::parts_still_valid;
use super::NdpPart;
use crate::database::DbInner;
use crate::error::{Error, Result};
use crate::stats::EngineCounters;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Pending,
    Committed,
    Failed,
}

/// The end of a violable transaction, which its dependents wait for.
pub(crate) struct Eot {
    txid: TxId,
    state: Mutex<State>,
    done: Condvar,
}

impl Eot {
    fn finish(&self, committed: bool) {
        *self.state.lock() = if committed {
            State::Committed
        } else {
            State::Failed
        };
        self.done.notify_all();
    }

    /// Waits for the end; whether the transaction committed.
    fn wait(&self) -> bool {
        let mut s = self.state.lock();
        while *s == State::Pending {
            self.done.wait(&mut s);
        }
        *s == State::Committed
    }
}

/// A transaction's violable state while it commits.
pub(crate) struct Violable {
    eot: Arc<Eot>,
    tag: DeviceTag,
}

impl DbInner {
    /// Enters the violable state (see the module docs): the ΔVIDs of
    /// `parts` validated and their heads set, the transaction's SLT
    /// buckets open to waiters.
    pub(crate) fn enter_violable(
        &self,
        txid: TxId,
        tag: DeviceTag,
        parts: &[NdpPart],
    ) -> Result<Violable> {
        {
            let _gate = self.checkpoint_gate.read();
            // Commits set heads under this lock too.
            let _delta = self.delta.write();
            let tables = self.tables.read();
            if parts.iter().any(|p| !tables.contains_key(&p.table)) {
                return Err(Error::new(
                    SqlState::UNDEFINED_TABLE,
                    "a table written by this transaction was dropped",
                ));
            }
            if !parts_still_valid(parts, |t| tables.get(&t).map(|ts| &**ts)) {
                EngineCounters::inc(&self.counters.ndp_validation_failures);
                return Err(Error::serialization());
            }
            for part in parts {
                let ts = &tables[&part.table];
                for d in &part.result.delta.vids {
                    ts.vids.set(d.vid, d.new);
                }
            }
        }
        let eot = Arc::new(Eot {
            txid,
            state: Mutex::new(State::Pending),
            done: Condvar::new(),
        });
        self.violable.lock().insert(txid, eot.clone());
        EngineCounters::inc(&self.counters.ndp_lock_violations);
        self.locks.set_violable(tag, true);
        Ok(Violable { eot, tag })
    }

    /// Ends the violable state before the transaction's locks go: the
    /// waiters still queued wait for the release again.
    pub(crate) fn close_violable(&self, v: &Violable) {
        self.locks.set_violable(v.tag, false);
    }

    /// A violable transaction that fails after all (its overflow logs
    /// could not be moved, or its commit record not written): its heads
    /// go back, before its locks do. No dependent committed on them.
    pub(crate) fn undo_violable_heads(&self, parts: &[NdpPart]) {
        let _delta = self.delta.write();
        let tables = self.tables.read();
        // Newest job first: a pipeline's DELETE goes back to its UPDATE's
        // versions, those to the committed ones.
        for part in parts.iter().rev() {
            let Some(ts) = tables.get(&part.table) else {
                continue;
            };
            for d in &part.result.delta.vids {
                if ts.vids.head(d.vid) == d.new {
                    ts.vids.set(d.vid, d.pred);
                }
            }
        }
    }

    /// The transaction ended (`committed` and visible to new snapshots,
    /// or aborted; [`DbInner::close_violable`] came first): its
    /// dependents go on, or fail.
    pub(crate) fn leave_violable(&self, v: Violable, committed: bool) {
        self.violable.lock().remove(&v.eot.txid);
        v.eot.finish(committed);
    }

    /// The violable transaction `creator`, if it is one.
    pub(crate) fn violable_eot(&self, creator: TxId) -> Option<Arc<Eot>> {
        let map = self.violable.lock();
        if map.is_empty() {
            return None;
        }
        map.get(&creator).cloned()
    }
}

/// What a transaction that wrote on a violable transaction's versions
/// waits for before it commits.
#[derive(Default)]
pub(crate) struct Dependencies(Vec<Arc<Eot>>);

impl Dependencies {
    pub fn add(&mut self, eot: Arc<Eot>) {
        if !self.0.iter().any(|e| Arc::ptr_eq(e, &eot)) {
            self.0.push(eot);
        }
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Waits until every transaction depended on has ended; fails if one
    /// did not commit.
    pub fn wait(&self, txid: TxId) -> Result<()> {
        for eot in &self.0 {
            if !eot.wait() {
                return Err(Error::new(
                    SqlState::SERIALIZATION_FAILURE,
                    format!(
                        "could not serialize access: transaction {} whose rows transaction {txid} changed during its commit (lock violation) did not commit",
                        eot.txid
                    ),
                ));
            }
        }
        Ok(())
    }
}
