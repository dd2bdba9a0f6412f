//! GROUP BY on the host, a row at a time: the aggregate of joins and of
//! the plans the scan core's page aggregate does not cover.
//!
//! ```text
//!  joined row ──► group programs ──► key bytes ──► FxHashMap ──► group #
//!   (narrow,                          (reused)                     │
//!    or widened)     aggregate arguments ──► Acc per aggregate ◄───┘
//!                                                   │ finish
//!                                rows [groups…, aggregates…] ◄──────┘
//! ```
//!
//! The last join step hands its rows straight to [`HostAggregate::add`]
//! (`SelectPlan::joined_rows_reading` with a sink, `query/join_run.rs`),
//! so a join of millions of rows is never held in memory only to be
//! summed: CH-benCHmark's Q10 and Q18 join 3 M order lines into a few
//! hundred thousand groups.
//!
//! Per row, nothing is allocated for a group seen before:
//! - the grouping and argument programs are rewritten once for the narrow
//!   rows the join hands over, so a row is not first widened into the
//!   full layout (`join_layout.rs`); where one cannot be rewritten, rows
//!   are widened as before;
//! - a grouping program that is a plain column writes its key bytes from
//!   the row's value, which is copied only when it starts a group.

use std::borrow::Cow;

use ndpdb_formats::agg::Acc;
use ndpdb_formats::codec::Writer;
use ndpdb_formats::expr::Program;
use ndpdb_formats::{Error as FormatError, Value};
use rustc_hash::FxHashMap;

use crate::compile::AggContext;
use crate::join_layout::Widen;
use crate::{Error, Result};

/// The groups seen so far and their aggregates' states.
pub struct HostAggregate<'p> {
    ctx: &'p AggContext,
    params: &'p [Value],
    programs: Programs<'p>,
    /// The layout rows are widened into, when the programs read the full
    /// layout but rows come narrow.
    layout: Option<&'p Widen>,
    groups: FxHashMap<Vec<u8>, usize>,
    states: Vec<(Vec<Value>, Vec<Acc>)>,
    /// The values of the current row's computed grouping programs, and
    /// its key (reused across rows).
    computed: Vec<Value>,
    key: Writer,
    /// A row of the full layout that narrow rows are moved into.
    scratch: Vec<Value>,
}

/// The grouping programs and aggregate arguments over the rows as
/// [`HostAggregate::add`] reads them.
struct Programs<'p> {
    group: Cow<'p, [Program]>,
    /// Per grouping program, the column it is, when it is only that.
    group_column: Vec<Option<usize>>,
    args: Vec<Option<Cow<'p, Program>>>,
}

impl<'p> Programs<'p> {
    fn of(ctx: &'p AggContext) -> Programs<'p> {
        let group = Cow::Borrowed(ctx.group_programs.as_slice());
        let args = ctx
            .aggregates
            .iter()
            .map(|a| a.spec.arg.as_ref().map(Cow::Borrowed))
            .collect();
        Programs::new(group, args)
    }

    fn new(group: Cow<'p, [Program]>, args: Vec<Option<Cow<'p, Program>>>) -> Programs<'p> {
        Programs {
            group_column: group.iter().map(Program::single_column).collect(),
            group,
            args,
        }
    }

    /// The programs rewritten to read `layout`'s narrow rows; `None` if
    /// one of them reads a column those rows leave out.
    fn narrowed(ctx: &AggContext, layout: &Widen) -> Option<Programs<'p>> {
        let narrow = |c: u32| {
            layout
                .columns
                .iter()
                .position(|&w| w == c)
                .map(|i| i as u32)
        };
        let group = ctx
            .group_programs
            .iter()
            .map(|p| p.remap_columns(narrow))
            .collect::<Option<Vec<_>>>()?;
        let mut args = Vec::with_capacity(ctx.aggregates.len());
        for a in &ctx.aggregates {
            args.push(match &a.spec.arg {
                Some(p) => Some(Cow::Owned(p.remap_columns(narrow)?)),
                None => None,
            });
        }
        Some(Programs::new(Cow::Owned(group), args))
    }
}

impl<'p> HostAggregate<'p> {
    pub fn new(ctx: &'p AggContext, layout: Option<&'p Widen>, params: &'p [Value]) -> Self {
        let (programs, layout) = match layout.map(|l| (Programs::narrowed(ctx, l), l)) {
            Some((Some(narrowed), _)) => (narrowed, None),
            Some((None, l)) => (Programs::of(ctx), Some(l)),
            None => (Programs::of(ctx), None),
        };
        HostAggregate {
            ctx,
            params,
            programs,
            layout,
            groups: FxHashMap::default(),
            states: Vec::new(),
            computed: Vec::with_capacity(ctx.group_programs.len()),
            key: Writer::new(),
            scratch: layout.map_or_else(Vec::new, Widen::scratch),
        }
    }

    /// Adds one row (of the layout given to [`HostAggregate::new`]).
    pub fn add(&mut self, row: Vec<Value>) -> Result<()> {
        let row = match self.layout {
            Some(layout) => {
                layout.fill(row, &mut self.scratch);
                Cow::Borrowed(self.scratch.as_slice())
            }
            None => Cow::Owned(row),
        };
        let (programs, params) = (&self.programs, self.params);
        self.computed.clear();
        self.key.clear();
        for (p, column) in programs.group.iter().zip(&programs.group_column) {
            match column {
                Some(c) => column_of(&row, *c)?.key_bytes(&mut self.key),
                None => {
                    let v = p.eval(&row, params)?;
                    v.key_bytes(&mut self.key);
                    self.computed.push(v);
                }
            }
        }
        // One lookup per row; key and values are copied only for a new
        // group.
        let idx = match self.groups.get(self.key.as_slice()) {
            Some(&i) => i,
            None => {
                let mut computed = self.computed.drain(..);
                let mut values = Vec::with_capacity(programs.group.len());
                for column in &programs.group_column {
                    values.push(match column {
                        Some(c) => column_of(&row, *c)?.clone(),
                        None => computed.next().unwrap_or(Value::Null),
                    });
                }
                drop(computed);
                self.states.push((values, new_accs(self.ctx)));
                self.groups
                    .insert(self.key.as_slice().to_vec(), self.states.len() - 1);
                self.states.len() - 1
            }
        };
        let accs = &mut self.states[idx].1;
        for ((acc, call), arg) in accs
            .iter_mut()
            .zip(&self.ctx.aggregates)
            .zip(&programs.args)
        {
            let v = match arg {
                Some(p) => p.eval(&row, params)?,
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

fn column_of(row: &[Value], c: usize) -> Result<&Value> {
    row.get(c)
        .ok_or_else(|| Error::from(FormatError::corrupted("column index out of range")))
}

fn new_accs(ctx: &AggContext) -> Vec<Acc> {
    ctx.aggregates.iter().map(|a| Acc::new(&a.spec)).collect()
}
