//! Running a plan: sources and joins, FOR UPDATE locks, aggregation
//! (row by row or page by page on the host), projection, DISTINCT,
//! ORDER BY and OFFSET / LIMIT; and the row checks UPDATE and DELETE use
//! (`matching`, `recheck`).
//!
//! ```text
//!  execute ─► bind_statement ─► rows ─► project ─► DISTINCT/ORDER/LIMIT ─► Output
//! ```

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use ndpdb_formats::agg::AggSpec;
use ndpdb_formats::expr::Program;
use ndpdb_formats::{RecId, SqlState, Value, Vid};
use ndpdb_host::database::TableState;
use ndpdb_host::Transaction;
use ndpdb_scan::{merge_groups, Pipeline, PipelineOp};

use crate::bind::compile::AggContext;
use crate::exec::host_aggregate::{HostAggregate, PartedAggregate};
use crate::exec::join::key_of;
use crate::exec::join::layout::Widen;
use crate::exec::join_run::widen_all;
use crate::exec::read::{distinct_columns, key_prefix_values};
use crate::exec::row_sink::Sink;
use crate::output::Output;
use crate::plan::access::Access;
use crate::plan::query::{unsupported, Input, SelectPlan, SortKey};
use crate::{Error, Result};

impl SelectPlan {
    /// Rows of `(output values, sort keys)` before DISTINCT/ORDER/LIMIT.
    pub(crate) fn project(
        &self,
        tx: &mut Transaction,
        params: &[Value],
    ) -> Result<Vec<(Vec<Value>, Vec<Value>)>> {
        let sort_exprs: Vec<&Program> = self
            .order
            .iter()
            .filter_map(|o| match &o.key {
                SortKey::Expr(p) => Some(p),
                SortKey::Output(_) => None,
            })
            .collect();
        let subqueries = &self.subqueries;
        let emit = |tx: &mut Transaction, input: &[Value]| -> Result<(Vec<Value>, Vec<Value>)> {
            let mut out = Vec::with_capacity(self.projection.len());
            for p in &self.projection {
                out.push(subqueries.eval(Some(&mut *tx), p, input, params)?);
            }
            let mut keys = Vec::with_capacity(sort_exprs.len());
            for p in &sort_exprs {
                keys.push(subqueries.eval(Some(&mut *tx), p, input, params)?);
            }
            Ok((out, keys))
        };
        let Some((ctx, having)) = &self.agg else {
            let (rows, layout) = self.joined_rows_reading(tx, params, true, true, None)?;
            let rows = crate::plan::select_extras::apply(&self.extras, rows, params)?;
            let mut out = Vec::with_capacity(rows.len());
            let mut scratch = layout.map_or_else(Vec::new, Widen::scratch);
            for r in rows {
                match layout {
                    Some(layout) => {
                        layout.fill(r.values, &mut scratch);
                        out.push(emit(tx, &scratch)?);
                    }
                    None => out.push(emit(tx, &r.values)?),
                }
            }
            return Ok(out);
        };
        let aggregated = match self.device_aggregate(tx, params)? {
            Some(rows) => rows,
            None => match self.host_page_aggregate(tx, ctx, params)? {
                Some(rows) => rows,
                None => {
                    let layout = self.narrow_joins().map(|n| &n.last);
                    // Joined rows are folded by the threads that join them.
                    let threads = tx.host_workers();
                    if !self.joins.is_empty() && threads > 1 && PartedAggregate::exact(ctx) {
                        let agg = PartedAggregate::new(ctx, layout, params, threads);
                        let add = |order: u64, rows: Vec<Vec<Value>>| agg.add(order, rows);
                        self.joined_rows_reading(tx, params, true, true, Some(Sink::Parts(&add)))?;
                        agg.merged()?.finish()?
                    } else {
                        let mut agg = HostAggregate::new(ctx, layout, params);
                        let mut add = |row: Vec<Value>| agg.add(row);
                        self.joined_rows_reading(
                            tx,
                            params,
                            true,
                            true,
                            Some(Sink::Each(&mut add)),
                        )?;
                        agg.finish()?
                    }
                }
            },
        };
        let mut out = Vec::with_capacity(aggregated.len());
        for row in aggregated {
            if let Some(h) = having {
                if !subqueries.eval_predicate(Some(&mut *tx), h, &row, params)? {
                    continue;
                }
            }
            out.push(emit(tx, &row)?);
        }
        Ok(out)
    }

