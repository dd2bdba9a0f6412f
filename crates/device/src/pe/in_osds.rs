//! A scan fanned out over the RADOS objects that hold its pages: each
//! object's share runs inside the OSD holding it (`cls_ndp`'s
//! `scan_v1`, [`ndpdb_scan::object_scan`]) and only partial results
//! come back.
//!
//! ```text
//!  rounds of 512 chunks of VIDs ─► heads (ΔVID overlay, else VID map)
//!     head on a passed-along page ───────────────────────► walked here
//!     else L2P → PPN → object PPN / 512, page PPN mod 512
//!  per object: ObjectScan {snapshot, plan, its pages, its heads per chunk}
//!     ─► exec_all (waves of `objects_in_flight` calls, each wave's at once)
//!     ◄─ rows per chunk | partial groups, stats, deferred chains
//!  deferred chains, objects without the class ──────────► walked here
//!  merge into the PE's state (rows by chunk, groups through Acc::merge)
//! ```
//!
//! "Walked here" is the PE's own walk over pages it reads through the
//! store, so every head ends up walked exactly once, by the same code.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use ndpdb_formats::{Error, Lpn, RecId, SqlState, Value};
use ndpdb_link::ndp::NdpOp;
use ndpdb_scan::object_scan::{decode_reply, ObjectReply, ObjectScan, Outcome};
use ndpdb_scan::{Pipeline, PipelineOp};

use super::{chunk_heads, from_link, PeTask, Walker, CHUNK};
use crate::store::{ObjectCall, RadosPages, PAGES_PER_OBJECT};

/// Chunks of VIDs placed per round: the heads of about 512 Ki tuples
/// (4 MiB) are held at a time. An object with heads in two rounds is
/// called in both.
const CHUNKS_PER_ROUND: usize = 512;
/// The reply buffer of an aggregate's call (a partial per group).
const AGGREGATE_REPLY: usize = 1 << 20;
/// The reply buffer of a projection's call; a larger reply is fetched
/// again with a buffer of its size.
const ROWS_REPLY: usize = 8 << 20;

/// One object's share being built.
#[derive(Default)]
struct Share {
    pages: Vec<(Lpn, u32)>,
    placed: FxHashMap<Lpn, ()>,
    chunks: Vec<(u64, Vec<RecId>)>,
}

impl Share {
    fn add(&mut self, chunk: u64, head: RecId, index: u32) {
        if self.placed.insert(head.lpn(), ()).is_none() {
            self.pages.push((head.lpn(), index));
        }
        match self.chunks.last_mut() {
            Some((c, heads)) if *c == chunk => heads.push(head),
            _ => self.chunks.push((chunk, vec![head])),
        }
    }
}

/// Walks the PE's chunks with the pages' kernels running in the OSDs.
pub(super) fn walk(
    task: &PeTask,
    walker: &mut Walker<'_>,
    pipeline: &Pipeline,
    objects: &RadosPages,
) -> Result<(), Error> {
    let chunks: Vec<u64> = task.chunks.iter().collect();
    let mut deferred = Vec::new();
    for round in chunks.chunks(CHUNKS_PER_ROUND) {
        walk_round(task, walker, pipeline, objects, round, &mut deferred)?;
    }
    walker.fan_out.deferred += deferred.len() as u64;
    walk_deferred(walker, pipeline, deferred)
}

