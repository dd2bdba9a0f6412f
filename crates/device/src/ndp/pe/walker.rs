//! The PE's walk (DESIGN.md §5; DANSEN Algorithm 1): per head of a
//! chunk, the visibility walk down the version chain at the job's
//! snapshot, the filter, and the job's operation on the row that passes.
//!
//! ```text
//!  head ─► resolve: passed-along page (if it has the slot)
//!                   else the last page, else L2P → PE cache / store
//!       ─► visibility walk (ndpdb_formats::find_visible, the host's own):
//!            newest version the snapshot sees; invisible ones skipped
//!            (their pred followed), a visible tombstone ends the tuple
//!       ─► decode the wanted columns ─► filter ─► op:
//!            Scan: project │ Aggregate: accumulate by group
//!            LockRows: lock + certify │ Update / Delete: lock + certify
//!                                       + new version (ndp/update)
//! ```
//!
//! Scans and aggregates compiled into a scan pipeline go page by page
//! instead (`page_walk`). Jobs over target versions (a SELECT … FOR
//! UPDATE's, or an NDP pipeline stage's) skip the walk: the target is
//! the tuple's head for the job (`apply_target`).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Instant;

use rustc_hash::FxHashMap;

use ndpdb_formats::agg::{Acc, AggSpec};
use ndpdb_formats::codec::Writer;
use ndpdb_formats::expr::Program;
use ndpdb_formats::page::PageRef;
use ndpdb_formats::record::RecordHeader;
use ndpdb_formats::visibility::{find_visible, Visible};
use ndpdb_formats::{Error, Lpn, Ppn, RecId, SqlState, Value, Vid};
use ndpdb_link::ndp::{FanOut, NdpOp};

use ndpdb_scan::{PipelineState, RunBuffers};

use super::task::{current_head, from_link, visible_at, PeOutput, PeStats, PeTask, CHUNK};
use crate::core::Core;
use crate::ndp::pass_along::has_slot;
use crate::ndp::update::{lock_current, modify_row, HeadCheck, ModifyPart, PageWriter, RowChange};
use crate::store::PageBytes;

/// Pages a PE keeps cached.
const PE_CACHE_PAGES: usize = 512;

/// A PE's page cache (cleared when full; the walk is mostly sequential).
pub(super) struct PageCache {
    pages: FxHashMap<Ppn, PageBytes>,
    pub(super) loaded: u64,
    /// The store page of the previous record (consecutive VIDs share pages).
    last: Option<(Lpn, PageBytes)>,
}

impl PageCache {
    /// Takes in a preloaded batch.
    pub(super) fn admit(&mut self, pages: Vec<(Ppn, PageBytes)>) {
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

/// A version inside a page (the page was parsed when it was resolved).
pub(super) struct Rec {
    page: PageBytes,
    slot: u16,
}

impl Rec {
    fn view(&self) -> Result<PageRef<'_>, Error> {
        PageRef::parse(&self.page)
    }

    pub(super) fn header(&self) -> Result<RecordHeader, Error> {
        self.view()?
            .header(self.slot)?
            .ok_or_else(|| Error::corrupted(format!("slot {} is empty", self.slot)))
    }

    /// Decodes the wanted columns into `row`.
    pub(super) fn decode_into(&self, wanted: &[bool], row: &mut Vec<Value>) -> Result<(), Error> {
        self.view()?.decode_row_into(self.slot, Some(wanted), row)
    }
}

/// A PE's walk state and partial results.
pub(super) struct Walker<'a> {
    pub(super) task: &'a PeTask<'a>,
    pub(super) cache: PageCache,
    /// Reused row buffer.
    pub(super) row: Vec<Value>,
    pub(super) rows: Vec<(u64, Vec<Vec<Value>>)>,
    pub(super) groups: HashMap<Vec<u8>, (Vec<Value>, Vec<Acc>)>,
    /// Accumulators of an aggregate without GROUP BY (no hashing per row).
    pub(super) plain: Option<Vec<Acc>>,
    pub(super) tuples: u64,
    /// Update NDP: the page being filled, and what was locked and written.
    pub(super) writer: Option<PageWriter<'a>>,
    pub(super) part: ModifyPart,
    /// Scans and aggregates: the pipeline's partial result.
    pub(super) state: PipelineState,
    /// Reused buffers of the page walk.
    pub(super) buffers: RunBuffers,
    /// A scan run in the objects of a distributed store (`in_osds`).
    pub(super) fan_out: FanOut,
}

