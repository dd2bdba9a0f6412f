//! One processing element and its preloader (DESIGN.md §5; DANSEN §3.3,
//! Algorithm 1, Experiment 4).
//!
//! A PE walks its chunks of VIDs: head (ΔVID overlay, else the device VID
//! map) → page (passed-along delta page, else L2P → store) → header →
//! visibility walk → filter → operation. With the preloader on, a second
//! thread per PE runs ahead of the walk and fetches the head pages of the
//! next chunks in sorted batches, so storage latency overlaps compute:
//!
//! ```text
//!   preloader thread                                PE thread
//!   chunk k+2: heads ← overlay / VID map
//!              PPNs  ← L2P, sorted, deduplicated
//!              pages ← store (one NVM access)  ─► [batch k+1] ─┐ bounded queue
//!                                                 [batch k  ] ─┴► walk chunk k
//! ```
//!
//! A medium without latency (NVM profile `off`) leaves nothing to
//! overlap: the batches then load inline on the PE's thread.
//!
//! Without the preloader the PE resolves everything on demand and every
//! record it reads from the store is one NVM access (see [`crate::nvm`]).
//! Predecessor versions on pages the preloader did not fetch are read on
//! demand in both modes.
//!
//! Scans and aggregates go page by page (`page_walk`, the scan core's
//! visibility by page): a chunk's heads that share a page are checked
//! against the page's summary and run through the kernels together.

pub(crate) mod in_osds;
mod page_walk;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::time::Instant;

use rustc_hash::FxHashMap;

use ndpdb_formats::agg::Acc;
use ndpdb_formats::codec::Writer;
use ndpdb_formats::page::PageRef;
use ndpdb_formats::record::RecordHeader;
use ndpdb_formats::visibility::{find_visible, Visible};
use ndpdb_formats::{Error, Lpn, Ppn, RecId, SqlState, Value, Vid};
use ndpdb_link::ndp::{FanOut, Invocation, NdpOp};
use ndpdb_link::LinkError;

use ndpdb_scan::{Pipeline, PipelineState, RunBuffers};

use crate::engine::Core;
use crate::store::PageBytes;
use crate::update::{
    lock_current, modify_row, unloader, HeadCheck, ModifyCtx, ModifyPart, PageWriter, RowChange,
};

/// VIDs a PE takes at a time (one map read, one preload batch).
pub(crate) const CHUNK: u64 = 1024;
/// Pages a PE keeps cached.
const PE_CACHE_PAGES: usize = 512;
/// Batches the preloader may run ahead of its PE.
const PRELOAD_DEPTH: usize = 2;

/// The passed-along shared state, as the device caches it for one job.
pub(crate) struct Cached {
    pub pages: FxHashMap<Lpn, PageBytes>,
    pub vids: FxHashMap<Vid, RecId>,
}

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
    fn iter(self) -> impl Iterator<Item = u64> {
        (self.first..)
            .step_by(self.step.max(1) as usize)
            .take_while(move |c| c * CHUNK < self.vids)
    }
}

/// Everything a PE needs, borrowed from the job.
pub(crate) struct PeTask<'a> {
    pub core: &'a Core,
    pub inv: &'a Invocation,
    pub shared: &'a Cached,
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
    /// Each is the tuple's head for this job (`crate::pipeline`).
    pub targets: &'a [(Vid, RecId)],
}

impl PeTask<'_> {
    fn check_cancel(&self) -> Result<(), Error> {
        if self.cancel.load(Ordering::Relaxed) {
            Err(Error::sql(SqlState::QUERY_CANCELED, "NDP job aborted"))
        } else {
            Ok(())
        }
    }
}

fn from_link(e: LinkError) -> Error {
    match e {
        LinkError::Corrupted(m) | LinkError::OutOfRange(m) => Error::corrupted(m),
        other => Error::sql(SqlState::IO_ERROR, other.to_string()),
    }
}

fn pin(cpu: Option<usize>) {
    if let Some(id) = cpu {
        core_affinity::set_for_current(core_affinity::CoreId { id });
    }
}

