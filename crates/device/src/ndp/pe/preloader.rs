//! The preloader (DANSEN §3.3, Experiment 4): a second thread per PE
//! that runs ahead of the walk and fetches the head pages of the next
//! chunks in sorted batches, so storage latency overlaps compute.
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
//! overlap: the batches then load inline on the PE's thread. Pages
//! passed along by the host are not read (the walk takes them from the
//! pass-along state). The objects of a distributed store read their
//! batches the same way (`in_osds`, [`head_pages`]).

use std::sync::atomic::Ordering;
use std::sync::mpsc::{sync_channel, SyncSender};

use ndpdb_formats::{Error, Ppn, RecId, SqlState};

use super::task::{chunk_heads, from_link, pin, PeTask, CHUNK};
use super::walker::Walker;
use crate::store::PageBytes;

/// Batches the preloader may run ahead of its PE.
const PRELOAD_DEPTH: usize = 2;

/// A chunk's heads and the store pages they live on.
struct Batch {
    chunk: u64,
    heads: Vec<RecId>,
    pages: Vec<(Ppn, PageBytes)>,
}

/// Walks the PE's chunks with their head pages read ahead in batches:
/// on a thread of its own, or — on a medium without latency, which
/// leaves nothing to overlap — inline, without a second thread
/// competing for the PE's CPU.
pub(super) fn walk<'scope, 'env>(
    task: &'env PeTask<'env>,
    walker: &mut Walker<'_>,
    s: &'scope std::thread::Scope<'scope, 'env>,
) -> Result<(), Error> {
    if task.core.store.nvm.read_ns == 0 {
        for chunk in task.chunks.iter() {
            task.check_cancel()?;
            let batch = load_batch(task, chunk)?;
            walker.cache.admit(batch.pages);
            walker.walk(batch.chunk, &batch.heads)?;
        }
        return Ok(());
    }
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
    Ok(())
}

/// The preloader thread: the batches of the PE's chunks, in order, at
/// most [`PRELOAD_DEPTH`] ahead of the walk.
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
pub(super) fn head_pages(task: &PeTask, heads: &[RecId]) -> Result<Vec<(Ppn, PageBytes)>, Error> {
    let mut ppns: Vec<Ppn> = Vec::new();
    {
        let maps = task.core.maps.read();
        let mut last = None;
        for h in heads.iter().filter(|h| !h.is_null()) {
            let lpn = h.lpn();
            if last == Some(lpn) || task.shared.holds(lpn) {
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