    /// A one-table aggregate on the host through the scan core (page by
    /// page, typed kernels, `host_workers` threads): rows `[groups…,
    /// aggregates…]`; `None` for plans it does not cover (joins, primary-key
    /// lookups, FOR UPDATE), which aggregate row by row.
    pub(crate) fn host_page_aggregate(
        &self,
        tx: &Transaction,
        ctx: &AggContext,
        params: &[Value],
    ) -> Result<Option<Vec<Vec<Value>>>> {
        let [src] = &self.sources[..] else {
            return Ok(None);
        };
        let Some(table) = src.table() else {
            return Ok(None);
        };
        if !self.joins.is_empty()
            || self.filter.is_some()
            || !self.row_filter.is_empty()
            || self.for_update
            || !matches!(src.access, Access::Scan)
            || ctx.aggregates.iter().any(|a| a.spec.in_order())
        {
            return Ok(None);
        }
        let aggs: Vec<AggSpec> = ctx.aggregates.iter().map(|a| a.spec.clone()).collect();
        let pipeline = Pipeline::new(
            &table.types,
            params,
            src.filter.as_ref(),
            PipelineOp::Aggregate {
                groups: ctx.group_programs.clone(),
                aggs: aggs.clone(),
            },
        );
        let out = match key_prefix_values(&src.key_prefix, params)? {
            Some(prefix) => tx.scan_pipeline_key_prefix(table, &prefix, &pipeline)?,
            None => tx.scan_pipeline(table, &pipeline)?,
        };
        Ok(Some(merge_groups(
            out.groups,
            !ctx.group_programs.is_empty(),
            &aggs,
        )?))
    }
}

impl SelectPlan {
    /// The single table of a plan that reads one (UPDATE, DELETE, FOR UPDATE).
    pub fn target_table(&self) -> Result<&Arc<TableState>> {
        match self.sources.as_slice() {
            [src] => src
                .table()
                .ok_or_else(|| unsupported("this on a subquery in FROM")),
            _ => Err(unsupported("this with joins")),
        }
    }

    /// Whether every row the FROM items and WHERE give comes out (no
    /// aggregate, window function, LIMIT or OFFSET decides how many).
    pub(crate) fn returns_rows_as_read(&self) -> bool {
        self.agg.is_none() && self.extras.is_none() && self.limit.is_none() && self.offset.is_none()
    }

    /// Whether WHERE has terms evaluated per row with a subquery.
    pub fn has_row_filter(&self) -> bool {
        !self.row_filter.is_empty()
    }

    /// Forgets subquery answers memoized by an earlier execution.
    pub fn reset_caches(&self) {
        self.subqueries.reset();
        if let Some(shared) = &self.shared {
            shared.forget();
        }
        for src in &self.sources {
            match &src.input {
                Input::Derived(plan) => plan.reset_caches(),
                Input::SetOp(set) => set.reset_caches(),
                Input::Table(_) | Input::Rows(_) => {}
            }
        }
    }

    /// The rows of this plan as a query in FROM, under the enclosing
    /// query's `params`.
    pub(crate) fn derived_rows(
        &self,
        tx: &mut Transaction,
        params: &[Value],
    ) -> Result<Vec<Vec<Value>>> {
        let txn = params.last().cloned().unwrap_or(Value::Null);
        let bound = self.subqueries.bind(tx, params, &[], txn)?;
        self.rows(tx, &bound)
    }

    /// The statement's parameters extended with this query's slots (see
    /// [`crate::plan::subquery`]); `params` ends with the transaction time.
    pub fn bind_statement(&self, tx: &mut Transaction, params: &[Value]) -> Result<Vec<Value>> {
        self.reset_caches();
        let txn = params.last().cloned().unwrap_or(Value::Null);
        self.subqueries.bind(tx, params, &[], txn)
    }
}

impl SelectPlan {
    /// Runs the query: `params` are the statement's, the transaction time last.
    pub fn execute(&self, tx: &mut Transaction, params: &[Value]) -> Result<Output> {
        let bound = self.bind_statement(tx, params)?;
        let rows = self.rows(tx, &bound)?;
        Ok(Output::Rows {
            columns: self.columns.clone(),
            rows,
        })
    }