/// Runs one PE to completion (on the calling thread, plus its preloader
/// and, for update NDP, its unloader). The modify part (locks taken,
/// versions written) comes back even when the PE failed: the host must
/// release those locks.
pub(crate) fn run_pe(task: &PeTask) -> (Result<(PeOutput, PeStats), Error>, ModifyPart) {
    pin(task.cpu);
    let t0 = Instant::now();
    let mut walker = Walker::new(task);
    let result = std::thread::scope(|s| {
        let unload = match task.modify {
            Some(ctx) => {
                let (writer, rx) = PageWriter::new(ctx.space, task.inv.table, &task.inv.types);
                walker.writer = Some(writer);
                let (core, space) = (task.core, ctx.space);
                let h = std::thread::Builder::new()
                    .name(format!("ndp-unl-{}", task.chunks.first))
                    .spawn_scoped(s, move || {
                        pin(task.cpu);
                        unloader(core, space, rx)
                    })
                    .map_err(|e| {
                        Error::sql(
                            SqlState::INTERNAL_ERROR,
                            format!("cannot start an unloader: {e}"),
                        )
                    })?;
                Some(h)
            }
            None => None,
        };
        let walked = walk_all(task, &mut walker, s);
        let closed = match walker.writer.as_mut() {
            Some(w) => w.close(&mut walker.part.written),
            None => Ok(()),
        };
        let unloaded = match unload {
            Some(h) => h.join().unwrap_or_else(|_| {
                Err(Error::sql(SqlState::INTERNAL_ERROR, "an unloader panicked"))
            }),
            None => Ok(()),
        };
        walked.and(closed).and(unloaded)
    });
    if result.is_err() && task.modify.is_some() {
        // An update job stops on all PEs at the first failure.
        task.cancel.store(true, Ordering::Relaxed);
        if let Some(ctx) = task.modify {
            ctx.space.wake();
        }
    }
    let part = std::mem::take(&mut walker.part);
    (result.map(|()| walker.finish(t0)), part)
}

/// Walks all chunks of the PE, through the preloader if enabled.
fn walk_all<'scope, 'env>(
    task: &'env PeTask<'env>,
    walker: &mut Walker<'_>,
    s: &'scope std::thread::Scope<'scope, 'env>,
) -> Result<(), Error> {
    if !task.targets.is_empty() {
        let step = task.chunks.step.max(1) as usize;
        for (i, (vid, read)) in task.targets.iter().enumerate() {
            if i % step != task.chunks.first as usize {
                continue;
            }
            task.check_cancel()?;
            walker.apply_target(*vid, *read)?;
        }
        return Ok(());
    }
    if let Some(method) = in_osds::method(task.pipeline.is_some(), &task.inv.op) {
        if let Some(objects) = task.core.store.objects_with(method) {
            return in_osds::walk(task, walker, objects, method);
        }
    }
    if task.inv.preload && task.core.store.nvm.read_ns == 0 {
        // A medium without latency leaves nothing to overlap: the batches
        // load inline, without a second thread competing for the PE's CPU.
        for chunk in task.chunks.iter() {
            task.check_cancel()?;
            let batch = load_batch(task, chunk)?;
            walker.cache.admit(batch.pages);
            walker.walk(batch.chunk, &batch.heads)?;
        }
    } else if task.inv.preload {
        let (tx, rx) = sync_channel(PRELOAD_DEPTH);
        std::thread::Builder::new()
            .name(format!("ndp-pre-{}", task.chunks.first))
            .spawn_scoped(s, move || preloader(task, tx))
            .map_err(|e| {
                Error::sql(
                    SqlState::INTERNAL_ERROR,
                    format!("cannot start a preloader: {e}"),
                )
            })?;
        // Returning early drops `rx`: the preloader's next send fails and
        // it stops.
        for batch in rx {
            let batch: Batch = batch?;
            task.check_cancel()?;
            walker.cache.admit(batch.pages);
            walker.walk(batch.chunk, &batch.heads)?;
        }
    } else {
        let mut heads = Vec::with_capacity(CHUNK as usize);
        for chunk in task.chunks.iter() {
            task.check_cancel()?;
            chunk_heads(task, chunk, &mut heads);
            walker.walk(chunk, &heads)?;
        }
    }
    Ok(())
}

