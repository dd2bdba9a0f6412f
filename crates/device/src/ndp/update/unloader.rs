//! The unloader (update NDP §4.1.7, Fig. 9; DESIGN.md §6): how new
//! versions leave a PE for the store, and what the job hands back to the
//! host about the pages it was given.
//!
//! ```text
//!  host ── Invocation::space, NDP_SPACE ──► SpacePool (pre-allocated (LPN, PPN))
//!  PE:  PageWriter.append(record) ─► page full ─► sealed ─► queue (a batch deep)
//!       (the PE fills the next page meanwhile: double buffering)
//!  unloader thread: a batch of sealed pages, sorted by PPN ─► store.write_many
//!       ─► written (ΔL2P of the job); reported in batches of 128 while the
//!          job runs if the host asked (report_pages)
//!  pool ran dry ─► on_empty (job state NeedSpace) ─► host grants more
//!  job ends ─► drain: the pages never used go back to the host
//! ```
//!
//! A page the PE opened and left empty goes back into the pool, not to
//! the store. GC jobs write their copies through the same writer and
//! unloader.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use ndpdb_formats::page::PageBuf;
use ndpdb_formats::{DataType, Error, Lpn, Ppn, RecId, SqlState, TableId};

use crate::store::PageStore;

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
    store: &PageStore,
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
        store.write_many(&pages).map_err(|e| {
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
