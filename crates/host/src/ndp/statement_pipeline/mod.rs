//! NDP statement pipelines, the host's side (update NDP §4.1; DESIGN.md §6):
//! consecutive NDP statements of one transaction run as one chain of
//! invocations whose intermediate state stays on the device.
//!
//! ```text
//!  BEGIN ISOLATION LEVEL REPEATABLE READ
//!  SELECT … WHERE p FOR UPDATE   LockRows, keep  → stage (Locked,  p)      device: h₁
//!  UPDATE … WHERE p AND q        covers? p ⊆ {p, q}  → stage h₁, filter p ∧ q,
//!                                keep → stage (Changed, p ∧ q)            device: h₂
//!  DELETE … WHERE p AND q        covers? → stage h₂, filter p ∧ q
//!  COMMIT                        NDP_RELEASE of a stage still kept
//! ```
//!
//! A statement continues the pipeline when its predicate implies the
//! stage's: every conjunct of the stage's WHERE clause (compiled, with
//! its parameters bound) is one of the statement's. Then the rows it
//! changes are among the stage's rows: at one snapshot, a row that
//! satisfies the narrower predicate satisfied the stage's, and the
//! transaction's only changes to the table since are the stage's own
//! versions (a host write to the table ends the pipeline). The device
//! evaluates the statement's filter on each stage version — on the new
//! version after an UPDATE, so `UPDATE … SET x = x + 100 WHERE x < 10`
//! followed by `DELETE … WHERE x < 10` deletes nothing, as in PostgreSQL.
//!
//! READ COMMITTED takes a new snapshot per statement, which may see rows
//! committed since the stage was made: there every statement scans.
//! The locked versions of a SELECT … FOR UPDATE still come back to the
//! host, which certifies them against its VID heads; the next statement
//! sends only the stage's handle. When the device keeps no stage (over
//! its budget) the host keeps the versions and sends them as targets.
//!
//! (Not the scan's filter → operation pipeline of `ndpdb_scan`: this one
//! chains whole statements.) The stage a statement leaves and the
//! implication test are `stage.rs`; here the transaction keeps, continues
//! and releases it.

mod stage;

pub(crate) use stage::{PipelineStage, StageKind, StageSource};

use ndpdb_formats::{TableId, Value};
use ndpdb_link::ndp::Invocation;

use super::call::NdpRequest;
use crate::db::{Engine, TableState};
use crate::error::Result;
use crate::stats::EngineCounters;
use crate::transaction::{Isolation, Transaction};
use stage::Continuation;

impl Engine {
    /// NDP_RELEASE: the device drops these stages.
    pub(crate) fn release_stages(&self, handles: &[u64]) -> Result<()> {
        self.device.ndp_release(handles.to_vec())?;
        Ok(())
    }
}

impl Transaction {
    /// How an NDP statement over `table` continues this transaction's
    /// stage, if it does (see the module docs).
    fn continuation(
        &self,
        table: TableId,
        req: &NdpRequest,
        params: &[Value],
    ) -> Option<Continuation> {
        let stage = self.stage()?;
        if !self.keeps_stage(req) || self.host_wrote(table) {
            return None;
        }
        stage.continued_by(table, &req.conjuncts, params)
    }

    /// Whether an UPDATE or DELETE over `ts` would run as the next step
    /// of this transaction's NDP pipeline (then it may run on the device
    /// although the transaction changed the table there).
    pub fn continues_pipeline(&self, ts: &TableState, req: &NdpRequest, params: &[Value]) -> bool {
        self.continuation(ts.id, req, params).is_some()
    }

    /// Whether a statement's output may be kept as a stage: not under
    /// READ COMMITTED (the next statement takes a new snapshot), and only
    /// with a predicate that can be compared.
    pub(crate) fn keeps_stage(&self, req: &NdpRequest) -> bool {
        self.isolation() != Isolation::ReadCommitted
            && (req.filter.is_none() || !req.conjuncts.is_empty())
    }

    /// Takes the transaction's stage for an UPDATE or DELETE: if the
    /// statement continues it, `inv` runs over its versions (true);
    /// otherwise the device drops it.
    pub(crate) fn apply_stage(
        &mut self,
        ts: &TableState,
        req: &NdpRequest,
        params: &[Value],
        inv: &mut Invocation,
    ) -> Result<bool> {
        let how = self.continuation(ts.id, req, params);
        let Some(stage) = self.take_stage() else {
            return Ok(false);
        };
        let Some(how) = how else {
            self.release_stage(stage)?;
            return Ok(false);
        };
        match stage.source {
            StageSource::Device(h) => inv.stage = h,
            StageSource::Host(versions) => inv.targets = versions,
        }
        if how == Continuation::AllRows {
            inv.filter = None;
        }
        EngineCounters::inc(&self.database().inner.counters.ndp_pipelined);
        Ok(true)
    }

    /// A stage no statement continues: the device drops it.
    pub(crate) fn release_stage(&self, stage: PipelineStage) -> Result<()> {
        match stage.device_handle() {
            Some(h) => self.database().inner.release_stages(&[h]),
            None => Ok(()),
        }
    }
}
