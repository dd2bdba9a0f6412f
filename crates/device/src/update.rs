//! Update NDP on the device: lock, certify, write new versions out of
//! place (DESIGN.md §6; update NDP §4.1.3–§4.1.8, Fig. 9).
//!
//! ```text
//!  PE, per visible row that passes the filter:
//!    SLT lock (table, VID) ── poll with backoff; job failed elsewhere → stop
//!      (not in a bucket the invoking transaction's host locks hold: the
//!       job would wait for itself; the host locks such a tuple after the
//!       job, before it validates)
//!    certify: head (overlay, else device VID map) == version read?
//!        no → a newer committed version exists: 40001, the whole job stops
//!    new version (creator = invoking TxId, pred = version read) → PE page
//!    ΔVID += (VID, pred, new RecId)
//!  PE page full → sealed → unloader thread writes it to its pre-allocated
//!  PPN (double buffering: the PE fills the next page meanwhile); ΔL2P += page
//!  pool of pre-allocated pages empty → job state NeedSpace, host grants more
//! ```
//!
//! Nothing the host or other jobs can see changes: the pages are the
//! invocation's own and no map is touched. The host validates ΔVID,
//! applies ΔL2P and ΔVID at commit and releases the SLT locks; on any
//! failure it drops the deltas and takes the pages back.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use ndpdb_formats::codec::Writer;
use ndpdb_formats::delta_maps::DeltaVid;
use ndpdb_formats::page::PageBuf;
use ndpdb_formats::record::{encode_record, RecordHeader, FLAG_TOMBSTONE};
use ndpdb_formats::{DataType, Error, Lpn, Ppn, RecId, SqlState, TableId, Value, Vid};
use ndpdb_slt::{DeviceTag, SharedLockTable, SltError};

use crate::engine::Core;

/// The job's pre-allocated pages, shared by its PEs.
pub(crate) struct SpacePool {
    pages: Mutex<VecDeque<(Lpn, Ppn)>>,
    granted: Condvar,
    /// Called (once per shortage) when the pool runs dry: tells the host.
    on_empty: Box<dyn Fn() + Send + Sync>,
    asked: AtomicBool,
    /// Jobs that report their pages (`Invocation::report_pages`): pages
    /// written and not yet reported, and the call that tells the host
    /// once a batch is ready.
    unloaded: Mutex<Vec<(Lpn, Ppn)>>,
    on_unloaded: Option<Box<dyn Fn() + Send + Sync>>,
}

/// Written pages per report (1 MiB).
const REPORT_BATCH: usize = 128;

impl SpacePool {
    pub fn new(
        pages: Vec<(Lpn, Ppn)>,
        on_empty: Box<dyn Fn() + Send + Sync>,
        on_unloaded: Option<Box<dyn Fn() + Send + Sync>>,
    ) -> SpacePool {
        SpacePool {
            pages: Mutex::new(pages.into()),
            granted: Condvar::new(),
            on_empty,
            asked: AtomicBool::new(false),
            unloaded: Mutex::new(Vec::new()),
            on_unloaded,
        }
    }

    /// A page is on the store for good (the unloader wrote it).
    fn written(&self, page: (Lpn, Ppn)) {
        let Some(tell) = &self.on_unloaded else {
            return;
        };
        let mut u = self.unloaded.lock();
        u.push(page);
        let ready = u.len() == REPORT_BATCH;
        drop(u);
        if ready {
            tell();
        }
    }

    /// Whether a batch of written pages waits for the host.
    pub fn unloaded_ready(&self) -> bool {
        self.on_unloaded.is_some() && self.unloaded.lock().len() >= REPORT_BATCH
    }

    /// The written pages not reported yet.
    pub fn take_unloaded(&self) -> Vec<(Lpn, Ppn)> {
        if self.on_unloaded.is_none() {
            return Vec::new();
        }
        std::mem::take(&mut *self.unloaded.lock())
    }

