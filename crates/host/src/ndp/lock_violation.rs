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
//!
//! The end a dependent waits for, and its list of them, are
//! `commit_dependencies.rs`.

use std::sync::Arc;

use ndpdb_formats::{SqlState, TxId};
use ndpdb_slt::DeviceTag;

use super::commit_dependencies::Eot;
use super::part::NdpPart;
use super::validate::validate_at_commit;
use crate::db::Engine;
use crate::error::{Error, Result};
use crate::stats::EngineCounters;

/// A transaction's violable state while it commits.
pub(crate) struct Violable {
    eot: Arc<Eot>,
    tag: DeviceTag,
}

impl Engine {
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
            if let Err(e) = validate_at_commit(parts, |t| tables.get(&t).map(|ts| &**ts)) {
                EngineCounters::inc(&self.counters.ndp_validation_failures);
                return Err(e);
            }
            for part in parts {
                let ts = &tables[&part.table];
                for d in &part.result.delta.vids {
                    ts.vids.set(d.vid, d.new);
                }
            }
        }
        let eot = Arc::new(Eot::new(txid));
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
    /// or aborted; [`Engine::close_violable`] came first): its
    /// dependents go on, or fail.
    pub(crate) fn leave_violable(&self, v: Violable, committed: bool) {
        self.violable.lock().remove(&v.eot.txid());
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