/// One round of chunks: their heads placed on objects, the objects
/// called, what stays here walked.
fn walk_round(
    task: &PeTask,
    walker: &mut Walker<'_>,
    pipeline: &Pipeline,
    objects: &RadosPages,
    round: &[u64],
    deferred: &mut Vec<(u64, RecId)>,
) -> Result<(), Error> {
    let mut shares: BTreeMap<u64, Share> = BTreeMap::new();
    let mut here: Vec<(u64, Vec<RecId>)> = Vec::new();
    let mut heads = Vec::with_capacity(CHUNK as usize);
    for &chunk in round {
        task.check_cancel()?;
        chunk_heads(task, chunk, &mut heads);
        let maps = task.core.maps.read();
        let mut mine = Vec::new();
        for &h in heads.iter().filter(|h| !h.is_null()) {
            let lpn = h.lpn();
            match maps.l2p.get(&lpn) {
                Some(ppn) if !task.shared.pages.contains_key(&lpn) => {
                    let (object, index) = (ppn.0 / PAGES_PER_OBJECT, ppn.0 % PAGES_PER_OBJECT);
                    shares
                        .entry(object)
                        .or_default()
                        .add(chunk, h, index as u32);
                }
                // Passed-along pages, and heads the walk reports as errors.
                _ => mine.push(h),
            }
        }
        if !mine.is_empty() {
            here.push((chunk, mine));
        }
    }
    let reply_cap = match pipeline.op() {
        PipelineOp::Aggregate { .. } => AGGREGATE_REPLY,
        PipelineOp::Project { .. } => ROWS_REPLY,
    };
    let shares: Vec<(u64, Share)> = shares.into_iter().collect();
    for wave in shares.chunks(objects.in_flight()) {
        task.check_cancel()?;
        let calls: Vec<(u64, Vec<u8>)> = wave
            .iter()
            .map(|(object, share)| (*object, request(task, pipeline, share, reply_cap)))
            .collect();
        let replies = objects.scan(&calls, reply_cap).map_err(from_link)?;
        walker.fan_out.objects += calls.len() as u64;
        for ((object, share), reply) in wave.iter().zip(replies) {
            let bytes = match reply {
                ObjectCall::Reply(bytes) => bytes,
                ObjectCall::NoClass => {
                    here.extend(share.chunks.iter().cloned());
                    continue;
                }
            };
            walker.fan_out.reply_bytes += bytes.len() as u64;
            let reply = match decode_reply(&bytes).map_err(|e| in_object(*object, e))? {
                Outcome::Done(reply) => reply,
                Outcome::TooLarge(needed) => {
                    let cap = usize::try_from(needed).unwrap_or(usize::MAX);
                    let call = [(*object, request(task, pipeline, share, cap))];
                    let again = objects.scan(&call, cap).map_err(from_link)?;
                    match again.into_iter().next() {
                        Some(ObjectCall::Reply(bytes)) => {
                            walker.fan_out.reply_bytes += bytes.len() as u64;
                            match decode_reply(&bytes).map_err(|e| in_object(*object, e))? {
                                Outcome::Done(reply) => reply,
                                Outcome::TooLarge(n) => {
                                    return Err(in_object(
                                        *object,
                                        Error::corrupted(format!(
                                            "a reply of {n} B after one of {needed} B"
                                        )),
                                    ))
                                }
                            }
                        }
                        _ => {
                            here.extend(share.chunks.iter().cloned());
                            continue;
                        }
                    }
                }
            };
            absorb(walker, pipeline, reply, deferred)?;
        }
    }
    for (chunk, heads) in here {
        task.check_cancel()?;
        walker.walk(chunk, &heads)?;
    }
    Ok(())
}

/// An object's request (`cap`: the largest reply taken).
fn request(task: &PeTask, pipeline: &Pipeline, share: &Share, cap: usize) -> Vec<u8> {
    ObjectScan {
        snapshot: task.inv.snapshot.clone(),
        types: task.inv.types.clone(),
        params: task.inv.params.clone(),
        filter: task.inv.filter.clone(),
        op: pipeline.op().clone(),
        pages: share.pages.clone(),
        chunks: share.chunks.clone(),
        reply_cap: u32::try_from(cap).unwrap_or(u32::MAX),
    }
    .encode()
}

fn in_object(object: u64, e: Error) -> Error {
    match e {
        Error::Corrupted(m) => Error::corrupted(format!("page object {object}: {m}")),
        e => e,
    }
}

/// Folds an object's partial into the PE's.
fn absorb(
    walker: &mut Walker<'_>,
    pipeline: &Pipeline,
    reply: ObjectReply,
    deferred: &mut Vec<(u64, RecId)>,
) -> Result<(), Error> {
    walker.tuples += reply.tuples;
    let state = &mut walker.state;
    state.pages += reply.pages;
    state.pages_pruned += reply.pages_pruned;
    state.bytes_touched += reply.bytes_touched;
    walker.rows.extend(reply.rows);
    if matches!(walker.task.inv.op, NdpOp::Aggregate { .. }) {
        walker.state.absorb(pipeline, reply.groups)?;
    } else if !reply.groups.is_empty() {
        return Err(Error::corrupted("aggregate partials for a scan"));
    }
    deferred.extend(reply.deferred);
    Ok(())
}

/// Chains an object handed back: the visible version from where the
/// object stopped on, through the pipeline's row path.
fn walk_deferred(
    walker: &mut Walker<'_>,
    pipeline: &Pipeline,
    deferred: Vec<(u64, RecId)>,
) -> Result<(), Error> {
    use ndpdb_scan::PageSource;
    let mut row: Vec<Value> = Vec::new();
    for (chunk, rid) in deferred {
        walker.task.check_cancel()?;
        if rid.is_null() {
            return Err(Error::sql(
                SqlState::DATA_CORRUPTED,
                "an object deferred a chain at no version",
            ));
        }
        if walker.older_visible(rid, &mut row)? {
            let mut state = std::mem::take(&mut walker.state);
            let done = pipeline.row(&mut state, &row);
            if !state.rows.is_empty() {
                walker.rows.push((chunk, std::mem::take(&mut state.rows)));
            }
            walker.state = state;
            done?;
        }
    }
    Ok(())
}