    /// A fresh page; waits for the host to grant more if none is left.
    fn take(&self, cancel: &AtomicBool) -> Result<(Lpn, Ppn), Error> {
        let mut g = self.pages.lock();
        loop {
            if let Some(p) = g.pop_front() {
                return Ok(p);
            }
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::sql(SqlState::QUERY_CANCELED, "NDP job aborted"));
            }
            if !self.asked.swap(true, Ordering::AcqRel) {
                (self.on_empty)();
            }
            self.granted.wait_for(&mut g, Duration::from_millis(20));
        }
    }

    /// More pages from the host (NDP_SPACE).
    pub fn grant(&self, pages: Vec<(Lpn, Ppn)>) {
        self.pages.lock().extend(pages);
        self.asked.store(false, Ordering::Release);
        self.granted.notify_all();
    }

    /// Wakes PEs waiting for space (the job is being cancelled).
    pub fn wake(&self) {
        self.granted.notify_all();
    }

    fn give_back(&self, page: (Lpn, Ppn)) {
        self.pages.lock().push_back(page);
    }

    /// What is left when the job ends.
    pub fn drain(&self) -> Vec<(Lpn, Ppn)> {
        self.pages.lock().drain(..).collect()
    }
}

/// What an update job's PEs share.
pub(crate) struct ModifyCtx<'a> {
    pub slt: &'a SharedLockTable,
    pub tag: DeviceTag,
    pub space: &'a SpacePool,
    pub lock_timeout: Duration,
    pub read_committed: bool,
    /// SLT buckets the invoking transaction holds through its host locks
    /// (sorted, `Invocation::host_buckets`): not queued for.
    pub host_buckets: &'a [usize],
}

/// One PE's share of an update job: locks taken, versions written.
#[derive(Default)]
pub(crate) struct ModifyPart {
    pub rows: u64,
    pub delta_vids: Vec<DeltaVid>,
    pub written: Vec<(Lpn, Ppn)>,
    pub locked: Vec<Vid>,
    /// Tuples in buckets of the transaction's host locks, left to the
    /// host to lock.
    pub host_locks: Vec<Vid>,
    pub stale: Vec<Vid>,
    /// SELECT … FOR UPDATE: the versions locked.
    pub locked_versions: Vec<(Vid, RecId)>,
    /// Time spent taking SLT locks (waits included).
    pub lock_nanos: u64,
}

/// A PE's page being filled and its unloader thread's queue.
pub(crate) struct PageWriter<'a> {
    space: &'a SpacePool,
    table: TableId,
    types: &'a [DataType],
    current: Option<(Lpn, Ppn, PageBuf)>,
    unload: Option<SyncSender<(Lpn, Ppn, PageBuf)>>,
}

/// Pages in flight between a PE and its unloader: a batch's worth, so
/// that while one batch is written the next fills.
const UNLOAD_DEPTH: usize = UNLOAD_BATCH;

impl<'a> PageWriter<'a> {
    /// The writer and the receiving end for [`unloader`].
    pub fn new(
        space: &'a SpacePool,
        table: TableId,
        types: &'a [DataType],
    ) -> (Self, Receiver<(Lpn, Ppn, PageBuf)>) {
        let (tx, rx) = sync_channel(UNLOAD_DEPTH);
        (
            PageWriter {
                space,
                table,
                types,
                current: None,
                unload: Some(tx),
            },
            rx,
        )
    }

    /// Appends a version record; returns its RecId.
    pub fn append(
        &mut self,
        record: &[u8],
        written: &mut Vec<(Lpn, Ppn)>,
        cancel: &AtomicBool,
    ) -> Result<RecId, Error> {
        if let Some((lpn, _, page)) = &mut self.current {
            if let Some(slot) = page.append(record)? {
                return Ok(RecId::new(*lpn, slot));
            }
        }
        self.finish_page(written)?;
        let (lpn, ppn) = self.space.take(cancel)?;
        let mut page = PageBuf::new(self.table, lpn, self.types);
        let slot = page
            .append(record)?
            .ok_or_else(|| Error::corrupted("a version record does not fit an empty page"))?;
        self.current = Some((lpn, ppn, page));
        Ok(RecId::new(lpn, slot))
    }

