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
//! With `host_workers` above 1, the threads that join the last step's
//! rows fold them themselves ([`PartedAggregate`]): one part per thread,
//! merged when the rows are all in; each group remembers where its
//! first row came (part number, row in the part), so the groups come out
//! in the order one thread would have made them.
//!
//! Per row, nothing is allocated for a group seen before:
//! - the grouping and argument programs are rewritten once for the narrow
//!   rows the join hands over, so a row is not first widened into the
//!   full layout (`join_layout.rs`); where one cannot be rewritten, rows
//!   are widened as before;
//! - a grouping program that is a plain column writes its key bytes from
//!   the row's value, which is copied only when it starts a group.

use std::borrow::Cow;
use std::sync::Mutex;

use ndpdb_formats::agg::{Acc, AggFunc};
use ndpdb_formats::codec::Writer;
use ndpdb_formats::expr::Program;
use ndpdb_formats::{DataType, Error as FormatError, Value};
use rustc_hash::FxHashMap;

use crate::bind::compile::AggContext;
use crate::exec::join::layout::Widen;
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
    /// Per group, where its first row came: (part, row in the part).
    first: Vec<(u64, u32)>,
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
    /// Per aggregate, its extra inputs ([`AggSpec::extra`]).
    extra: Vec<Vec<Cow<'p, Program>>>,
}

impl<'p> Programs<'p> {
    fn of(ctx: &'p AggContext) -> Programs<'p> {
        let group = Cow::Borrowed(ctx.group_programs.as_slice());
        let args = ctx
            .aggregates
            .iter()
            .map(|a| a.spec.arg.as_ref().map(Cow::Borrowed))
            .collect();
        let extra = ctx
            .aggregates
            .iter()
            .map(|a| a.spec.extra.iter().map(Cow::Borrowed).collect())
            .collect();
        Programs::new(group, args, extra)
    }

    fn new(
        group: Cow<'p, [Program]>,
        args: Vec<Option<Cow<'p, Program>>>,
        extra: Vec<Vec<Cow<'p, Program>>>,
    ) -> Programs<'p> {
        Programs {
            group_column: group.iter().map(Program::single_column).collect(),
            group,
            args,
            extra,
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
        let mut extra = Vec::with_capacity(ctx.aggregates.len());
        for a in &ctx.aggregates {
            args.push(match &a.spec.arg {
                Some(p) => Some(Cow::Owned(p.remap_columns(narrow)?)),
                None => None,
            });
            extra.push(
                a.spec
                    .extra
                    .iter()
                    .map(|p| p.remap_columns(narrow).map(Cow::Owned))
                    .collect::<Option<Vec<_>>>()?,
            );
        }
        Some(Programs::new(Cow::Owned(group), args, extra))
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
            first: Vec::new(),
            computed: Vec::with_capacity(ctx.group_programs.len()),
            key: Writer::new(),
            scratch: layout.map_or_else(Vec::new, Widen::scratch),
        }
    }

    /// Adds one row (of the layout given to [`HostAggregate::new`]).
    pub fn add(&mut self, row: Vec<Value>) -> Result<()> {
        let at = (0, self.first.len() as u32);
        self.add_at(row, at)
    }

