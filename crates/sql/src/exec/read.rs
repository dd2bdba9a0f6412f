//! Reading the sources of a plan: a primary-key lookup, an index range,
//! a scan with its pushed-down filter, or the first rows in key order
//! (`ordered_read.rs`), narrowed to the columns the rest of the plan
//! reads.
//!
//! ```text
//!  Source ─► lookup │ index range │ scan (pipeline + filter) ─► rows
//! ```

use std::collections::HashSet;
use std::sync::Arc;

use ndpdb_formats::expr::Program;
use ndpdb_formats::{RecId, Value, Vid};
use ndpdb_host::database::TableState;
use ndpdb_host::storage::page_scan::ChunkMap;
use ndpdb_host::Transaction;
use ndpdb_scan::{Pipeline, PipelineOp};
use sqlparser::ast::Expr;

use crate::exec::join::filter::ReadFilter;
use crate::plan::access::{Access, IndexAccess, PlannedIndex};
use crate::plan::ordered_read;
use crate::plan::ordered_read::{KeyOrderRead, TupleRows};
use crate::plan::query::{Input, SelectPlan, SortKey, Source};
use crate::Result;

/// The tuples an index range names; `None` when it covers more than a
/// quarter of the index (a scan is cheaper) or the index is gone.
/// The key prefix a source's rows share, evaluated (`None`: none, or a
/// NULL in it — then no row matches, and the table counts as read).
pub(crate) fn key_prefix_values(
    prefix: &[Program],
    params: &[Value],
) -> Result<Option<Vec<Value>>> {
    if prefix.is_empty() {
        return Ok(None);
    }
    let values: Vec<Value> = prefix
        .iter()
        .map(|p| p.eval(&[], params))
        .collect::<Result<_, _>>()?;
    Ok((!values.iter().any(Value::is_null)).then_some(values))
}

/// Whether no column appears twice in `columns` (a narrowed row takes
/// each column's value once).
pub(crate) fn distinct_columns(columns: &[usize]) -> bool {
    let mut seen = HashSet::with_capacity(columns.len());
    columns.iter().all(|c| seen.insert(*c))
}

pub(crate) fn index_range(
    table: &TableState,
    ix: &IndexAccess,
    params: &[Value],
) -> Result<Option<Vec<Vid>>> {
    match ordered_read::key_range(ix, params)? {
        Some(range) => match ix.index.get(table)? {
            Some(index) => Ok(index.lookup(&range, (index.len() / 4).max(64))),
            // Dropped since the plan was made: a scan.
            None => Ok(None),
        },
        None => Ok(Some(Vec::new())),
    }
}

impl SelectPlan {
    /// Whether the first rows may be read in primary-key order, stopping
    /// at the LIMIT (`ordered_read.rs`).
    pub(crate) fn plan_key_order_read(
        &self,
        order_by: &[(Expr, bool)],
    ) -> Result<Option<KeyOrderRead>> {
        let [src] = &self.sources[..] else {
            return Ok(None);
        };
        if src.table().is_none()
            || self.limit.is_none()
            || self.agg.is_some()
            || self.distinct
            || self.filter.is_some()
            || !self.row_filter.is_empty()
            || order_by.len() != self.order.len()
        {
            return Ok(None);
        }
        let is_key_order = matches!(&src.access,
            Access::Index(ix) if matches!(ix.index, PlannedIndex::KeyOrder(_)));
        Ok(ordered_read::plan(
            &src.access,
            is_key_order,
            order_by,
            &self.input_scope,
        ))
    }

    /// OFFSET + LIMIT with `params`, when the plan reads in key order.
    pub(crate) fn key_order_take(&self, params: &[Value]) -> Result<Option<(KeyOrderRead, usize)>> {
        let Some(read) = self.key_order_read else {
            return Ok(None);
        };
        let count = |p: &Option<Program>| -> Result<Option<usize>> {
            match p {
                None => Ok(Some(0)),
                Some(p) => Ok(p
                    .eval(&[], params)?
                    .as_i64()
                    .and_then(|n| usize::try_from(n).ok())),
            }
        };
        // A NULL or bad LIMIT reads everything (and fails where it did).
        match (count(&self.limit)?, count(&self.offset)?) {
            (Some(l), Some(o)) => Ok(Some((read, l.saturating_add(o)))),
            _ => Ok(None),
        }
    }

