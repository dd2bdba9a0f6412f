//! NDP pipeline stages (update NDP §4.1, DESIGN.md §6): what one
//! statement of a transaction produced on the device, kept there for its
//! next statement. (A scan's filter path — `ndpdb_scan::Pipeline` — is
//! another thing; the statements' pipelines are called stages here.)
//!
//! ```text
//!  SELECT … FOR UPDATE WHERE p     LockRows job ── locked versions ──────► stage h₁
//!  UPDATE … WHERE p [AND q]        Update job, targets = stage h₁ (taken),
//!                                  filter p ∧ q on each target
//!                                  ── versions it created ───────────────► stage h₂
//!  DELETE … WHERE p [AND q]        Delete job, targets = stage h₂ (taken)
//!  COMMIT / ROLLBACK               NDP_RELEASE h₂ (if still kept)
//! ```
//!
//! A stage is a VID-sorted list of (VID, version): the versions a lock job
//! locked or an update job wrote. A job that takes a stage walks only
//! those versions — no VID map, no visibility walk — and treats each as
//! the tuple's head, which it is for the owning transaction: the tuple is
//! locked by it, and a version it created is its own head until commit.
//! Only the transaction whose snapshot made the stage may take it, on the
//! same table. Stages are bounded by [`STAGE_BUDGET`] versions in all:
//! over it a job keeps nothing and the host sends its targets instead.

use std::sync::Arc;

use parking_lot::Mutex;
use rustc_hash::FxHashMap;

use ndpdb_formats::{RecId, TableId, TxId, Vid};
use ndpdb_link::{LinkError, Result as LinkResult};

/// Versions all stages may hold together (16 B each: 256 MiB).
pub(crate) const STAGE_BUDGET: usize = 16 << 20;

/// One kept statement output.
pub(crate) struct Stage {
    pub table: TableId,
    pub txid: TxId,
    /// Sorted by VID, one entry per VID.
    pub versions: Arc<Vec<(Vid, RecId)>>,
}

/// The stages the device keeps, by handle.
pub(crate) struct Stages {
    kept: Mutex<FxHashMap<u64, Stage>>,
    /// Versions all stages may hold together.
    budget: usize,
}

impl Default for Stages {
    fn default() -> Stages {
        Stages::with_budget(STAGE_BUDGET)
    }
}

impl Stages {
    pub fn with_budget(budget: usize) -> Stages {
        Stages {
            kept: Mutex::new(FxHashMap::default()),
            budget,
        }
    }

    /// Keeps `versions` (any order) as stage `id` if the budget allows;
    /// returns `id`, or 0 if nothing was kept.
    pub fn keep(
        &self,
        id: u64,
        table: TableId,
        txid: TxId,
        mut versions: Vec<(Vid, RecId)>,
    ) -> u64 {
        let mut kept = self.kept.lock();
        let held: usize = kept.values().map(|s| s.versions.len()).sum();
        if held + versions.len() > self.budget {
            return 0;
        }
        versions.sort_unstable_by_key(|(v, _)| *v);
        versions.dedup_by_key(|(v, _)| *v);
        kept.insert(
            id,
            Stage {
                table,
                txid,
                versions: Arc::new(versions),
            },
        );
        id
    }

    /// Takes stage `id` for a job of `txid` over `table`.
    pub fn take(&self, id: u64, table: TableId, txid: TxId) -> LinkResult<Stage> {
        let mut kept = self.kept.lock();
        match kept.get(&id) {
            Some(s) if s.table == table && s.txid == txid => {}
            Some(_) => {
                return Err(LinkError::OutOfRange(format!(
                    "pipeline stage {id} belongs to another transaction or table"
                )))
            }
            None => {
                return Err(LinkError::OutOfRange(format!(
                    "no pipeline stage {id} on the device"
                )))
            }
        }
        Ok(kept.remove(&id).expect("checked above"))
    }

    /// Drops stage `id` (unknown handles are ignored: a job may have
    /// taken it).
    pub fn release(&self, id: u64) {
        self.kept.lock().remove(&id);
    }

    #[cfg(test)]
    fn held(&self) -> usize {
        self.kept.lock().values().map(|s| s.versions.len()).sum()
    }
}

/// The version of `vid` in a VID-sorted target list.
pub(crate) fn target_version(targets: &[(Vid, RecId)], vid: Vid) -> Option<RecId> {
    targets
        .binary_search_by_key(&vid, |(v, _)| *v)
        .ok()
        .map(|i| targets[i].1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndpdb_formats::Lpn;

    fn v(vid: u64, slot: u16) -> (Vid, RecId) {
        (Vid(vid), RecId::new(Lpn(7), slot))
    }

    #[test]
    fn a_stage_is_taken_once_by_its_transaction_only() {
        let stages = Stages::default();
        assert_eq!(
            stages.keep(5, TableId(1), TxId(9), vec![v(3, 0), v(1, 1)]),
            5
        );
        assert!(stages.take(5, TableId(2), TxId(9)).is_err(), "other table");
        assert!(stages.take(5, TableId(1), TxId(8)).is_err(), "other tx");
        let s = stages.take(5, TableId(1), TxId(9)).unwrap();
        assert_eq!(*s.versions, vec![v(1, 1), v(3, 0)], "sorted by VID");
        assert_eq!(target_version(&s.versions, Vid(3)), Some(v(3, 0).1));
        assert_eq!(target_version(&s.versions, Vid(2)), None);
        assert!(stages.take(5, TableId(1), TxId(9)).is_err(), "taken");
    }

    #[test]
    fn stages_stay_within_the_budget() {
        let stages = Stages::with_budget(100);
        let big: Vec<_> = (0..99).map(|i| v(i, 0)).collect();
        assert_eq!(stages.keep(1, TableId(1), TxId(1), big), 1);
        assert_eq!(
            stages.keep(2, TableId(1), TxId(2), vec![v(1, 0), v(2, 0)]),
            0,
            "over the budget: not kept"
        );
        assert_eq!(stages.keep(3, TableId(1), TxId(2), vec![v(1, 0)]), 3);
        stages.release(1);
        stages.release(1);
        assert_eq!(stages.held(), 1);
    }
}
