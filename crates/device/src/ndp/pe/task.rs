//! What one processing element is given (DESIGN.md §5; DANSEN §3.3):
//! its share of the job's VIDs, the job's invocation and pass-along
//! state, and what it hands back — and the reads every part of a PE
//! makes: the heads of a chunk of VIDs, the current head of one tuple,
//! and whether the job's snapshot sees a version.
//!
//! ```text
//!  job ─► PeTask {core, inv, shared, chunks: first, first+step, …, …}
//!  heads of chunk c (VIDs c·1024 … c·1024+1023):
//!      ΔVID overlay (pass_along.rs), else the device VID map
//!  current head of a tuple (certification): target version, else
//!      ΔVID overlay, else the device VID map
//!  PE ─► (PeOutput, PeStats) + ModifyPart (update NDP)
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use ndpdb_formats::agg::Acc;
use ndpdb_formats::page::PageRef;
use ndpdb_formats::{Error, RecId, SqlState, Value, Vid};
use ndpdb_link::ndp::{FanOut, Invocation};
use ndpdb_link::LinkError;
use ndpdb_scan::Pipeline;

use crate::core::Core;
use crate::ndp::pass_along::PassedAlong;
use crate::ndp::update::ModifyCtx;

/// VIDs a PE takes at a time (one map read, one preload batch).
pub(crate) const CHUNK: u64 = 1024;

/// What one PE produced. Scan rows are kept per chunk so the merge can
/// return them in VID order.
pub(crate) enum PeOutput {
    Rows(Vec<(u64, Vec<Vec<Value>>)>),
    Groups(HashMap<Vec<u8>, (Vec<Value>, Vec<Acc>)>),
    /// Update NDP: the result is the PE's [`ModifyPart`].
    Modified,
}

pub(crate) struct PeStats {
    pub tuples: u64,
    pub micros: u64,
    pub pages_read: u64,
    pub pages_filtered: u64,
    pub pages_pruned: u64,
    pub bytes_touched: u64,
    pub fan_out: FanOut,
}

/// The chunks of VIDs one PE walks: `first`, `first + step`, …
#[derive(Clone, Copy)]
pub(crate) struct Chunks {
    pub first: u64,
    pub step: u64,
    pub vids: u64,
}

impl Chunks {
    pub(super) fn iter(self) -> impl Iterator<Item = u64> {
        (self.first..)
            .step_by(self.step.max(1) as usize)
            .take_while(move |c| c * CHUNK < self.vids)
    }
}

/// Everything a PE needs, borrowed from the job.
pub(crate) struct PeTask<'a> {
    pub core: &'a Core,
    pub inv: &'a Invocation,
    pub shared: &'a PassedAlong,
    pub chunks: Chunks,
    /// Columns the pipeline reads (the rest is skipped, not decoded).
    pub wanted: &'a [bool],
    pub cancel: &'a AtomicBool,
    /// CPU the PE and its preloader run on.
    pub cpu: Option<usize>,
    /// Set for update NDP (UPDATE / DELETE).
    pub modify: Option<&'a ModifyCtx<'a>>,
    /// Scans and aggregates run page by page through the scan core.
    pub pipeline: Option<&'a Pipeline>,
    /// Versions to work on instead of walking the VIDs, sorted by VID: a
    /// SELECT … FOR UPDATE's locked versions or an NDP pipeline stage.
    /// Each is the tuple's head for this job (`ndp/stages.rs`).
    pub targets: &'a [(Vid, RecId)],
}

impl PeTask<'_> {
    pub(super) fn check_cancel(&self) -> Result<(), Error> {
        if self.cancel.load(Ordering::Relaxed) {
            Err(Error::sql(SqlState::QUERY_CANCELED, "NDP job aborted"))
        } else {
            Ok(())
        }
    }
}

pub(super) fn from_link(e: LinkError) -> Error {
    match e {
        LinkError::Corrupted(m) | LinkError::OutOfRange(m) => Error::corrupted(m),
        other => Error::sql(SqlState::IO_ERROR, other.to_string()),
    }
}

pub(super) fn pin(cpu: Option<usize>) {
    if let Some(id) = cpu {
        core_affinity::set_for_current(core_affinity::CoreId { id });
    }
}

/// The current head of `vid`: a target version first (the job's
/// transaction holds the tuple, or created that version), then the
/// passed-along overlay, else the device VID map.
pub(super) fn current_head(task: &PeTask, vid: Vid) -> RecId {
    if let Some(r) = crate::ndp::stages::target_version(task.targets, vid) {
        return r;
    }
    if let Some(r) = task.shared.head(vid) {
        return r;
    }
    let maps = task.core.maps.read();
    maps.vids
        .get(&task.inv.table)
        .and_then(|m| m.get(vid.0 as usize))
        .map_or(RecId::NULL, |r| RecId::from_raw(*r))
}

/// Whether the job's snapshot sees the version at `rid` (read without
/// the PE's page cache: certification is rare and must see the newest
/// maps).
pub(super) fn visible_at(task: &PeTask, rid: RecId) -> Result<bool, Error> {
    let lpn = rid.lpn();
    let page =
        match task.shared.page(rid) {
            Some(p) => p.clone(),
            None => {
                let ppn =
                    task.core.maps.read().l2p.get(&lpn).ok_or_else(|| {
                        Error::corrupted(format!("{rid} points to an unmapped page"))
                    })?;
                task.core.store.page(ppn).map_err(from_link)?
            }
        };
    let header = PageRef::parse(&page)?
        .header(rid.slot())?
        .ok_or_else(|| Error::corrupted(format!("{rid} is an empty slot")))?;
    Ok(task.inv.snapshot.sees(header.creator))
}

/// Head RecIds of the VIDs of `chunk` (NULL where a VID has none).
pub(super) fn chunk_heads(task: &PeTask, chunk: u64, heads: &mut Vec<RecId>) {
    let from = chunk * CHUNK;
    let to = (from + CHUNK).min(task.chunks.vids);
    heads.clear();
    let maps = task.core.maps.read();
    let map = maps.vids.get(&task.inv.table);
    if task.shared.vids.is_empty() {
        let raw = map.map_or(&[][..], |m| {
            &m[(from as usize).min(m.len())..(to as usize).min(m.len())]
        });
        heads.extend(raw.iter().map(|r| RecId::from_raw(*r)));
        heads.resize((to - from) as usize, RecId::NULL);
        return;
    }
    for v in from..to {
        let head = match task.shared.head(Vid(v)) {
            Some(r) => r,
            None => map
                .and_then(|m| m.get(v as usize))
                .map_or(RecId::NULL, |r| RecId::from_raw(*r)),
        };
        heads.push(head);
    }
}