    /// The result rows handed to `visit` one at a time, in no particular
    /// order, with `params` bound. A plain read of one table on the host
    /// streams (no row list is made); other plans compute [`Self::rows`].
    pub(crate) fn each_row(
        &self,
        tx: &mut Transaction,
        params: &[Value],
        mut visit: impl FnMut(Vec<Value>) -> Result<()>,
    ) -> Result<()> {
        let plain = self.sources.len() == 1
            && self.joins.is_empty()
            && self.returns_rows_as_read()
            && !self.distinct
            && self.order.is_empty()
            && !self.for_update
            && self.row_filter.is_empty()
            && !self.subqueries.has_per_row()
            && self.ndp.is_none();
        if !plain {
            for r in self.rows(tx, params)? {
                visit(r)?;
            }
            return Ok(());
        }
        let src = &self.sources[0];
        // Columns projected as they are (a hashed subquery's keys): the
        // rows are read as projected, never widened to the table's width.
        let columns: Option<Vec<usize>> = match &self.filter {
            Some(_) => None,
            None => self.projection.iter().map(Program::single_column).collect(),
        };
        if let Some(columns) = columns.filter(|c| distinct_columns(c)) {
            let wanted = self.wanted(0);
            return self.read_source_each(tx, src, params, wanted, Some(&columns), |_, _, row| {
                visit(row)
            });
        }
        self.read_source_each(tx, src, params, self.wanted(0), None, |_, _, row| {
            if let Some(f) = &self.filter {
                if !f.eval_predicate(&row, params)? {
                    return Ok(());
                }
            }
            let mut out = Vec::with_capacity(self.projection.len());
            for p in &self.projection {
                out.push(p.eval(&row, params)?);
            }
            visit(out)
        })
    }

    /// The result rows, with `params` bound (see [`Bindings::bind`]).
    pub fn rows(&self, tx: &mut Transaction, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        let mut rows = self.project(tx, params)?;
        if self.distinct {
            let mut seen = HashSet::new();
            rows.retain(|(out, _)| seen.insert(key_of(out)));
        }
        if !self.order.is_empty() {
            let mut err = None;
            rows.sort_by(|a, b| {
                let mut e = 0;
                for o in &self.order {
                    let (x, y) = match o.key {
                        SortKey::Output(i) => (&a.0[i], &b.0[i]),
                        SortKey::Expr(_) => {
                            let r = (&a.1[e], &b.1[e]);
                            e += 1;
                            r
                        }
                    };
                    let ord = match (x.is_null(), y.is_null()) {
                        (true, true) => Ordering::Equal,
                        (true, false) => {
                            if o.nulls_first {
                                Ordering::Less
                            } else {
                                Ordering::Greater
                            }
                        }
                        (false, true) => {
                            if o.nulls_first {
                                Ordering::Greater
                            } else {
                                Ordering::Less
                            }
                        }
                        _ => {
                            let c = x.sql_cmp(y).unwrap_or_else(|| {
                                err.get_or_insert(());
                                Ordering::Equal
                            });
                            if o.desc {
                                c.reverse()
                            } else {
                                c
                            }
                        }
                    };
                    if ord != Ordering::Equal {
                        return ord;
                    }
                }
                Ordering::Equal
            });
        }
        let count = |p: &Option<Program>, what: &str| -> Result<Option<usize>> {
            let Some(p) = p else { return Ok(None) };
            match p.eval(&[], params)? {
                Value::Null => Ok(None),
                v => match v.as_i64() {
                    Some(n) if n >= 0 => Ok(Some(n as usize)),
                    Some(_) => Err(Error::new(
                        SqlState::INVALID_ROW_COUNT_IN_LIMIT_CLAUSE,
                        format!("{what} must not be negative"),
                    )),
                    None => Err(Error::new(
                        SqlState::DATATYPE_MISMATCH,
                        format!("argument of {what} must be an integer"),
                    )),
                },
            }
        };
        let offset = count(&self.offset, "OFFSET")?.unwrap_or(0);
        let limit = count(&self.limit, "LIMIT")?;
        Ok(rows
            .into_iter()
            .skip(offset)
            .take(limit.unwrap_or(usize::MAX))
            .map(|(out, _)| out)
            .collect())
    }

    /// Rows matching FROM + WHERE of a single-table plan, with their ids
    /// (used by UPDATE and DELETE). The rows are whole: a DML filter plan
    /// is never placed on the device (which returns projected columns).
    pub fn matching(
        &self,
        tx: &mut Transaction,
        params: &[Value],
    ) -> Result<Vec<(Vid, RecId, Vec<Value>)>> {
        let (rows, layout) = self.joined_rows_reading(tx, params, true, false, None)?;
        Ok(widen_all(rows, layout)
            .into_iter()
            .map(|j| (j.ids[0].0, j.ids[0].1, j.values))
            .collect())
    }

    /// Re-checks WHERE on a newer version of a row (READ COMMITTED);
    /// `params` as [`SelectPlan::bind_statement`] made them. Subqueries
    /// answer from what they computed for the first version: the
    /// statement's snapshot has not changed.
    pub fn recheck(&self, row: &[Value], params: &[Value]) -> Result<bool> {
        let a = match &self.sources[0].filter {
            Some(f) => f.eval_predicate(row, params)?,
            None => true,
        };
        let b = match &self.filter {
            Some(f) => f.eval_predicate(row, params)?,
            None => true,
        };
        if !(a && b) {
            return Ok(false);
        }
        for f in &self.row_filter {
            if !self.subqueries.eval_predicate(None, f, row, params)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}
