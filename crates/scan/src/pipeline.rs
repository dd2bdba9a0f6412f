//! Filter → operation over a page selection or a single row: the part of
//! a scan after visibility, shared by the device's PEs and the host.
//!
//! ```text
//!  page + selection ─► Predicate (kernels | rows) ─► Aggregate: Acc per spec
//!  one decoded row  ─► Program::eval_predicate    ─►   (GROUP BY columns:
//!                                                     the selection split
//!                                                     by key, group_page.rs;
//!                                                     other groupings and
//!                                                     single rows: per row)
//!                                                   Project: rows of Values
//! ```
//!
//! A [`Pipeline`] is compiled once per scan and shared by its workers;
//! each worker folds into its own [`PipelineState`], and the states merge
//! the way the row path's partials always did (`groups.rs`).
//!
//! "Pipeline" here is the scan's filter path only; the statements the
//! host ships to the device are named elsewhere.

use std::sync::Arc;

use ndpdb_formats::agg::{Acc, AggSpec};
use ndpdb_formats::codec::Writer;
use ndpdb_formats::expr::Program;
use ndpdb_formats::page::PageRef;
use ndpdb_formats::{DataType, Result, Value};

use crate::aggregate::{fold_page, AggInput, Batch, RowSource};
use crate::group_page::{fold_grouped_page, group_bytes, group_columns, GroupScratch, GroupedPage};
pub use crate::groups::{merge_groups, Groups};
use crate::kernel::column;
use crate::key_bloom::KeyBloom;
use crate::predicate::{Predicate, Scratch};

/// What a scan computes from its qualifying rows.
#[derive(Clone, Debug, PartialEq)]
pub enum PipelineOp {
    /// Aggregates, grouped by the values of `groups` (none: one group).
    Aggregate {
        groups: Vec<Program>,
        aggs: Vec<AggSpec>,
    },
    /// The values of these columns, one row per qualifying row.
    Project { columns: Vec<u32> },
}

/// A compiled scan pipeline.
pub struct Pipeline {
    types: Vec<DataType>,
    params: Vec<Value>,
    filter: Option<Predicate>,
    /// The filter as bytecode, for single rows.
    program: Option<Program>,
    op: PipelineOp,
    inputs: Vec<AggInput>,
    /// GROUP BY columns, when every group is a column as stored: the
    /// page path groups the selection (`group_page.rs`).
    group_columns: Option<Vec<usize>>,
    /// Columns the row path decodes.
    wanted: Vec<bool>,
    /// Columns whose minipages the page walk prefetches (whole, or the
    /// first line: zone map and nulls).
    prefetch: Vec<(usize, bool)>,
    /// A runtime join filter over composite keys, after the filter (on
    /// the page path; a row that passes it anyway is only joined).
    key_bloom: Option<Arc<KeyBloom>>,
    /// Projected rows keep the table's layout: each value at its column's
    /// position, NULL where a column is not projected.
    table_layout: bool,
}

/// One worker's partial result.
#[derive(Default)]
pub struct PipelineState {
    /// Accumulators of an aggregate without GROUP BY.
    pub plain: Option<Vec<Acc>>,
    pub groups: Groups,
    /// Projected rows since the caller last took them.
    pub rows: Vec<Vec<Value>>,
    /// Rows that reached the operation.
    pub qualified: u64,
    /// Pages the filter ran on, and those whose zone maps ruled out every
    /// row without a kernel reading a value.
    pub pages: u64,
    pub pages_pruned: u64,
    /// Page bytes the walk and the kernels read (headers, the version
    /// minipage where visibility needed it, the minipages of the columns
    /// evaluated; a zone map alone where it decided).
    pub bytes_touched: u64,
    scratch: Scratch,
    group_scratch: GroupScratch,
    row: Vec<Value>,
}

/// Decodes rows of one page on demand for the row path.
struct PageRows<'p, 'a> {
    page: &'p PageRef<'a>,
    wanted: &'p [bool],
    row: &'p mut Vec<Value>,
}

impl RowSource for PageRows<'_, '_> {
    fn row(&mut self, slot: u16) -> Result<&[Value]> {
        self.page
            .decode_row_into(slot, Some(self.wanted), self.row)?;
        Ok(self.row)
    }
}