    /// The first source's first `take` rows in key order, when the plan
    /// reads so.
    pub(crate) fn read_in_key_order(
        &self,
        tx: &mut Transaction,
        params: &[Value],
    ) -> Result<Option<(TupleRows, usize)>> {
        let Some((read, take)) = self.key_order_take(params)? else {
            return Ok(None);
        };
        let src = &self.sources[0];
        let (Some(table), Access::Index(ix)) = (src.table(), &src.access) else {
            return Ok(None);
        };
        if !ix.index.present(table) {
            return Ok(None);
        }
        match key_prefix_values(&src.key_prefix, params)? {
            Some(prefix) => tx.read_key_prefix(table, &prefix)?,
            None => tx.read_predicate(table)?,
        }
        let keep = |row: &[Value]| -> Result<bool> {
            match &src.filter {
                Some(f) => Ok(f.eval_predicate(row, params)?),
                None => Ok(true),
            }
        };
        let rows = ordered_read::read(tx, table, ix, read, take, params, keep)?;
        Ok(Some((rows, take)))
    }
}

impl SelectPlan {
    pub(crate) fn read_source(
        &self,
        tx: &mut Transaction,
        src: &Source,
        params: &[Value],
        wanted: Option<&[bool]>,
        narrow: Option<&[usize]>,
    ) -> Result<Vec<(Vid, RecId, Vec<Value>)>> {
        let mut out = Vec::new();
        self.read_source_each(tx, src, params, wanted, narrow, |vid, rid, row| {
            out.push((vid, rid, row));
            Ok(())
        })?;
        Ok(out)
    }

    /// [`Self::read_source`], each row handed to `visit` as it is read.
    /// With `narrow`, a row holds only those columns of the table, in
    /// that order (the first item of a narrow join); otherwise it has the
    /// table's width, NULL where `wanted` says nothing reads.
    pub(crate) fn read_source_each(
        &self,
        tx: &mut Transaction,
        src: &Source,
        params: &[Value],
        wanted: Option<&[bool]>,
        narrow: Option<&[usize]>,
        visit: impl FnMut(Vid, RecId, Vec<Value>) -> Result<()>,
    ) -> Result<()> {
        let filter = ReadFilter {
            program: src.filter.as_ref(),
            bloom: None,
        };
        self.read_filtered_each(tx, src, filter, params, (wanted, narrow), None, visit)
    }

    /// Whether [`Self::read_filtered_each`] reads `src` through the scan
    /// core's pipeline on the host workers (and so can pass each chunk
    /// of rows through a map there).
    pub(crate) fn reads_by_pipeline(&self, src: &Source, wanted: Option<&[bool]>) -> bool {
        matches!(src.input, Input::Table(_))
            && matches!(src.access, Access::Scan)
            && wanted.is_some()
            && (self.joins.is_empty() || self.narrow_joins().is_some())
    }