/// The current head of `vid`: a target version first (the job's
/// transaction holds the tuple, or created that version), then the
/// passed-along overlay, else the device VID map.
fn current_head(task: &PeTask, vid: Vid) -> RecId {
    if let Some(r) = crate::pipeline::target_version(task.targets, vid) {
        return r;
    }
    if let Some(r) = task.shared.vids.get(&vid) {
        return *r;
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
fn visible_at(task: &PeTask, rid: RecId) -> Result<bool, Error> {
    let lpn = rid.lpn();
    let page =
        match task.shared.pages.get(&lpn).filter(|p| has_slot(p, rid)) {
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
fn chunk_heads(task: &PeTask, chunk: u64, heads: &mut Vec<RecId>) {
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
        let head = match task.shared.vids.get(&Vid(v)) {
            Some(r) => *r,
            None => map
                .and_then(|m| m.get(v as usize))
                .map_or(RecId::NULL, |r| RecId::from_raw(*r)),
        };
        heads.push(head);
    }
}

/// A chunk's heads and the store pages they live on.
struct Batch {
    chunk: u64,
    heads: Vec<RecId>,
    pages: Vec<(Ppn, PageBytes)>,
}

fn preloader(task: &PeTask, tx: SyncSender<Result<Batch, Error>>) {
    pin(task.cpu);
    for chunk in task.chunks.iter() {
        if task.cancel.load(Ordering::Relaxed) {
            return;
        }
        let batch = load_batch(task, chunk);
        let failed = batch.is_err();
        if tx.send(batch).is_err() || failed {
            return;
        }
    }
}

/// Reads the head pages of `chunk` in one sorted batch (one NVM access).
fn load_batch(task: &PeTask, chunk: u64) -> Result<Batch, Error> {
    let mut heads = Vec::with_capacity(CHUNK as usize);
    chunk_heads(task, chunk, &mut heads);
    let pages = head_pages(task, &heads)?;
    Ok(Batch {
        chunk,
        heads,
        pages,
    })
}

/// The store pages `heads` lie on, read in one sorted batch (one NVM
/// access; on RADOS one read per run of consecutive pages).
fn head_pages(task: &PeTask, heads: &[RecId]) -> Result<Vec<(Ppn, PageBytes)>, Error> {
    let mut ppns: Vec<Ppn> = Vec::new();
    {
        let maps = task.core.maps.read();
        let mut last = None;
        for h in heads.iter().filter(|h| !h.is_null()) {
            let lpn = h.lpn();
            if last == Some(lpn) || task.shared.pages.contains_key(&lpn) {
                continue;
            }
            last = Some(lpn);
            if let Some(p) = maps.l2p.get(&lpn) {
                ppns.push(p);
            }
        }
    }
    ppns.sort_unstable();
    ppns.dedup();
    if !ppns.is_empty() {
        task.core.store.nvm.read_access();
    }
    let mut pages = Vec::with_capacity(ppns.len());
    task.core
        .store
        .pages(&ppns, &mut pages)
        .map_err(from_link)?;
    Ok(pages)
}

/// A PE's page cache (cleared when full; the walk is mostly sequential).
struct PageCache {
    pages: FxHashMap<Ppn, PageBytes>,
    loaded: u64,
    /// The store page of the previous record (consecutive VIDs share pages).
    last: Option<(Lpn, PageBytes)>,
}

impl PageCache {
    /// Takes in a preloaded batch.
    fn admit(&mut self, pages: Vec<(Ppn, PageBytes)>) {
        if self.pages.len() + pages.len() > PE_CACHE_PAGES {
            self.pages.clear();
        }
        self.loaded += pages.len() as u64;
        self.pages.extend(pages);
    }

    /// A page by PPN, read on demand (as one NVM access if `charge`).
    fn get(&mut self, core: &Core, ppn: Ppn, charge: bool) -> Result<PageBytes, Error> {
        if let Some(p) = self.pages.get(&ppn) {
            return Ok(p.clone());
        }
        if charge {
            core.store.nvm.read_access();
        }
        let page = core.store.page(ppn).map_err(from_link)?;
        if self.pages.len() >= PE_CACHE_PAGES {
            self.pages.clear();
        }
        self.pages.insert(ppn, page.clone());
        self.loaded += 1;
        Ok(page)
    }
}

fn has_slot(page: &[u8], rid: RecId) -> bool {
    PageRef::parse(page).is_ok_and(|v| rid.slot() < v.slot_count())
}

/// A version inside a page (the page was parsed when it was resolved).
struct Rec {
    page: PageBytes,
    slot: u16,
}

impl Rec {
    fn view(&self) -> Result<PageRef<'_>, Error> {
        PageRef::parse(&self.page)
    }

    fn header(&self) -> Result<RecordHeader, Error> {
        self.view()?
            .header(self.slot)?
            .ok_or_else(|| Error::corrupted(format!("slot {} is empty", self.slot)))
    }

    /// Decodes the wanted columns into `row`.
    fn decode_into(&self, wanted: &[bool], row: &mut Vec<Value>) -> Result<(), Error> {
        self.view()?.decode_row_into(self.slot, Some(wanted), row)
    }
}

/// A PE's walk state and partial results.
struct Walker<'a> {
    task: &'a PeTask<'a>,
    cache: PageCache,
    /// Reused row buffer.
    row: Vec<Value>,
    rows: Vec<(u64, Vec<Vec<Value>>)>,
    groups: HashMap<Vec<u8>, (Vec<Value>, Vec<Acc>)>,
    /// Accumulators of an aggregate without GROUP BY (no hashing per row).
    plain: Option<Vec<Acc>>,
    tuples: u64,
    /// Update NDP: the page being filled, and what was locked and written.
    writer: Option<PageWriter<'a>>,
    part: ModifyPart,
    /// Scans and aggregates: the pipeline's partial result.
    state: PipelineState,
    /// Reused buffers of the page walk.
    buffers: RunBuffers,
    /// A scan run in the objects of a distributed store (`in_osds`).
    fan_out: FanOut,
}

impl<'a> Walker<'a> {
    fn new(task: &'a PeTask<'a>) -> Walker<'a> {
        Walker {
            task,
            cache: PageCache {
                pages: FxHashMap::default(),
                loaded: 0,
                last: None,
            },
            row: Vec::with_capacity(task.inv.types.len()),
            rows: Vec::new(),
            groups: HashMap::new(),
            plain: None,
            tuples: 0,
            writer: None,
            part: ModifyPart::default(),
            state: PipelineState::default(),
            buffers: RunBuffers::default(),
            fan_out: FanOut::default(),
        }
    }

    /// Resolves a RecId to its bytes: passed-along page first, else store.
    fn resolve(&mut self, rid: RecId) -> Result<Rec, Error> {
        let page = self.resolve_page(rid)?;
        let view = PageRef::parse(&page)?;
        if view.header(rid.slot())?.is_none() {
            return Err(Error::corrupted(format!("{rid} is an empty slot")));
        }
        Ok(Rec {
            page,
            slot: rid.slot(),
        })
    }

    /// The page holding `rid`: passed-along page first, else store.
    fn resolve_page(&mut self, rid: RecId) -> Result<PageBytes, Error> {
        let (core, shared) = (self.task.core, self.task.shared);
        let direct = !self.task.inv.preload;
        let lpn = rid.lpn();
        // A passed-along page may have gained records after it was captured
        // (and then been flushed, which is why a map now points past its
        // end): those records are read from the store.
        let captured = shared.pages.get(&lpn).filter(|p| has_slot(p, rid));
        let page = match captured {
            Some(p) => p.clone(),
            None => {
                if direct {
                    // Without a preloader every record is read from the medium.
                    core.store.nvm.read_access();
                }
                match &self.cache.last {
                    // (An older flush of the same LPN lacks newer slots.)
                    Some((l, p)) if *l == lpn && has_slot(p, rid) => p.clone(),
                    _ => {
                        let ppn = core.maps.read().l2p.get(&lpn).ok_or_else(|| {
                            Error::corrupted(format!("{rid} points to an unmapped page"))
                        })?;
                        let page = self.cache.get(core, ppn, !direct)?;
                        self.cache.last = Some((lpn, page.clone()));
                        page
                    }
                }
            }
        };
        Ok(page)
    }

    /// Walks one chunk: visibility → filter → operation per head.
    fn walk(&mut self, chunk: u64, heads: &[RecId]) -> Result<(), Error> {
        if let Some(pipeline) = self.task.pipeline {
            return self.walk_pages(chunk, heads, pipeline);
        }
        let task = self.task;
        let mut chunk_rows = Vec::new();
        for (i, head) in heads.iter().enumerate() {
            if head.is_null() {
                continue;
            }
            if task.modify.is_some() && task.cancel.load(Ordering::Relaxed) {
                return Err(Error::sql(SqlState::QUERY_CANCELED, "NDP job aborted"));
            }
            self.tuples += 1;
            self.walk_head(Vid(chunk * CHUNK + i as u64), *head, &mut chunk_rows)?;
        }
        if !chunk_rows.is_empty() {
            self.rows.push((chunk, chunk_rows));
        }
        Ok(())
    }

    /// One tuple: visibility walk from its head → filter → operation.
    fn walk_head(
        &mut self,
        vid: Vid,
        head: RecId,
        chunk_rows: &mut Vec<Vec<Value>>,
    ) -> Result<(), Error> {
        let inv = self.task.inv;
        let visible = find_visible(head, &inv.snapshot, |rid| {
            let rec = self.resolve(rid)?;
            let h = rec.header()?;
            Ok::<_, Error>((h, rec))
        })?;
        let Visible::Version(read, rec) = visible else {
            return Ok(());
        };
        rec.decode_into(self.task.wanted, &mut self.row)?;
        if let Some(f) = &inv.filter {
            if !f.eval_predicate(&self.row, &inv.params)? {
                return Ok(());
            }
        }
        self.apply_op(vid, read, chunk_rows)
    }

    /// The operation on one visible, qualifying row (in `self.row`).
    fn apply_op(
        &mut self,
        vid: Vid,
        read: RecId,
        chunk_rows: &mut Vec<Vec<Value>>,
    ) -> Result<(), Error> {
        let inv = self.task.inv;
        let task = self.task;
        let row = &self.row;
        match &inv.op {
            NdpOp::Scan { columns } => {
                chunk_rows.push(columns.iter().map(|&c| row[c as usize].clone()).collect());
            }
            NdpOp::LockRows { columns } => {
                let Some(ctx) = task.modify else {
                    return Err(Error::sql(
                        SqlState::INTERNAL_ERROR,
                        "SELECT FOR UPDATE on the device without a lock context",
                    ));
                };
                let head = || current_head(task, vid);
                let visible = |rid| visible_at(task, rid);
                let check = HeadCheck {
                    head: &head,
                    visible: &visible,
                };
                if let Some(locked) = lock_current(
                    ctx,
                    &mut self.part,
                    inv.table,
                    vid,
                    read,
                    &check,
                    task.cancel,
                )? {
                    self.part.locked_versions.push((vid, locked));
                    // The VID rides along as a last column (the host needs it).
                    let mut out: Vec<Value> =
                        columns.iter().map(|&c| row[c as usize].clone()).collect();
                    out.push(Value::BigInt(vid.0 as i64));
                    chunk_rows.push(out);
                }
            }
            NdpOp::Aggregate { groups: gp, aggs } => {
                let accs = if gp.is_empty() {
                    self.plain
                        .get_or_insert_with(|| aggs.iter().map(Acc::new).collect())
                } else {
                    let gv: Vec<Value> = gp
                        .iter()
                        .map(|p| p.eval(row, &inv.params))
                        .collect::<Result<_, _>>()?;
                    let mut w = Writer::new();
                    for v in &gv {
                        v.key_bytes(&mut w);
                    }
                    &mut self
                        .groups
                        .entry(w.into_inner())
                        .or_insert_with(|| (gv, aggs.iter().map(Acc::new).collect()))
                        .1
                };
                for (acc, spec) in accs.iter_mut().zip(aggs) {
                    let v = match &spec.arg {
                        Some(p) => p.eval(row, &inv.params)?,
                        None => Value::Null,
                    };
                    acc.add(spec, v)?;
                }
            }
            NdpOp::Gc { .. } => {
                return Err(Error::sql(
                    SqlState::INTERNAL_ERROR,
                    "a GC job does not run on processing elements",
                ))
            }
            NdpOp::Update { .. } | NdpOp::Delete => {
                let (Some(ctx), Some(writer)) = (task.modify, self.writer.as_mut()) else {
                    return Err(Error::sql(
                        SqlState::INTERNAL_ERROR,
                        "update NDP without a modify context",
                    ));
                };
                let (sets, not_null) = match &inv.op {
                    NdpOp::Update { sets, not_null } => (Some(&sets[..]), &not_null[..]),
                    _ => (None, &[][..]),
                };
                let head = || current_head(task, vid);
                let visible = |rid| visible_at(task, rid);
                modify_row(
                    ctx,
                    writer,
                    &mut self.part,
                    inv.table,
                    &inv.types,
                    inv.snapshot.txid,
                    &inv.params,
                    RowChange {
                        vid,
                        read,
                        check: HeadCheck {
                            head: &head,
                            visible: &visible,
                        },
                        row,
                        sets,
                        not_null,
                    },
                    task.cancel,
                )?;
            }
        }
        Ok(())
    }

    /// Update NDP over target versions (locked by a SELECT … FOR UPDATE,
    /// or created by the transaction's previous statement): no visibility
    /// walk; the filter, if any, decides on the target version.
    fn apply_target(&mut self, vid: Vid, read: RecId) -> Result<(), Error> {
        self.tuples += 1;
        let rec = self.resolve(read)?;
        let h = rec.header()?;
        if h.vid != vid || h.is_tombstone() {
            return Err(Error::corrupted(format!(
                "target {read} is not a live version of VID {}",
                vid.0
            )));
        }
        rec.decode_into(self.task.wanted, &mut self.row)?;
        if let Some(f) = &self.task.inv.filter {
            if !f.eval_predicate(&self.row, &self.task.inv.params)? {
                return Ok(());
            }
        }
        let mut unused = Vec::new();
        self.apply_op(vid, read, &mut unused)
    }

    fn finish(mut self, t0: Instant) -> (PeOutput, PeStats) {
        let (pages_filtered, pages_pruned, bytes_touched) = (
            self.state.pages,
            self.state.pages_pruned,
            self.state.bytes_touched,
        );
        if let (Some(p), NdpOp::Aggregate { .. }) = (self.task.pipeline, &self.task.inv.op) {
            self.groups = p.finish(std::mem::take(&mut self.state));
        }
        if let Some(accs) = self.plain.take() {
            self.groups.insert(Vec::new(), (Vec::new(), accs));
        }
        let out = match self.task.inv.op {
            NdpOp::Scan { .. } => PeOutput::Rows(self.rows),
            NdpOp::Aggregate { .. } => PeOutput::Groups(self.groups),
            NdpOp::Update { .. } | NdpOp::Delete | NdpOp::Gc { .. } => PeOutput::Modified,
            NdpOp::LockRows { .. } => PeOutput::Rows(self.rows),
        };
        let stats = PeStats {
            tuples: self.tuples,
            micros: t0.elapsed().as_micros() as u64,
            pages_read: self.cache.loaded,
            pages_filtered,
            pages_pruned,
            bytes_touched,
            fan_out: self.fan_out,
        };
        (out, stats)
    }
}
