//! A transaction's update-NDP work: the statements it ran on the device
//! ([`NdpPart`]s, kept for commit), the SLT tag its jobs lock with, the
//! SLT buckets they hold, its NDP pipeline stage, and its logging and
//! lock-violation settings.
//!
//! ```text
//!  first update-NDP statement ─► ndp_tag (TagPool, owner in the lock table)
//!  each job done ─► add_ndp_part: own heads, locked tuples and buckets
//!  a job failed  ─► discard_failed: pages freed, its new locks released
//!  device restarted since ─► check_device_work: 40001
//! ```
//!
//! The jobs themselves run in `crate::ndp::update`; the commit validates
//! and applies the parts (`end.rs`, `crate::transaction::commit`).

use ndpdb_formats::{SqlState, TableId, Vid};

use super::Transaction;
use crate::error::{Error, Result};
use crate::ndp::statement_pipeline::PipelineStage;
use crate::ndp::{own_heads, NdpLogging, NdpPart};

impl Transaction {
    /// `ndp_logging`: without NDP log records (`off`) an update job's
    /// changes are durable only once the checkpoint that follows its
    /// commit has merged them into the device's maps (the papers'
    /// no-logging baseline); `extended` moves each job's overflow log to
    /// the host before the commit record.
    pub fn set_ndp_logging(&mut self, logging: NdpLogging) {
        self.ndp_logging = logging;
    }

    /// `ndp_lock_violation` (update NDP §5.4): with extended logging,
    /// waiting transactions may take this transaction's device locks while
    /// its overflow logs move, and commit only after it.
    pub fn set_lock_violation(&mut self, on: bool) {
        self.lock_violation = on;
    }

    pub(crate) fn ndp_logging(&self) -> NdpLogging {
        self.ndp_logging
    }

    pub(crate) fn set_stage(&mut self, stage: PipelineStage) {
        self.stage = Some(stage);
    }

    pub(crate) fn stage(&self) -> Option<&PipelineStage> {
        self.stage.as_ref()
    }

    pub(crate) fn take_stage(&mut self) -> Option<PipelineStage> {
        self.stage.take()
    }

    /// Whether this transaction wrote `table` on the host (not through
    /// update NDP).
    pub(crate) fn host_wrote(&self, table: TableId) -> bool {
        self.order.iter().any(|(t, _)| *t == table)
    }

    /// Drops a failed update job's work: its pages, and the locks it took
    /// on buckets no earlier job of this transaction holds.
    pub(crate) fn discard_failed(&self, part: &NdpPart) {
        let inner = &self.db.inner;
        if part.result.stage != 0 {
            // Device memory only; the statement fails anyway.
            let _ = inner.release_stages(&[part.result.stage]);
        }
        inner.free_space(&part.result.delta.l2p);
        inner.free_space(&part.result.unused);
        let own: Vec<Vid> = match inner.locks.slt() {
            Some(slt) => part
                .result
                .locked
                .iter()
                .filter(|v| !self.ndp_buckets.contains(&slt.index((part.table, **v))))
                .copied()
                .collect(),
            None => Vec::new(),
        };
        inner.release_job_locks(part.table, part.tag, &own);
    }

    /// The SLT buckets this transaction holds through its host tuple
    /// locks (its host-shared entries; sorted): an update or lock job of
    /// it must not queue there, behind its own transaction
    /// (`Invocation::host_buckets`). Buckets its jobs hold with its tag
    /// are not among them (its host locks there are HLT-only).
    pub(crate) fn host_lock_buckets(&self) -> Vec<u32> {
        let Some(slt) = self.db.inner.locks.slt() else {
            return Vec::new();
        };
        let mut buckets: Vec<u32> = self
            .locks
            .iter()
            .map(|k| slt.index(*k))
            .filter(|b| !self.ndp_buckets.contains(b))
            .map(|b| b as u32)
            .collect();
        buckets.sort_unstable();
        buckets.dedup();
        buckets
    }

    /// Locks the tuples an update or lock job of this transaction left to
    /// the host (`ModifyResult::host_locks`: they share buckets with its
    /// host locks), as a host statement would — waiting for a member of
    /// its own host group that holds one of them.
    pub(crate) fn lock_tuples(&mut self, table: TableId, vids: &[Vid]) -> Result<()> {
        for vid in vids {
            self.lock((table, *vid))?;
        }
        Ok(())
    }

    /// This transaction's SLT tag (taken at its first update-NDP statement).
    pub(crate) fn ndp_tag(&mut self) -> Result<ndpdb_slt::DeviceTag> {
        self.check_device_work()?;
        if let Some(t) = self.ndp_tag {
            return Ok(t);
        }
        let t = self.db.inner.ndp_tags.lock().alloc_tag().ok_or_else(|| {
            Error::new(
                SqlState::INSUFFICIENT_RESOURCES,
                "too many concurrent transactions with update-NDP statements",
            )
        })?;
        self.db.inner.locks.set_device_owner(t, Some(self.id));
        self.ndp_tag = Some(t);
        Ok(t)
    }

    /// Fails (40001) once the device this transaction's update jobs ran
    /// on has restarted: their versions and tuple locks are gone.
    pub(crate) fn check_device_work(&self) -> Result<()> {
        match self.ndp_tag {
            Some(t) if self.db.inner.locks.tag_is_stale(t) => Err(Error::new(
                SqlState::SERIALIZATION_FAILURE,
                "could not serialize access due to a device restart",
            )
            .with_detail(
                "The device restarted after this transaction's update NDP ran on it: its new versions and tuple locks are lost. The transaction might succeed if retried.",
            )),
            _ => Ok(()),
        }
    }

    /// Records a successful update-NDP statement.
    pub(crate) fn add_ndp_part(&mut self, part: NdpPart) {
        self.ndp_heads.extend(own_heads(&part));
        self.ndp_locked
            .extend(part.result.locked.iter().map(|v| (part.table, *v)));
        if let Some(slt) = self.db.inner.locks.slt() {
            self.ndp_buckets.extend(
                part.result
                    .locked
                    .iter()
                    .map(|v| slt.index((part.table, *v))),
            );
        }
        self.ndp_parts.push(part);
    }
}