impl<'a> Walker<'a> {
    pub(super) fn new(task: &'a PeTask<'a>) -> Walker<'a> {
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
    pub(super) fn resolve(&mut self, rid: RecId) -> Result<Rec, Error> {
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
    pub(super) fn resolve_page(&mut self, rid: RecId) -> Result<PageBytes, Error> {
        let (core, shared) = (self.task.core, self.task.shared);
        let direct = !self.task.inv.preload;
        let lpn = rid.lpn();
        // A passed-along page may have gained records after it was captured
        // (and then been flushed, which is why a map now points past its
        // end): those records are read from the store.
        let captured = shared.page(rid);
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
    pub(super) fn walk(&mut self, chunk: u64, heads: &[RecId]) -> Result<(), Error> {
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
    pub(super) fn walk_head(
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
    pub(super) fn apply_op(
        &mut self,
        vid: Vid,
        read: RecId,
        chunk_rows: &mut Vec<Vec<Value>>,
    ) -> Result<(), Error> {
        let task = self.task;
        match &task.inv.op {
            NdpOp::Scan { columns } => {
                let row = &self.row;
                chunk_rows.push(columns.iter().map(|&c| row[c as usize].clone()).collect());
            }
            NdpOp::LockRows { columns } => self.lock_row(vid, read, columns, chunk_rows)?,
            NdpOp::Aggregate { groups, aggs } => self.aggregate_row(groups, aggs)?,
            NdpOp::Gc { .. } => {
                return Err(Error::sql(
                    SqlState::INTERNAL_ERROR,
                    "a GC job does not run on processing elements",
                ))
            }
            NdpOp::Update { .. } | NdpOp::Delete => self.modify_row(vid, read)?,
        }
        Ok(())
    }

    /// SELECT … FOR UPDATE: the row's tuple locked and certified; its
    /// columns, with the VID last, go out if it was.
    fn lock_row(
        &mut self,
        vid: Vid,
        read: RecId,
        columns: &[u32],
        chunk_rows: &mut Vec<Vec<Value>>,
    ) -> Result<(), Error> {
        let task = self.task;
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
        let table = task.inv.table;
        let locked = lock_current(ctx, &mut self.part, table, vid, read, &check, task.cancel)?;
        if let Some(locked) = locked {
            self.part.locked_versions.push((vid, locked));
            // The VID rides along as a last column (the host needs it).
            let row = &self.row;
            let mut out: Vec<Value> = columns.iter().map(|&c| row[c as usize].clone()).collect();
            out.push(Value::BigInt(vid.0 as i64));
            chunk_rows.push(out);
        }
        Ok(())
    }

    /// An aggregate: the row added to its group's accumulators.
    fn aggregate_row(&mut self, gp: &[Program], aggs: &[AggSpec]) -> Result<(), Error> {
        let inv = self.task.inv;
        let row = &self.row;
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
        Ok(())
    }

    /// UPDATE / DELETE: lock, certify, new version (`update::modify_row`).
    fn modify_row(&mut self, vid: Vid, read: RecId) -> Result<(), Error> {
        let (task, inv) = (self.task, self.task.inv);
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
                row: &self.row,
                sets,
                not_null,
            },
            task.cancel,
        )
    }

    /// Update NDP over target versions (locked by a SELECT … FOR UPDATE,
    /// or created by the transaction's previous statement): no visibility
    /// walk; the filter, if any, decides on the target version.
    pub(super) fn apply_target(&mut self, vid: Vid, read: RecId) -> Result<(), Error> {
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

    pub(super) fn finish(mut self, t0: Instant) -> (PeOutput, PeStats) {
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