    /// Seals the current page and hands it to the unloader.
    fn finish_page(&mut self, written: &mut Vec<(Lpn, Ppn)>) -> Result<(), Error> {
        let Some((lpn, ppn, mut page)) = self.current.take() else {
            return Ok(());
        };
        if page.slot_count() == 0 {
            self.space.give_back((lpn, ppn));
            return Ok(());
        }
        page.seal();
        let tx = self.unload.as_ref().ok_or_else(unloader_gone)?;
        tx.send((lpn, ppn, page)).map_err(|_| unloader_gone())?;
        written.push((lpn, ppn));
        Ok(())
    }

    /// Writes out the last page and closes the queue.
    pub fn close(&mut self, written: &mut Vec<(Lpn, Ppn)>) -> Result<(), Error> {
        let r = self.finish_page(written);
        self.unload = None;
        r
    }
}

fn unloader_gone() -> Error {
    Error::sql(SqlState::IO_ERROR, "the page unloader stopped")
}

/// The unloader: writes sealed pages to their PPNs until the queue closes.
pub(crate) fn unloader(
    core: &Core,
    space: &SpacePool,
    rx: Receiver<(Lpn, Ppn, PageBuf)>,
) -> Result<(), Error> {
    let mut batch = Vec::with_capacity(UNLOAD_BATCH);
    while let Ok(first) = rx.recv() {
        // The pages the PE filled while the last batch was written go
        // out together: one write per run of consecutive PPNs (on
        // RADOS, a write waits for every replica, so one per page would
        // bound the job by round trips).
        batch.push(first);
        while batch.len() < UNLOAD_BATCH {
            match rx.try_recv() {
                Ok(page) => batch.push(page),
                Err(_) => break,
            }
        }
        batch.sort_unstable_by_key(|(_, ppn, _)| *ppn);
        let pages: Vec<(Ppn, &[u8])> = batch
            .iter()
            .map(|(_, ppn, p)| (*ppn, p.as_bytes()))
            .collect();
        core.store.write_many(&pages).map_err(|e| {
            Error::sql(
                SqlState::IO_ERROR,
                format!(
                    "writing pages {}..={}: {e}",
                    pages[0].0 .0,
                    pages[pages.len() - 1].0 .0
                ),
            )
        })?;
        for (lpn, ppn, _) in batch.drain(..) {
            space.written((lpn, ppn));
        }
    }
    Ok(())
}

/// Pages the unloader writes at most at once.
const UNLOAD_BATCH: usize = 64;

/// Everything a PE needs to modify one row it found visible and qualifying.
pub(crate) struct RowChange<'r> {
    pub vid: Vid,
    /// The visible version (what the new one replaces).
    pub read: RecId,
    /// The current head, re-read after locking, and visibility.
    pub check: HeadCheck<'r>,
    pub row: &'r [Value],
    /// `None` = delete (tombstone).
    pub sets: Option<&'r [(u32, ndpdb_formats::expr::Program)]>,
    /// Columns that may not become NULL.
    pub not_null: &'r [u32],
}

/// The current head of a tuple and whether the job's snapshot sees the
/// version at a RecId (for certification).
pub(crate) struct HeadCheck<'r> {
    pub head: &'r dyn Fn() -> RecId,
    pub visible: &'r dyn Fn(RecId) -> Result<bool, Error>,
}

