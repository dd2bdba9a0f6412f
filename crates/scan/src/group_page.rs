//! GROUP BY over a page selection: the selected rows split by their group
//! key, then each group's rows through the same typed kernels as an
//! aggregate without GROUP BY ([`fold_page`]).
//!
//! ```text
//!  selection ─► group columns' values ─► key bytes ─► page group #
//!     [3,4,7,9,12]      ol_number            │        (reused map)
//!                                            ▼
//!                        group 0: [3,9]   group 1: [4,7,12]   …
//!                            │                  │
//!          worker's group ◄──┘ one lookup a     └─► fold_page per
//!          (key → Accs)        group per page       aggregate (kernels)
//! ```
//!
//! Before, every row of a grouped aggregate was decoded into values, its
//! group values and key allocated and looked up, and each aggregate's
//! argument evaluated and added one value at a time. CH-benCHmark's Q1
//! (3 M order lines into 15 groups) spent most of its time there.
//!
//! Applies when every GROUP BY expression is a column as stored; other
//! groupings stay on the row path. Group keys are [`Value::key_bytes`],
//! as on the row path, so rows of one group found by either path fold
//! into the same accumulators.

use ndpdb_formats::agg::{Acc, AggSpec};
use ndpdb_formats::codec::Writer;
use ndpdb_formats::expr::Program;
use ndpdb_formats::page::PageRef;
use ndpdb_formats::{DataType, Result, Value};
use rustc_hash::FxHashMap;

use crate::aggregate::{fold_page, AggInput, Batch, RowSource};
use crate::groups::Groups;
use crate::kernel::column;

/// The group columns, when every GROUP BY program reads one column of
/// the table as stored.
pub fn group_columns(groups: &[Program], types: &[DataType]) -> Option<Vec<usize>> {
    if groups.is_empty() {
        return None;
    }
    groups
        .iter()
        .map(|g| g.single_column().filter(|&c| c < types.len()))
        .collect()
}

/// A worker's buffers, reused page after page.
#[derive(Default)]
pub struct GroupScratch {
    /// Page group number by key.
    index: FxHashMap<Vec<u8>, usize>,
    /// Each page group's key and selected rows, in order of appearance.
    groups: Vec<(Vec<u8>, Vec<u16>)>,
    key: Writer,
}

/// What one grouped fold of a page reads.
pub struct GroupedPage<'p, 'a> {
    pub batch: Batch<'p, 'a>,
    pub group_columns: &'p [usize],
    pub aggs: &'p [AggSpec],
    pub inputs: &'p [AggInput],
}

/// Folds the rows of `page.batch` into the worker's `groups`.
pub fn fold_grouped_page(
    page: &GroupedPage<'_, '_>,
    groups: &mut Groups,
    scratch: &mut GroupScratch,
    rows: &mut dyn RowSource,
) -> Result<()> {
    let batch = &page.batch;
    let cols = page
        .group_columns
        .iter()
        .map(|&c| column(batch.page, c, batch.types[c]))
        .collect::<Result<Vec<_>>>()?;
    let GroupScratch {
        index,
        groups: page_groups,
        key,
    } = scratch;
    index.clear();
    let mut used = 0;
    for &s in batch.sel {
        key.clear();
        for c in &cols {
            c.value(s as usize)?.key_bytes(key);
        }
        let g = match index.get(key.as_slice()) {
            Some(&g) => g,
            None => {
                // Page groups keep their allocations from page to page.
                if used == page_groups.len() {
                    page_groups.push((Vec::new(), Vec::new()));
                }
                let (k, sel) = &mut page_groups[used];
                k.clear();
                k.extend_from_slice(key.as_slice());
                sel.clear();
                index.insert(k.clone(), used);
                used += 1;
                used - 1
            }
        };
        page_groups[g].1.push(s);
    }
    for (k, sel) in &page_groups[..used] {
        if !groups.contains_key(k.as_slice()) {
            let first = sel.first().copied().unwrap_or(0) as usize;
            let values = cols
                .iter()
                .map(|c| c.value(first))
                .collect::<Result<Vec<Value>>>()?;
            let accs = page.aggs.iter().map(Acc::new).collect();
            groups.insert(k.clone(), (values, accs));
        }
        let Some((_, accs)) = groups.get_mut(k.as_slice()) else {
            continue;
        };
        let group_batch = Batch {
            page: batch.page,
            types: batch.types,
            sel,
            params: batch.params,
        };
        for ((acc, spec), input) in accs.iter_mut().zip(page.aggs).zip(page.inputs) {
            fold_page(acc, spec, input, &group_batch, rows)?;
        }
    }
    Ok(())
}

/// Minipage bytes of the group columns.
pub fn group_bytes(page: &PageRef<'_>, group_columns: &[usize]) -> u64 {
    group_columns
        .iter()
        .map(|&c| page.minipage_len(c) as u64)
        .sum()
}
