//! The host's side of the scan core: a table scan page by page through a
//! [`Pipeline`] — the same visibility-by-page walk and kernels the
//! device's PEs run — on `host_workers` threads.
//!
//! ```text
//!  worker w: chunks w, w+W, w+2W, … of 1,024 VIDs
//!    heads ← VID map (this transaction's update-NDP heads first)
//!    pages ← delta buffer | buffer pool | one READ_PAGES for the misses
//!    own writes of the transaction ─► row path, in VID order
//!    the rest ─► walk_heads (page summary, kernels, chain walks)
//!  partials ─► merged by the caller (groups; projected rows by chunk)
//!           or, streaming, each chunk's rows ─► the reader, chunk by chunk
//! ```
//!
//! Missing pages of a chunk come in one READ_PAGES message and are not
//! cached: a large scan streams past the buffer pool instead of evicting
//! it, as PostgreSQL's bulk-read ring does.

use std::sync::atomic::Ordering::Relaxed;

use rustc_hash::FxHashMap;

use ndpdb_formats::page::PageRef;
use ndpdb_formats::record::decode_body_columns_into;
use ndpdb_formats::{Lpn, Ppn, RecId, Value, Vid};
use ndpdb_scan::{walk_heads, Groups, PageSource, Pipeline, PipelineState, RunBuffers};

use crate::db::{prefetch_heads, Engine, TableState};
use crate::error::{Error, Result};
use crate::mvcc::snapshot::Visible;
use crate::storage::buffer_pool::Page;
use crate::Transaction;

/// VIDs a worker takes at a time (one map read, one READ_PAGES).
const CHUNK: u64 = 1024;

pub use crate::config::DEFAULT_HOST_WORKERS;

/// What a host scan produced.
#[derive(Default)]
pub struct ScanOutput {
    /// Aggregates: one partial per worker.
    pub groups: Vec<Groups>,
    /// Projections: the rows, chunk by chunk in VID order (each chunk's
    /// in page order: `walk_heads`).
    pub rows: Vec<Vec<Value>>,
    /// Tuples (VID heads) walked.
    pub tuples: u64,
}

/// Chunks a streaming scan's worker may run ahead of its reader.
const STREAM_AHEAD: usize = 4;

/// What one scan worker produced (its projected rows went to its sink).
struct WorkerPart {
    state: PipelineState,
    tuples: u64,
}

/// The chunks one worker of a scan takes: `first`, `first + step`, …
/// below `chunks`.
#[derive(Clone, Copy)]
struct Share {
    first: u64,
    step: u64,
    chunks: u64,
}

impl Share {
    /// Worker `w`'s share of `chunks` among `workers`.
    fn of(w: usize, workers: usize, chunks: u64) -> Share {
        Share {
            first: w as u64,
            step: workers as u64,
            chunks,
        }
    }
}

/// A chunk's projected rows, by chunk number.
type ChunkRows = (u64, Vec<Vec<Value>>);

/// A scan worker's result, a panic turned into an error.
fn joined<T>(h: std::io::Result<std::thread::ScopedJoinHandle<'_, Result<T>>>) -> Result<T> {
    match h {
        Ok(h) => h.join().unwrap_or_else(|_| {
            Err(Error::new(
                ndpdb_formats::SqlState::INTERNAL_ERROR,
                "a scan worker panicked",
            ))
        }),
        Err(e) => Err(Error::new(
            ndpdb_formats::SqlState::INTERNAL_ERROR,
            format!("cannot start a scan worker: {e}"),
        )),
    }
}

/// Pages of one worker's current chunk.
struct HostPages<'a> {
    db: &'a Engine,
    tx: &'a Transaction,
    ts: &'a TableState,
    wanted: &'a [bool],
    /// Pages read for this chunk (not in the pool).
    read: FxHashMap<Ppn, Page>,
    last: Option<(Lpn, Page)>,
}

fn has_slot(page: &[u8], slot: u16) -> bool {
    PageRef::parse(page).is_ok_and(|v| slot < v.slot_count())
}