impl Pipeline {
    pub fn new(
        types: &[DataType],
        params: &[Value],
        filter: Option<&Program>,
        op: PipelineOp,
    ) -> Pipeline {
        let mut cols: Vec<u32> = filter.iter().flat_map(|f| f.columns()).collect();
        let inputs = match &op {
            PipelineOp::Aggregate { groups, aggs } => {
                cols.extend(groups.iter().flat_map(|g| g.columns()));
                cols.extend(
                    aggs.iter()
                        .filter_map(|a| a.arg.as_ref())
                        .flat_map(|p| p.columns()),
                );
                aggs.iter().map(|a| AggInput::compile(a, types)).collect()
            }
            PipelineOp::Project { columns } => {
                cols.extend(columns);
                Vec::new()
            }
        };
        let mut wanted = vec![false; types.len()];
        for &c in &cols {
            if let Some(w) = wanted.get_mut(c as usize) {
                *w = true;
            }
        }
        // Filter columns: the zone map first (it often decides); values
        // the operation reads: the whole minipage.
        let mut whole = vec![false; types.len()];
        match &op {
            PipelineOp::Aggregate { groups, .. } if groups.is_empty() => {
                for input in &inputs {
                    match input {
                        AggInput::Column(c) | AggInput::Spn(c) => whole[*c] = true,
                        AggInput::Rows => whole.clone_from(&wanted),
                        AggInput::Star => {}
                    }
                }
            }
            _ => whole.clone_from(&wanted),
        }
        let prefetch = (0..types.len())
            .filter(|&c| wanted[c])
            .map(|c| (c, whole[c]))
            .collect();
        let group_columns = match &op {
            PipelineOp::Aggregate { groups, .. } => group_columns(groups, types),
            PipelineOp::Project { .. } => None,
        };
        Pipeline {
            group_columns,
            types: types.to_vec(),
            params: params.to_vec(),
            filter: filter.map(|f| Predicate::compile(f, types, params)),
            program: filter.cloned(),
            op,
            inputs,
            wanted,
            prefetch,
            key_bloom: None,
            table_layout: false,
        }
    }

    /// The pipeline with its projected rows in the table's layout (the
    /// projected columns at their positions, NULL elsewhere), built on
    /// the scan's workers for a caller that reads rows by table column.
    pub fn with_rows_in_table_layout(mut self) -> Pipeline {
        self.table_layout = true;
        self
    }

    /// A projected row: `value(i)` is the i-th projected column's value.
    fn projected_row(
        &self,
        columns: &[u32],
        mut value: impl FnMut(usize) -> Result<Value>,
    ) -> Result<Vec<Value>> {
        if !self.table_layout {
            return (0..columns.len()).map(value).collect();
        }
        let mut row = Vec::with_capacity(self.types.len());
        row.resize_with(self.types.len(), || Value::Null);
        for (i, &c) in columns.iter().enumerate() {
            if let Some(slot) = row.get_mut(c as usize) {
                *slot = value(i)?;
            }
        }
        Ok(row)
    }

    /// The pipeline with `bloom` dropping rows after its filter (it reads
    /// its key columns from the page itself).
    pub fn with_key_bloom(mut self, bloom: Option<Arc<KeyBloom>>) -> Pipeline {
        self.key_bloom = bloom;
        self
    }

    /// Columns the page walk prefetches: `(column, whole minipage)`.
    pub fn prefetch_columns(&self) -> &[(usize, bool)] {
        &self.prefetch
    }

    /// Columns of the table.
    pub fn column_count(&self) -> usize {
        self.types.len()
    }

    /// What the pipeline computes.
    pub fn op(&self) -> &PipelineOp {
        &self.op
    }

    /// The columns the pipeline reads.
    pub fn wanted(&self) -> &[bool] {
        &self.wanted
    }

    /// Whether the filter runs as kernels (EXPLAIN shows it).
    pub fn filter_vectorized(&self) -> bool {
        self.filter.as_ref().is_none_or(Predicate::is_vectorized)
    }

