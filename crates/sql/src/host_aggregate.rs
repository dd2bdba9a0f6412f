//! GROUP BY on the host, a row at a time: the aggregate of joins and of
//! the plans the scan core's page aggregate does not cover.
//!
//! ```text
//!  joined row ──► group programs ──► key bytes ──► FxHashMap ──► group #
//!   (full layout,                     (reused)                     │
//!    or narrow + Widen)  aggregate arguments ──► Acc per aggregate ◄┘
//!                                                   │ finish
//!                                rows [groups…, aggregates…] ◄──────┘
//! ```
//!
//! The last join step hands its rows straight to [`HostAggregate::add`]
//! (`SelectPlan::joined_rows_reading` with a sink, `query/join_run.rs`),
//! so a join of millions of rows is never held in memory only to be
//! summed: CH-benCHmark's Q10 and Q18 join 3 M order lines into a few
//! hundred thousand groups.

use ndpdb_formats::agg::Acc;
use ndpdb_formats::codec::Writer;
use ndpdb_formats::Value;
use rustc_hash::FxHashMap;

use crate::compile::AggContext;
use crate::join_layout::Widen;
use crate::Result;

/// The groups seen so far and their aggregates' states.
pub struct HostAggregate<'p> {
    ctx: &'p AggContext,
    params: &'p [Value],
    /// The layout rows come in, when narrow (`join_layout.rs`).
    layout: Option<&'p Widen>,
    groups: FxHashMap<Vec<u8>, usize>,
    states: Vec<(Vec<Value>, Vec<Acc>)>,
    /// The current row's group values and key (reused across rows).
    values: Vec<Value>,
    key: Writer,
    /// A row of the full layout that narrow rows are moved into.
    scratch: Vec<Value>,
}

impl<'p> HostAggregate<'p> {
    pub fn new(ctx: &'p AggContext, layout: Option<&'p Widen>, params: &'p [Value]) -> Self {
        HostAggregate {
            ctx,
            params,
            layout,
            groups: FxHashMap::default(),
            states: Vec::new(),
            values: Vec::with_capacity(ctx.group_programs.len()),
            key: Writer::new(),
            scratch: layout.map_or_else(Vec::new, Widen::scratch),
        }
    }

    /// Adds one row (of the layout given to [`HostAggregate::new`]).
    pub fn add(&mut self, row: Vec<Value>) -> Result<()> {
        match self.layout {
            Some(layout) => layout.fill(row, &mut self.scratch),
            None => self.scratch = row,
        }
        let (ctx, params, row) = (self.ctx, self.params, &self.scratch);
        self.values.clear();
        self.key.clear();
        for p in &ctx.group_programs {
            let v = p.eval(row, params)?;
            v.key_bytes(&mut self.key);
            self.values.push(v);
        }
        // One lookup per row; the key is copied only for a new group.
        let idx = match self.groups.get(self.key.as_slice()) {
            Some(&i) => i,
            None => {
                let values = std::mem::replace(
                    &mut self.values,
                    Vec::with_capacity(ctx.group_programs.len()),
                );
                self.states.push((values, new_accs(ctx)));
                self.groups
                    .insert(self.key.as_slice().to_vec(), self.states.len() - 1);
                self.states.len() - 1
            }
        };
        for (acc, call) in self.states[idx].1.iter_mut().zip(&ctx.aggregates) {
            let v = match &call.spec.arg {
                Some(p) => p.eval(row, params)?,
                None => Value::Null,
            };
            acc.add(&call.spec, v)?;
        }
        Ok(())
    }

    /// Rows `[groups…, aggregates…]`; without GROUP BY, one row even
    /// when no row came.
    pub fn finish(self) -> Result<Vec<Vec<Value>>> {
        let ctx = self.ctx;
        let mut states = self.states;
        if states.is_empty() && ctx.group_programs.is_empty() {
            states.push((Vec::new(), new_accs(ctx)));
        }
        let mut out = Vec::with_capacity(states.len());
        for (values, accs) in states {
            let mut row = values;
            for (acc, call) in accs.into_iter().zip(&ctx.aggregates) {
                row.push(acc.finish(&call.spec)?);
            }
            out.push(row);
        }
        Ok(out)
    }
}

fn new_accs(ctx: &AggContext) -> Vec<Acc> {
    ctx.aggregates.iter().map(|a| Acc::new(&a.spec)).collect()
}