    /// Adds a row that came `at` (part, row in the part): groups are
    /// given out in the order of their first rows.
    fn add_at(&mut self, row: Vec<Value>, at: (u64, u32)) -> Result<()> {
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
            Some(&i) => {
                if let Some(first) = self.first.get_mut(i) {
                    *first = (*first).min(at);
                }
                i
            }
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
                self.first.push(at);
                self.groups
                    .insert(self.key.as_slice().to_vec(), self.states.len() - 1);
                self.states.len() - 1
            }
        };
        let accs = &mut self.states[idx].1;
        for (((acc, call), arg), extra) in accs
            .iter_mut()
            .zip(&self.ctx.aggregates)
            .zip(&programs.args)
            .zip(&programs.extra)
        {
            let v = match arg {
                Some(p) => p.eval(&row, params)?,
                None => Value::Null,
            };
            if extra.is_empty() {
                acc.add(&call.spec, v)?;
            } else {
                let extra = extra
                    .iter()
                    .map(|p| p.eval(&row, params))
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                acc.add_with(&call.spec, v, extra)?;
            }
        }
        Ok(())
    }

    /// Rows `[groups…, aggregates…]`; without GROUP BY, one row even
    /// when no row came.
    pub fn finish(self) -> Result<Vec<Vec<Value>>> {
        let ctx = self.ctx;
        let mut states = self.states;
        if !self.first.is_sorted() {
            let mut order: Vec<usize> = (0..states.len()).collect();
            order.sort_by_key(|&i| self.first.get(i).copied());
            let mut taken: Vec<Option<_>> = states.into_iter().map(Some).collect();
            states = order.iter().filter_map(|&i| taken[i].take()).collect();
        }
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

    /// Adds `other`'s groups: a group both have merges its aggregates'
    /// states and keeps the earlier first row.
    fn absorb(&mut self, other: HostAggregate<'p>) -> Result<()> {
        let mut theirs: Vec<Option<_>> = other.states.into_iter().map(Some).collect();
        for (key, i) in other.groups {
            let (Some(Some((values, accs))), Some(&at)) =
                (theirs.get_mut(i).map(Option::take), other.first.get(i))
            else {
                continue;
            };
            match self.groups.get(&key) {
                Some(&mine) => {
                    let (_, mine_accs) = &mut self.states[mine];
                    for ((acc, call), a) in mine_accs.iter_mut().zip(&self.ctx.aggregates).zip(accs)
                    {
                        acc.merge(&call.spec, a)?;
                    }
                    if let Some(first) = self.first.get_mut(mine) {
                        *first = (*first).min(at);
                    }
                }
                None => {
                    self.states.push((values, accs));
                    self.first.push(at);
                    self.groups.insert(key, self.states.len() - 1);
                }
            }
        }
        Ok(())
    }
}

/// A [`HostAggregate`] the threads that join rows feed at once: one part
/// per thread (part `order mod parts`: a scan worker's chunks, a join
/// thread's parts), merged when the rows are all in. The groups come out
/// in the order of their first rows, as from one thread.
pub struct PartedAggregate<'p> {
    parts: Vec<Mutex<HostAggregate<'p>>>,
}

impl<'p> PartedAggregate<'p> {
    pub fn new(
        ctx: &'p AggContext,
        layout: Option<&'p Widen>,
        params: &'p [Value],
        parts: usize,
    ) -> Self {
        let parts = (0..parts.max(1))
            .map(|_| Mutex::new(HostAggregate::new(ctx, layout, params)))
            .collect();
        PartedAggregate { parts }
    }

    /// Whether folding `ctx`'s aggregates in parts gives what folding
    /// them in one does: not for sums and averages of floating-point
    /// values, whose rounding depends on the order they are added in.
    pub fn exact(ctx: &AggContext) -> bool {
        ctx.aggregates.iter().all(|a| {
            !a.spec.in_order()
                && (!matches!(a.spec.func, AggFunc::Sum | AggFunc::Avg)
                    || a.spec.result_ty != DataType::Double)
        })
    }

    /// Adds part `order`'s rows.
    pub fn add(&self, order: u64, rows: Vec<Vec<Value>>) -> Result<()> {
        let Some(part) = self.parts.get(order as usize % self.parts.len()) else {
            return Ok(());
        };
        let mut part = part.lock().unwrap_or_else(|e| e.into_inner());
        for (i, row) in (0u32..).zip(rows) {
            ndpdb_host::interrupt::tick(1)?;
            part.add_at(row, (order, i))?;
        }
        Ok(())
    }

    /// The parts merged, to finish.
    pub fn merged(self) -> Result<HostAggregate<'p>> {
        let mut parts = self
            .parts
            .into_iter()
            .map(|p| p.into_inner().unwrap_or_else(|e| e.into_inner()));
        let Some(mut all) = parts.next() else {
            return Err(Error::from(FormatError::corrupted(
                "an aggregate without parts",
            )));
        };
        for part in parts {
            all.absorb(part)?;
        }
        Ok(all)
    }
}

fn column_of(row: &[Value], c: usize) -> Result<&Value> {
    row.get(c)
        .ok_or_else(|| Error::from(FormatError::corrupted("column index out of range")))
}

fn new_accs(ctx: &AggContext) -> Vec<Acc> {
    ctx.aggregates.iter().map(|a| Acc::new(&a.spec)).collect()
}