/// Locks `vid` for the job — in the SLT, unless its bucket is one the
/// invoking transaction holds through its host locks (then the host
/// locks it, [`ModifyPart::host_locks`]) — and certifies that the version `read` is
/// still the newest: the head is `read`, or a copy of it that garbage
/// collection moved (a head the job's snapshot sees has no newer
/// committed version). Returns the head the new version replaces;
/// `Ok(None)`: under READ COMMITTED the head moved (the tuple is left to
/// the host, still locked).
pub(crate) fn lock_current(
    ctx: &ModifyCtx<'_>,
    part: &mut ModifyPart,
    table: TableId,
    vid: Vid,
    read: RecId,
    check: &HeadCheck<'_>,
    cancel: &AtomicBool,
) -> Result<Option<RecId>, Error> {
    let key = (table, vid);
    if ctx.host_buckets.binary_search(&ctx.slt.index(key)).is_ok() {
        // The bucket is the invoking transaction's own through its host
        // locks: queued behind them the job would wait for itself. The
        // host locks the tuple in its lock table before it validates
        // (a member of its host group may hold this very tuple).
        part.host_locks.push(vid);
    } else {
        lock_in_slt(ctx, part, key, cancel)?;
    }
    // First-updater-wins: a newer committed version than the one this
    // snapshot sees means the job lost — under READ COMMITTED the host
    // redoes the tuple on its newest version instead.
    let head = (check.head)();
    if head == read || (!head.is_null() && (check.visible)(head)?) {
        return Ok(Some(head));
    }
    if ctx.read_committed {
        part.stale.push(vid);
        return Ok(None);
    }
    Err(Error::sql(
        SqlState::SERIALIZATION_FAILURE,
        "could not serialize access due to concurrent update (detected on the device)",
    ))
}

/// Takes the job's SLT lock on `key` (polling with backoff).
fn lock_in_slt(
    ctx: &ModifyCtx<'_>,
    part: &mut ModifyPart,
    key: (TableId, Vid),
    cancel: &AtomicBool,
) -> Result<(), Error> {
    let (table, vid) = key;
    let stop = || cancel.load(Ordering::Relaxed);
    let t = std::time::Instant::now();
    let acquired = ctx
        .slt
        .acquire_device_unless(key, ctx.tag, ctx.lock_timeout, &stop);
    part.lock_nanos += t.elapsed().as_nanos() as u64;
    match acquired {
        Ok(_) => {}
        Err(SltError::Timeout) => {
            return Err(Error::sql(
                SqlState::LOCK_NOT_AVAILABLE,
                format!(
                    "could not lock tuple {} of table {} on the device within {} ms (lock timeout, or a deadlock with a host transaction)",
                    vid.0,
                    table.0,
                    ctx.lock_timeout.as_millis()
                ),
            ))
        }
        Err(e) => return Err(Error::sql(e.sqlstate(), e.to_string())),
    }
    part.locked.push(vid);
    Ok(())
}

/// Lock → certify → new version (see the module docs).
#[allow(clippy::too_many_arguments)]
pub(crate) fn modify_row(
    ctx: &ModifyCtx<'_>,
    writer: &mut PageWriter<'_>,
    part: &mut ModifyPart,
    table: TableId,
    types: &[ndpdb_formats::DataType],
    creator: ndpdb_formats::TxId,
    params: &[Value],
    change: RowChange<'_>,
    cancel: &AtomicBool,
) -> Result<(), Error> {
    let Some(head) = lock_current(
        ctx,
        part,
        table,
        change.vid,
        change.read,
        &change.check,
        cancel,
    )?
    else {
        return Ok(());
    };
    let (row, flags) = match change.sets {
        Some(sets) => {
            let mut new_row = change.row.to_vec();
            for (c, p) in sets {
                new_row[*c as usize] = p.eval(change.row, params)?;
            }
            if let Some(c) = change
                .not_null
                .iter()
                .find(|c| new_row[**c as usize].is_null())
            {
                return Err(Error::sql(
                    SqlState::NOT_NULL_VIOLATION,
                    format!(
                        "null value in column {} violates not-null constraint",
                        c + 1
                    ),
                ));
            }
            (new_row, 0)
        }
        None => (change.row.to_vec(), FLAG_TOMBSTONE),
    };
    let header = RecordHeader {
        creator,
        pred: head,
        vid: change.vid,
        flags,
    };
    let mut w = Writer::new();
    encode_record(&header, types, &row, &mut w)?;
    let new = writer.append(w.as_slice(), &mut part.written, cancel)?;
    part.delta_vids.push(DeltaVid {
        vid: change.vid,
        pred: head,
        new,
    });
    part.rows += 1;
    Ok(())
}