impl HostPages<'_> {
    /// Reads the chunk's pages that are neither in the delta buffer nor
    /// cached, in one message.
    fn prefetch(&mut self, heads: &[RecId]) -> Result<()> {
        prefetch_heads(self.db, heads, &mut self.read)
    }
}

/// A page a host scan holds (a buffer-pool frame or a delta-buffer copy).
pub struct ScanPage(Page);

impl std::ops::Deref for ScanPage {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl PageSource for HostPages<'_> {
    type Page = ScanPage;

    fn page(&mut self, lpn: Lpn, last: u16) -> ndpdb_formats::Result<ScanPage> {
        self.page_arc(lpn, last).map(ScanPage)
    }

    fn older_visible(&mut self, rid: RecId, row: &mut Vec<Value>) -> ndpdb_formats::Result<bool> {
        self.older(rid, row)
    }
}

impl HostPages<'_> {
    fn page_arc(&mut self, lpn: Lpn, last: u16) -> ndpdb_formats::Result<Page> {
        let io = |e: Error| ndpdb_formats::Error::sql(e.code, e.message);
        if let Some((l, p)) = &self.last {
            if *l == lpn && has_slot(p, last) {
                return Ok(p.clone());
            }
        }
        // Delta buffer first: a page there may be newer than a flushed copy.
        if let Some(img) = self.db.delta.read().page_image(lpn) {
            if has_slot(&img, last) {
                return Ok(Page::from(img));
            }
        }
        let ppn = self.db.l2p.get(lpn).ok_or_else(|| {
            ndpdb_formats::Error::corrupted(format!(
                "{} points to an unmapped page",
                RecId::new(lpn, last)
            ))
        })?;
        let page = match self.read.get(&ppn) {
            Some(p) => p.clone(),
            None => self.db.pool.get(ppn, &self.db.device).map_err(io)?,
        };
        self.last = Some((lpn, page.clone()));
        Ok(page)
    }

    fn older(&mut self, rid: RecId, row: &mut Vec<Value>) -> ndpdb_formats::Result<bool> {
        let io = |e: Error| ndpdb_formats::Error::sql(e.code, e.message);
        match self
            .db
            .read_visible(rid, self.tx.snapshot_ref())
            .map_err(io)?
        {
            Visible::Version(_, bytes) => {
                let body = bytes
                    .get(ndpdb_formats::record::RECORD_HEADER_SIZE..)
                    .unwrap_or_default();
                decode_body_columns_into(&self.ts.types, body, Some(self.wanted), row)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

/// What a scan's workers do to each chunk's projected rows before the
/// caller sees them: `(chunk, rows)` in, rows out, in order. Chunks
/// number the table's rows in VID order, 1,024 VIDs a chunk.
pub type ChunkMap<'a> = dyn Fn(u64, Vec<Vec<Value>>) -> Result<Vec<Vec<Value>>> + Sync + 'a;

impl Transaction {
    /// Runs `pipeline` over every tuple of `ts` this transaction sees —
    /// its own writes included — on [`Transaction::host_workers`] threads.
    pub fn scan_pipeline(&self, ts: &TableState, pipeline: &Pipeline) -> Result<ScanOutput> {
        self.ssi_read(crate::mvcc::ssi::Target::Table(ts.id))?;
        self.run_pipeline(ts, pipeline)
    }

    /// [`Transaction::scan_pipeline`] whose filter keeps only rows whose
    /// first primary-key columns equal `prefix` (SERIALIZABLE locks that
    /// prefix instead of the table).
    pub fn scan_pipeline_key_prefix(
        &self,
        ts: &TableState,
        prefix: &[ndpdb_formats::Value],
        pipeline: &Pipeline,
    ) -> Result<ScanOutput> {
        self.read_key_prefix(ts, prefix)?;
        self.run_pipeline(ts, pipeline)
    }

    /// [`Transaction::scan_pipeline`] (or, with `prefix`,
    /// [`Transaction::scan_pipeline_key_prefix`]) of a projection whose
    /// rows go to `visit` chunk by chunk, in VID order, while the workers
    /// go on: a join probes them as they come instead of holding the
    /// whole table's rows. Each worker runs at most [`STREAM_AHEAD`] chunks ahead of
    /// `visit`; when `visit` fails, the workers stop at their next chunk.
    /// Returns the tuples walked.
    pub fn scan_pipeline_each(
        &self,
        ts: &TableState,
        prefix: Option<&[Value]>,
        pipeline: &Pipeline,
        visit: &mut dyn FnMut(Vec<Value>) -> Result<()>,
    ) -> Result<u64> {
        self.scan_pipeline_mapped(ts, prefix, pipeline, &|_, rows| Ok(rows), visit)
    }

    /// [`Transaction::scan_pipeline_each`] whose workers pass each chunk's
    /// rows through `map` before they go to `visit` (a join's probe: the
    /// workers probe their chunks at once, `visit` takes the joined rows
    /// in chunk order). A failing `map` stops the scan with its error.
    pub fn scan_pipeline_mapped(
        &self,
        ts: &TableState,
        prefix: Option<&[Value]>,
        pipeline: &Pipeline,
        map: &ChunkMap<'_>,
        visit: &mut dyn FnMut(Vec<Value>) -> Result<()>,
    ) -> Result<u64> {
        match prefix {
            Some(prefix) => self.read_key_prefix(ts, prefix)?,
            None => self.ssi_read(crate::mvcc::ssi::Target::Table(ts.id))?,
        }
        let chunks = ts.vids.vid_count().div_ceil(CHUNK);
        let workers = self.host_workers().min(chunks.max(1) as usize).max(1);
        let mut visited = Ok(());
        let parts: Vec<Result<WorkerPart>> = std::thread::scope(|s| {
            let mut receivers = Vec::with_capacity(workers);
            let mut handles = Vec::with_capacity(workers);
            for w in 0..workers {
                let (send, receive) = std::sync::mpsc::sync_channel(STREAM_AHEAD);
                receivers.push(receive);
                handles.push(
                    std::thread::Builder::new()
                        .name(format!("host-scan-{w}"))
                        .spawn_scoped(s, move || {
                            let mut sink = |chunk, rows| {
                                send.send(map(chunk, rows)?).map_err(|_| {
                                    Error::new(
                                        ndpdb_formats::SqlState::QUERY_CANCELED,
                                        "the scan's reader stopped",
                                    )
                                })
                            };
                            let share = Share::of(w, workers, chunks);
                            self.scan_worker(ts, pipeline, share, &mut sink)
                        }),
                );
            }
            // Chunk c comes from worker c mod W, which sends every chunk
            // of its own in order (empty ones too).
            'chunks: for c in 0..chunks {
                let Some(receive) = receivers.get(c as usize % workers) else {
                    break;
                };
                let Ok(rows) = receive.recv() else {
                    break; // the worker failed: its error is joined below
                };
                for row in rows {
                    if let Err(e) = visit(row) {
                        visited = Err(e);
                        break 'chunks;
                    }
                }
            }
            drop(receivers);
            handles.into_iter().map(joined).collect()
        });
        visited?;
        // A worker stopped by another's failure only reports that the
        // reader stopped: the failure itself is the error.
        let mut tuples = 0;
        let mut failed: Option<Error> = None;
        for p in parts {
            match p {
                Ok(part) => {
                    tuples += part.tuples;
                    self.count_scan(&part.state);
                }
                Err(e) => {
                    let cancel = ndpdb_formats::SqlState::QUERY_CANCELED;
                    if failed
                        .as_ref()
                        .is_none_or(|f| f.code == cancel && e.code != cancel)
                    {
                        failed = Some(e);
                    }
                }
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(tuples),
        }
    }

    fn run_pipeline(&self, ts: &TableState, pipeline: &Pipeline) -> Result<ScanOutput> {
        let n = ts.vids.vid_count();
        let chunks = n.div_ceil(CHUNK);
        let workers = self.host_workers().min(chunks.max(1) as usize).max(1);
        let parts: Vec<Result<(WorkerPart, Vec<ChunkRows>)>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers)
                .map(|w| {
                    std::thread::Builder::new()
                        .name(format!("host-scan-{w}"))
                        .spawn_scoped(s, move || {
                            let mut rows = Vec::new();
                            let mut sink = |chunk, r: Vec<Vec<Value>>| {
                                if !r.is_empty() {
                                    rows.push((chunk, r));
                                }
                                Ok(())
                            };
                            let share = Share::of(w, workers, chunks);
                            let part = self.scan_worker(ts, pipeline, share, &mut sink)?;
                            Ok((part, rows))
                        })
                })
                .collect();
            handles.into_iter().map(joined).collect()
        });
        let mut out = ScanOutput::default();
        let mut chunked = Vec::new();
        for p in parts {
            let (part, rows) = p?;
            out.tuples += part.tuples;
            self.count_scan(&part.state);
            chunked.extend(rows);
            out.groups.push(pipeline.finish(part.state));
        }
        chunked.sort_by_key(|(c, _)| *c);
        out.rows = chunked.into_iter().flat_map(|(_, r)| r).collect();
        Ok(out)
    }

    /// Adds a worker's page counts to the database's counters.
    fn count_scan(&self, state: &PipelineState) {
        let c = &self.db_inner().counters;
        c.scan_pages.fetch_add(state.pages, Relaxed);
        c.scan_pages_pruned.fetch_add(state.pages_pruned, Relaxed);
        c.scan_bytes_touched.fetch_add(state.bytes_touched, Relaxed);
    }

    fn scan_worker(
        &self,
        ts: &TableState,
        pipeline: &Pipeline,
        share: Share,
        sink: &mut dyn FnMut(u64, Vec<Vec<Value>>) -> Result<()>,
    ) -> Result<WorkerPart> {
        let Share {
            first,
            step,
            chunks,
        } = share;
        let table = ts.id;
        let n = ts.vids.vid_count();
        let own = self.has_writes_to(ts);
        let mut source = HostPages {
            db: self.db_inner(),
            tx: self,
            ts,
            wanted: pipeline.wanted(),
            read: FxHashMap::default(),
            last: None,
        };
        let mut state = PipelineState::default();
        let mut buf = RunBuffers::default();
        let mut heads = Vec::with_capacity(CHUNK as usize);
        let mut tuples = 0;
        let snapshot = self.snapshot_ref();
        let mut chunk = first;
        while chunk < chunks {
            self.check_interrupt()?;
            let from = chunk * CHUNK;
            ts.vids.heads_range(from, (from + CHUNK).min(n), &mut heads);
            if own {
                for (k, h) in heads.iter_mut().enumerate() {
                    if let Some(r) = self.own_head(table, Vid(from + k as u64)) {
                        *h = r;
                    }
                }
            }
            source.prefetch(&heads)?;
            // The transaction's own versions take their place in VID order.
            let mut start = 0;
            if own {
                for k in 0..heads.len() {
                    if let Some(mine) = self.own_version(ts, Vid(from + k as u64))? {
                        tuples += walk_heads(
                            pipeline,
                            &mut state,
                            snapshot,
                            &heads[start..k],
                            &mut source,
                            &mut buf,
                        )?;
                        if let Some(row) = mine {
                            pipeline.row(&mut state, &row)?;
                        }
                        start = k + 1;
                    }
                }
            }
            tuples += walk_heads(
                pipeline,
                &mut state,
                snapshot,
                &heads[start..],
                &mut source,
                &mut buf,
            )?;
            sink(chunk, std::mem::take(&mut state.rows))?;
            chunk += step;
        }
        Ok(WorkerPart { state, tuples })
    }
}
