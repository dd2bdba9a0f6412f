//! Visibility by page: a scan's walk over the VID-map heads of one chunk,
//! shared by the device's PEs and the host's scan workers.
//!
//! A chunk's heads are walked in page order — sorted by record id, so by
//! page and slot — and the heads on one page form a run. (In VID order a
//! table whose rows were updated scatters: TPC-C's Delivery rewrites
//! ORDER-LINE rows into new pages, and at 10 CH-benCHmark warehouses after
//! a few OLTP runs the runs were 3.5 heads long, each page filtered 17
//! times.) A run is resolved once and checked against the page summary:
//! when the page's newest creator is older than the snapshot's xmin and it
//! holds no tombstones, every head in the run is the version the snapshot
//! sees and the run goes to the kernels as it is. Otherwise each head's
//! creator is checked against the snapshot; a head the snapshot does not
//! see is a straggler — the rows before it run through the kernels, then
//! its chain is walked and the visible version runs through the row path.
//! Rows come out chunk by chunk in VID order and, within a chunk, in the
//! order of the pages holding their newest versions — close to the
//! physical order in which PostgreSQL's heap scan returns rows.
//!
//! ```text
//!  heads (VID order): 7:0 7:1 8:0 9:4 7:2 8:1 …
//!  sorted:            7:0 7:1 7:2 │ 8:0 8:1 │ 9:4 │ …
//!                     └ run on 7 ┘  └run 8 ┘  └9┘
//!  run ─► summary: all visible? ─► selection [0 1 2] ─► kernels
//!                  no ─► per head: sees(creator)? ─► selection
//!                                  no ─► flush selection, walk chain, row path
//! ```

use ndpdb_formats::page::layout::DIR_ENTRY_SIZE;
use ndpdb_formats::page::{PageRef, PAGE_HEADER_SIZE, VERSION_FIELDS_SIZE};
use ndpdb_formats::visibility::Snapshot;
use ndpdb_formats::{Error, Lpn, RecId, Result, Value};

use crate::{prefetch, Pipeline, PipelineState};

/// Where a scan gets pages and older versions from.
pub trait PageSource {
    /// How the source holds a page.
    type Page: std::ops::Deref<Target = [u8]>;
    /// The page `lpn`, holding at least slots `0..=last`.
    fn page(&mut self, lpn: Lpn, last: u16) -> Result<Self::Page>;
    /// The version of the chain from `rid` (older than a head the snapshot
    /// does not see) visible to the snapshot, decoded into `row`; `false`
    /// if there is none or it is a tombstone.
    fn older_visible(&mut self, rid: RecId, row: &mut Vec<Value>) -> Result<bool>;
}

/// A scan worker's reusable buffers.
#[derive(Default)]
pub struct RunBuffers {
    sel: Vec<u16>,
    row: Vec<Value>,
    /// The chunk's runs: `(first head, end, last slot)`.
    runs: Vec<(usize, usize, u16)>,
    /// The chunk's heads in page order.
    sorted: Vec<RecId>,
}

/// Runs the tuples whose heads are `heads` (NULL = no tuple) through
/// `pipeline`; returns how many heads were not NULL.
pub fn walk_heads<S: PageSource>(
    pipeline: &Pipeline,
    state: &mut PipelineState,
    snapshot: &Snapshot,
    heads: &[RecId],
    source: &mut S,
    buf: &mut RunBuffers,
) -> Result<u64> {
    let mut sorted = std::mem::take(&mut buf.sorted);
    sorted.clear();
    sorted.extend_from_slice(heads);
    sorted.sort_unstable();
    let heads = &sorted[..];
    // Runs of consecutive heads on one page.
    buf.runs.clear();
    let mut tuples = 0;
    let mut i = 0;
    while i < heads.len() {
        let head = heads[i];
        if head.is_null() {
            i += 1;
            continue;
        }
        let lpn = head.lpn();
        let mut j = i + 1;
        let mut last = head.slot();
        while j < heads.len() && !heads[j].is_null() && heads[j].lpn() == lpn {
            last = last.max(heads[j].slot());
            j += 1;
        }
        tuples += (j - i) as u64;
        buf.runs.push((i, j, last));
        i = j;
    }
    // Their pages, resolved up front so the walk can prefetch ahead.
    let runs = std::mem::take(&mut buf.runs);
    let mut pages = Vec::with_capacity(runs.len());
    for &(i, _, last) in &runs {
        pages.push(source.page(heads[i].lpn(), last)?);
    }
    let columns = pipeline.column_count();
    for p in pages.iter().take(2) {
        prefetch::header(p, columns);
    }
    if let Some(p) = pages.first() {
        prefetch::columns(p, pipeline.prefetch_columns());
    }
    for (k, &(i, j, last)) in runs.iter().enumerate() {
        if let Some(p) = pages.get(k + 2) {
            prefetch::header(p, columns);
        }
        if let Some(p) = pages.get(k + 1) {
            prefetch::columns(p, pipeline.prefetch_columns());
        }
        walk_run(
            pipeline,
            state,
            snapshot,
            &heads[i..j],
            last,
            &pages[k],
            source,
            buf,
        )?;
    }
    buf.runs = runs;
    buf.sorted = sorted;
    Ok(tuples)
}

/// One run of heads on one page.
#[allow(clippy::too_many_arguments)]
fn walk_run<S: PageSource>(
    pipeline: &Pipeline,
    state: &mut PipelineState,
    snapshot: &Snapshot,
    run: &[RecId],
    last: u16,
    page: &[u8],
    source: &mut S,
    buf: &mut RunBuffers,
) -> Result<()> {
    let view = PageRef::parse(page)?;
    if last >= view.slot_count() {
        return Err(Error::corrupted(format!(
            "{} is beyond its page",
            RecId::new(view.lpn(), last)
        )));
    }
    let (_, newest) = view.creator_range();
    let all_visible = newest < snapshot.xmin && view.tombstones() == 0 && view.empty_slots() == 0;
    state.bytes_touched += (PAGE_HEADER_SIZE + DIR_ENTRY_SIZE * view.column_count()) as u64;
    if !all_visible {
        state.bytes_touched += (VERSION_FIELDS_SIZE * view.slot_count() as usize) as u64;
    }
    let sel = &mut buf.sel;
    sel.clear();
    if all_visible {
        sel.extend(run.iter().map(|h| h.slot()));
        return pipeline.page(state, &view, sel);
    }
    for h in run {
        let slot = h.slot();
        let header = view
            .header(slot)?
            .ok_or_else(|| Error::corrupted(format!("{h} is an empty slot")))?;
        if snapshot.sees(header.creator) {
            if !header.is_tombstone() {
                sel.push(slot);
            }
            continue;
        }
        if !sel.is_empty() {
            pipeline.page(state, &view, sel)?;
            sel.clear();
        }
        if !header.pred.is_null() && source.older_visible(header.pred, &mut buf.row)? {
            pipeline.row(state, &buf.row)?;
        }
    }
    if !sel.is_empty() {
        pipeline.page(state, &view, sel)?;
    }
    Ok(())
}