    /// [`Self::read_source_each`] with `filter` in place of the source's
    /// own (a runtime join filter, `join_filter.rs`, which includes it).
    /// With `map`, a pipeline read ([`Self::reads_by_pipeline`]) passes
    /// each chunk's rows through it on the workers, and `visit` gets the
    /// rows out of it; other reads ignore it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn read_filtered_each(
        &self,
        tx: &mut Transaction,
        src: &Source,
        ReadFilter { program, bloom }: ReadFilter<'_>,
        params: &[Value],
        (wanted, narrow): (Option<&[bool]>, Option<&[usize]>),
        map: Option<&ChunkMap<'_>>,
        mut visit: impl FnMut(Vid, RecId, Vec<Value>) -> Result<()>,
    ) -> Result<()> {
        // Kept rows lose the columns nothing reads (after the filter).
        let mut keep = |vid: Vid, rid: RecId, mut row: Vec<Value>| -> Result<()> {
            let kept = match program {
                Some(f) => f.eval_predicate(&row, params)?,
                None => true,
            };
            if !kept {
                return Ok(());
            }
            if let Some(columns) = narrow {
                let narrowed = columns
                    .iter()
                    .map(|&c| {
                        row.get_mut(c)
                            .map_or(Value::Null, |v| std::mem::replace(v, Value::Null))
                    })
                    .collect();
                return visit(vid, rid, narrowed);
            }
            if let Some(wanted) = wanted {
                for (v, w) in row.iter_mut().zip(wanted) {
                    if !w {
                        *v = Value::Null;
                    }
                }
            }
            visit(vid, rid, row)
        };
        let table = match &src.input {
            Input::Table(t) => t,
            Input::Derived(plan) => {
                let Some(shared) = &plan.shared else {
                    for row in plan.derived_rows(tx, params)? {
                        keep(Vid(0), RecId::NULL, row)?;
                    }
                    return Ok(());
                };
                let rows = match shared.get() {
                    Some(rows) => rows,
                    None => {
                        let rows = Arc::new(plan.derived_rows(tx, params)?);
                        shared.keep(rows.clone());
                        rows
                    }
                };
                for row in rows.iter() {
                    keep(Vid(0), RecId::NULL, row.clone())?;
                }
                return Ok(());
            }
            Input::Rows(r) => {
                for row in r.rows(tx.database(), params)? {
                    keep(Vid(0), RecId::NULL, row)?;
                }
                return Ok(());
            }
            Input::SetOp(set) => {
                for row in set.rows(tx, params)? {
                    keep(Vid(0), RecId::NULL, row)?;
                }
                return Ok(());
            }
        };
        match &src.access {
            // A table scan of a plain SELECT (no row ids needed): the
            // scan core's pipeline filters it page by page on the host
            // workers and streams the columns read, chunk by chunk.
            Access::Scan if self.reads_by_pipeline(src, wanted) => {
                // Narrow rows come as projected; full-width ones keep the
                // projected values at their places in the table's layout
                // (built by the scan's workers).
                let (columns, table_layout) = match narrow {
                    Some(columns) => (columns.iter().map(|&c| c as u32).collect(), false),
                    None => {
                        let columns: Vec<u32> = wanted
                            .into_iter()
                            .flatten()
                            .enumerate()
                            .filter(|(_, w)| **w)
                            .map(|(c, _)| c as u32)
                            .collect();
                        (columns, true)
                    }
                };
                let pipeline = Pipeline::new(
                    &table.types,
                    params,
                    program,
                    PipelineOp::Project { columns },
                )
                .with_key_bloom(bloom.cloned());
                let pipeline = match table_layout {
                    true => pipeline.with_rows_in_table_layout(),
                    false => pipeline,
                };
                let prefix = key_prefix_values(&src.key_prefix, params)?;
                let mut each = |row: Vec<Value>| visit(Vid(0), RecId::NULL, row);
                match map {
                    Some(map) => tx.scan_pipeline_mapped(
                        table,
                        prefix.as_deref(),
                        &pipeline,
                        map,
                        &mut each,
                    )?,
                    None => {
                        tx.scan_pipeline_each(table, prefix.as_deref(), &pipeline, &mut each)?
                    }
                };
            }
            Access::PrimaryKey(keys) => {
                let key: Vec<Value> = keys
                    .iter()
                    .map(|k| k.eval(&[], params))
                    .collect::<Result<_, _>>()?;
                if key.iter().any(Value::is_null) {
                    return Ok(());
                }
                if let Some((vid, rid, row)) = tx.get_by_key(table, &key)? {
                    keep(vid, rid, row)?;
                }
            }
            Access::Index(ix) if ix.index.present(table) => {
                // SERIALIZABLE: an index range reads the whole table, or
                // the primary-key prefix its terms fix.
                match key_prefix_values(&src.key_prefix, params)? {
                    Some(prefix) => tx.read_key_prefix(table, &prefix)?,
                    None => tx.read_predicate(table)?,
                }
                if let Some(vids) = index_range(table, ix, params)? {
                    for vid in vids {
                        if let Some((rid, row)) = tx.get(table, vid)? {
                            keep(vid, rid, row)?;
                        }
                    }
                    return Ok(());
                }
                // The range is too wide (or the index was dropped): scan.
                tx.scan_columns(table, wanted, |vid, rid, row| {
                    keep(vid, rid, row)?;
                    Ok(true)
                })?
            }
            Access::Scan | Access::Index(_) => {
                let visit = |vid, rid, row: Vec<Value>| {
                    keep(vid, rid, row)?;
                    Ok(true)
                };
                match key_prefix_values(&src.key_prefix, params)? {
                    Some(prefix) => tx.scan_key_prefix(table, &prefix, wanted, visit)?,
                    None => tx.scan_columns(table, wanted, visit)?,
                }
            }
        }
        Ok(())
    }

    /// The joins over narrow rows, for a plain SELECT that joins tables
    /// (a FOR UPDATE plan and the filter plans of UPDATE and DELETE need
    /// whole rows; window and set-returning columns keep every column).
    pub(crate) fn narrow_joins(&self) -> Option<&crate::exec::join::layout::NarrowJoins> {
        self.narrow
            .get_or_init(|| {
                if self.joins.is_empty() || self.for_update || self.extras.is_some() {
                    return None;
                }
                let after = self.columns_read_after_from();
                let own: Vec<std::collections::BTreeSet<u32>> = self
                    .sources
                    .iter()
                    .map(|s| s.filter.iter().flat_map(Program::columns).collect())
                    .collect();
                let tables: Vec<bool> = self.sources.iter().map(|s| s.table().is_some()).collect();
                crate::exec::join::layout::narrow(&self.joins, &after, &own, &tables)
            })
            .as_ref()
    }

    /// The joined row's columns read after FROM: by WHERE, the output,
    /// ORDER BY, grouping, aggregates and per-row subqueries.
    pub(crate) fn columns_read_after_from(&self) -> std::collections::BTreeSet<u32> {
        let mut after = std::collections::BTreeSet::new();
        let programs = self
            .projection
            .iter()
            .chain(self.filter.iter())
            .chain(self.row_filter.iter())
            .chain(self.order.iter().filter_map(|o| match &o.key {
                SortKey::Expr(p) => Some(p),
                SortKey::Output(_) => None,
            }));
        for p in programs {
            after.extend(p.columns());
        }
        if let Some((ctx, having)) = &self.agg {
            for p in ctx.group_programs.iter().chain(having.iter()) {
                after.extend(p.columns());
            }
            for a in &ctx.aggregates {
                after.extend(a.spec.arg.iter().flat_map(Program::columns));
            }
        }
        after.extend(self.subqueries.row_columns());
        after
    }

    /// The columns a plain SELECT of one table reads (its filter's too),
    /// when fewer than all: the scan decodes only those.
    pub(crate) fn single_table_wanted(&self) -> Option<&[bool]> {
        self.single_wanted
            .get_or_init(|| {
                let [src] = &self.sources[..] else {
                    return None;
                };
                let table = src.table()?;
                if self.for_update || self.extras.is_some() {
                    return None;
                }
                let mut read = self.columns_read_after_from();
                read.extend(src.filter.iter().flat_map(Program::columns));
                let width = table.types.len();
                if read.len() >= width {
                    return None;
                }
                Some((0..width as u32).map(|c| read.contains(&c)).collect())
            })
            .as_deref()
    }

    /// The columns of source `k` the plan reads, when it reads fewer.
    pub(crate) fn wanted(&self, k: usize) -> Option<&[bool]> {
        if self.joins.is_empty() {
            return self.single_table_wanted();
        }
        self.narrow_joins()
            .and_then(|n| n.wanted.get(k))
            .and_then(Option::as_deref)
    }
}