    /// Runs the rows `sel` of `page` (visible versions, in order) through
    /// the filter and the operation. `sel` is consumed.
    pub fn page(
        &self,
        st: &mut PipelineState,
        page: &PageRef<'_>,
        sel: &mut Vec<u16>,
    ) -> Result<()> {
        if page.column_count() != self.types.len() {
            return Err(ndpdb_formats::Error::corrupted(format!(
                "page {} has {} columns, the table {}",
                page.lpn().0,
                page.column_count(),
                self.types.len()
            )));
        }
        st.pages += 1;
        match &self.filter {
            None => {}
            Some(Predicate::Vector(node)) => {
                let pruned = st.scratch.zone_pruned;
                node.filter(page, &self.types, sel, &mut st.scratch)?;
                st.bytes_touched += std::mem::take(&mut st.scratch.bytes);
                if st.scratch.zone_pruned > pruned && sel.is_empty() {
                    st.pages_pruned += 1;
                }
            }
            Some(Predicate::Rows(p)) => {
                st.bytes_touched += self.wanted_bytes(page);
                let mut kept = Vec::with_capacity(sel.len());
                for &s in sel.iter() {
                    page.decode_row_into(s, Some(&self.wanted), &mut st.row)?;
                    if p.eval_predicate(&st.row, &self.params)? {
                        kept.push(s);
                    }
                }
                *sel = kept;
            }
        }
        if let (Some(bloom), false) = (&self.key_bloom, sel.is_empty()) {
            bloom.keep(page, &self.types, sel)?;
        }
        if sel.is_empty() {
            return Ok(());
        }
        st.qualified += sel.len() as u64;
        match &self.op {
            PipelineOp::Project { columns } => {
                let cols = columns
                    .iter()
                    .map(|&c| column(page, c as usize, self.types[c as usize]))
                    .collect::<Result<Vec<_>>>()?;
                st.bytes_touched += cols.iter().map(|c| c.footprint as u64).sum::<u64>();
                for &s in sel.iter() {
                    let row = self.projected_row(columns, |i| match cols.get(i) {
                        Some(c) => c.value(s as usize),
                        None => Ok(Value::Null),
                    })?;
                    st.rows.push(row);
                }
            }
            PipelineOp::Aggregate { groups, aggs } if groups.is_empty() => {
                st.bytes_touched += self.aggregate_bytes(page);
                let accs = st
                    .plain
                    .get_or_insert_with(|| aggs.iter().map(Acc::new).collect());
                let mut rows = PageRows {
                    page,
                    wanted: &self.wanted,
                    row: &mut st.row,
                };
                let batch = Batch {
                    page,
                    types: &self.types,
                    sel,
                    params: &self.params,
                };
                for ((acc, spec), input) in accs.iter_mut().zip(aggs).zip(&self.inputs) {
                    fold_page(acc, spec, input, &batch, &mut rows)?;
                }
            }
            PipelineOp::Aggregate { aggs, .. } if self.group_columns.is_some() => {
                let group_columns = self.group_columns.as_deref().unwrap_or(&[]);
                st.bytes_touched += self.aggregate_bytes(page) + group_bytes(page, group_columns);
                let mut rows = PageRows {
                    page,
                    wanted: &self.wanted,
                    row: &mut st.row,
                };
                let grouped = GroupedPage {
                    batch: Batch {
                        page,
                        types: &self.types,
                        sel,
                        params: &self.params,
                    },
                    group_columns,
                    aggs,
                    inputs: &self.inputs,
                };
                fold_grouped_page(&grouped, &mut st.groups, &mut st.group_scratch, &mut rows)?;
            }
            PipelineOp::Aggregate { .. } => {
                let mut row = std::mem::take(&mut st.row);
                for &s in sel.iter() {
                    page.decode_row_into(s, Some(&self.wanted), &mut row)?;
                    self.fold_row(st, &row)?;
                }
                st.row = row;
            }
        }
        Ok(())
    }

    /// Minipage bytes of the columns the row path decodes.
    fn wanted_bytes(&self, page: &PageRef<'_>) -> u64 {
        (0..self.wanted.len())
            .filter(|&c| self.wanted[c])
            .map(|c| page.minipage_len(c) as u64)
            .sum()
    }

    /// Minipage bytes the aggregate inputs read from a page.
    fn aggregate_bytes(&self, page: &PageRef<'_>) -> u64 {
        if self.inputs.contains(&AggInput::Rows) {
            return self.wanted_bytes(page);
        }
        self.inputs
            .iter()
            .map(|input| match input {
                AggInput::Column(c) | AggInput::Spn(c) => page.minipage_len(*c) as u64,
                _ => 0,
            })
            .sum()
    }

    /// Runs one decoded row (the wanted columns set) through the filter
    /// and the operation: versions found by a chain walk.
    pub fn row(&self, st: &mut PipelineState, row: &[Value]) -> Result<()> {
        if let Some(p) = &self.program {
            if !p.eval_predicate(row, &self.params)? {
                return Ok(());
            }
        }
        st.qualified += 1;
        match &self.op {
            PipelineOp::Project { columns } => {
                let projected = self.projected_row(columns, |i| {
                    let c = columns.get(i).map_or(usize::MAX, |&c| c as usize);
                    Ok(row.get(c).cloned().unwrap_or(Value::Null))
                })?;
                st.rows.push(projected);
                Ok(())
            }
            PipelineOp::Aggregate { .. } => self.fold_row(st, row),
        }
    }

    fn fold_row(&self, st: &mut PipelineState, row: &[Value]) -> Result<()> {
        let PipelineOp::Aggregate { groups, aggs } = &self.op else {
            return Ok(());
        };
        let accs = if groups.is_empty() {
            st.plain
                .get_or_insert_with(|| aggs.iter().map(Acc::new).collect())
        } else {
            let gv: Vec<Value> = groups
                .iter()
                .map(|p| p.eval(row, &self.params))
                .collect::<Result<_>>()?;
            let mut w = Writer::new();
            for v in &gv {
                v.key_bytes(&mut w);
            }
            &mut st
                .groups
                .entry(w.into_inner())
                .or_insert_with(|| (gv, aggs.iter().map(Acc::new).collect()))
                .1
        };
        for (acc, spec) in accs.iter_mut().zip(aggs) {
            let v = match &spec.arg {
                Some(p) => p.eval(row, &self.params)?,
                None => Value::Null,
            };
            acc.add(spec, v)?;
        }
        Ok(())
    }

    /// The worker's partial as groups (the plain aggregate under the empty key).
    pub fn finish(&self, mut st: PipelineState) -> Groups {
        if let Some(accs) = st.plain.take() {
            st.groups.insert(Vec::new(), (Vec::new(), accs));
        }
        st.groups
    }
}
