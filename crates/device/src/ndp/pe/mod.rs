//! One processing element (DESIGN.md §5; DANSEN §3.3, Algorithm 1,
//! Experiment 4).
//!
//! A PE walks its chunks of VIDs: head (ΔVID overlay, else the device VID
//! map) → page (passed-along delta page, else L2P → store) → header →
//! visibility walk → filter → operation. Beside it run up to two threads
//! of its own: the preloader, fetching the head pages of its next chunks,
//! and for update NDP the unloader, writing its sealed pages.
//!
//! ```text
//!   run_pe ─┬─ targets (FOR UPDATE, NDP pipeline stage) ─► walker: apply_target
//!           ├─ pages in RADOS objects ─► in_osds: the objects walk, the PE merges
//!           ├─ preload ─► preloader: batches of head pages ─► walker: walk
//!           └─ else     ─► heads on demand ─────────────────► walker: walk
//!   update NDP: walker ─► PageWriter ─► unloader thread ─► store
//! ```
//!
//! - `task`: what a PE is given and hands back, and the head reads.
//! - `walker`: the visibility walk, the filter and the operations.
//! - `page_walk`: scans and aggregates page by page through the scan core.
//! - `preloader`: the thread that reads ahead.
//! - `in_osds`: a job fanned out over the objects that hold its pages.
//!
//! Without the preloader the PE resolves everything on demand and every
//! record it reads from the store is one NVM access. Predecessor versions
//! on pages the preloader did not fetch are read on demand in both modes.

pub(crate) mod in_osds;
mod page_walk;
mod preloader;
mod task;
mod walker;

use std::sync::atomic::Ordering;
use std::time::Instant;

use ndpdb_formats::{Error, SqlState};

use crate::ndp::update::{unloader, ModifyPart, PageWriter};
use task::{chunk_heads, pin};
use walker::Walker;

pub(crate) use task::{Chunks, PeOutput, PeStats, PeTask, CHUNK};

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
                let (store, space) = (&task.core.store, ctx.space);
                let h = std::thread::Builder::new()
                    .name(format!("ndp-unl-{}", task.chunks.first))
                    .spawn_scoped(s, move || {
                        pin(task.cpu);
                        unloader(store, space, rx)
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

/// Walks all chunks of the PE: its share of the target versions, in
/// the objects of a distributed store, through the preloader, or on
/// demand.
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
    if task.inv.preload {
        return preloader::walk(task, walker, s);
    }
    let mut heads = Vec::with_capacity(CHUNK as usize);
    for chunk in task.chunks.iter() {
        task.check_cancel()?;
        chunk_heads(task, chunk, &mut heads);
        walker.walk(chunk, &heads)?;
    }
    Ok(())
}
