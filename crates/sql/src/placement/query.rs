//! Where the scan runs: on the host or on the device (NDP, DESIGN.md
//! §9). `place` decides once per plan; `offload` rechecks per execution
//! (a transaction's own writes keep the scan on the host), and the
//! `device_*` functions run the offloaded scan or aggregate.
//!
//! ```text
//!  place ─► NdpPlacement? ─► offload(tx) ─► device_scan │ device_aggregate
//!                                   └─ None ─► host (read.rs)
//! ```

use ndpdb_formats::Value;
use ndpdb_host::ndp::NdpRequest;
use ndpdb_host::{Database, Transaction};
use ndpdb_link::ndp::NdpOp;

use crate::exec::join::Joined;
use crate::plan::access::Access;
use crate::plan::query::{Input, NdpMode, NdpPlacement, SelectPlan, SortKey};
use crate::Result;

impl SelectPlan {
    /// Whether this execution offloads (a transaction's own uncommitted
    /// writes to the table keep it on the host).
    pub(crate) fn offload(&self, tx: &Transaction) -> Option<&NdpPlacement> {
        let placement = self.ndp.as_ref()?;
        let table = self.sources.first()?.table()?;
        (!tx.has_writes_to(table)).then_some(placement)
    }
}

impl SelectPlan {
    pub(crate) fn run_on_device(
        &self,
        tx: &mut Transaction,
        p: &NdpPlacement,
        params: &[Value],
    ) -> Result<Vec<Vec<Value>>> {
        let ts = self.target_table()?;
        let (rows, report) = if self.for_update {
            tx.ndp_lock_rows(ts, &p.request, params)?
        } else {
            tx.ndp_execute(ts, &p.request, params)?
        };
        if let Ok(mut last) = self.last_ndp.lock() {
            *last = Some(report);
        }
        Ok(rows)
    }

    pub(crate) fn device_scan(
        &self,
        tx: &mut Transaction,
        params: &[Value],
    ) -> Result<Option<Vec<Joined>>> {
        let Some(p) = self.offload(tx).filter(|p| !p.aggregate) else {
            return Ok(None);
        };
        let width = self.target_table()?.types.len();
        let rows = self.run_on_device(tx, p, params)?;
        Ok(Some(
            rows.into_iter()
                .map(|r| {
                    let mut values = vec![Value::Null; width];
                    for (v, &c) in r.into_iter().zip(&p.columns) {
                        values[c as usize] = v;
                    }
                    Joined {
                        values,
                        ids: Vec::new(),
                    }
                })
                .collect(),
        ))
    }

    pub(crate) fn device_aggregate(
        &self,
        tx: &mut Transaction,
        params: &[Value],
    ) -> Result<Option<Vec<Vec<Value>>>> {
        match self.offload(tx).filter(|p| p.aggregate) {
            Some(p) => Ok(Some(self.run_on_device(tx, p, params)?)),
            None => Ok(None),
        }
    }

    /// Decides where the scan runs (DESIGN.md §9). Only single-table plans
    /// without a primary-key lookup offload; with FOR UPDATE the device
    /// also locks the rows (`NdpOp::LockRows`).
    pub fn place(&mut self, mode: NdpMode, pes: u16, preload: bool, db: &Database) {
        self.ndp = None;
        self.subqueries.place(mode, pes, preload, db);
        for src in &mut self.sources {
            match &mut src.input {
                Input::Derived(plan) => plan.place(mode, pes, preload, db),
                Input::SetOp(set) => {
                    set.left.plan.place(mode, pes, preload, db);
                    set.right.plan.place(mode, pes, preload, db);
                }
                Input::Table(_) | Input::Rows(_) => {}
            }
        }
        if mode == NdpMode::Off || self.sources.len() != 1 || self.extras.is_some() {
            return;
        }
        if self.for_update && self.agg.is_some() {
            return;
        }
        // Rows that need a subquery each are aggregated on the host; so
        // are aggregates that need their rows in order (array_agg).
        if self.agg.is_some() && !self.row_filter.is_empty() {
            return;
        }
        if let Some((ctx, _)) = &self.agg {
            if ctx.aggregates.iter().any(|a| a.spec.in_order()) {
                return;
            }
        }
        let src = &self.sources[0];
        let Some(table) = src.table().cloned() else {
            return;
        };
        // A range over an index (no equality prefix) may still be a scan
        // on the device, as before the index existed; a key lookup stays.
        let index_range = matches!(&src.access, Access::Index(ix) if ix.prefix.is_empty());
        if !matches!(src.access, Access::Scan) && !index_range {
            return;
        }
        let (op, aggregate, columns) = match &self.agg {
            Some((ctx, _)) => (
                NdpOp::Aggregate {
                    groups: ctx.group_programs.clone(),
                    aggs: ctx.aggregates.iter().map(|a| a.spec.clone()).collect(),
                },
                true,
                Vec::new(),
            ),
            None => {
                let mut cols: Vec<u32> = self.projection.iter().flat_map(|p| p.columns()).collect();
                for o in &self.order {
                    if let SortKey::Expr(p) = &o.key {
                        cols.extend(p.columns());
                    }
                }
                if let Some(f) = &self.filter {
                    cols.extend(f.columns());
                }
                for f in &self.row_filter {
                    cols.extend(f.columns());
                }
                cols.extend(self.subqueries.row_columns());
                cols.sort_unstable();
                cols.dedup();
                let op = if self.for_update {
                    NdpOp::LockRows {
                        columns: cols.clone(),
                    }
                } else {
                    NdpOp::Scan {
                        columns: cols.clone(),
                    }
                };
                (op, false, cols)
            }
        };
        let reason = match mode {
            NdpMode::On => "ndp = on".to_string(),
            _ => {
                let est = crate::placement::cost_model::estimate(
                    db,
                    &table,
                    &op,
                    src.filter.is_some(),
                    pes,
                );
                if !est.device_wins() {
                    return;
                }
                est.describe()
            }
        };
        if index_range {
            self.sources[0].access = Access::Scan;
        }
        let src = &self.sources[0];
        self.ndp = Some(NdpPlacement {
            request: NdpRequest {
                filter: src.filter.clone(),
                conjuncts: src.conjuncts.clone(),
                op,
                pes,
                preload,
            },
            aggregate,
            columns,
            reason,
        });
    }
}
