//! An NDP job fanned out over the RADOS objects that hold its pages:
//! each object's share runs inside the OSD holding it (`cls_ndp`,
//! [`ndpdb_scan::object_scan`]) and only its result comes back — a
//! scan's or aggregate's partial (`scan_v1`), or the versions an UPDATE
//! or DELETE changes (`versions_v1`), which the PE then locks,
//! certifies and changes as it would a row it found itself.
//!
//! ```text
//!  rounds of 512 chunks of VIDs ─► heads (ΔVID overlay, else VID map)
//!     head on a passed-along page ───────────────────────► walked here
//!     else L2P → PPN → object PPN / 512, page PPN mod 512
//!  per object: ObjectScan {snapshot, plan, its pages, its heads per chunk}
//!     ─► exec_all (waves of `objects_in_flight` calls, each wave's at once)
//!     ◄─ rows per chunk | partial groups | versions, stats, deferred chains
//!  deferred chains, objects without the class ──────────► walked here
//!  merge into the PE's state (rows by chunk, groups through Acc::merge)
//! ```
//!
//! "Walked here" is the PE's own walk over pages it reads through the
//! store, so every head ends up walked exactly once, by the same code.

use std::collections::BTreeMap;

use rustc_hash::FxHashSet;

use ndpdb_formats::ids::MAX_VID;
use ndpdb_formats::{Error, Lpn, RecId, Value, Vid};
use ndpdb_link::ndp::NdpOp;
use ndpdb_scan::object_scan::{
    decode_reply, encode_request, ObjectOp, ObjectPlan, ObjectReply, Outcome,
};
use ndpdb_scan::{Pipeline, PipelineOp};

use super::preloader::head_pages;
use super::task::{chunk_heads, from_link, PeTask, CHUNK};
use super::walker::Walker;
use crate::store::{ObjectCall, ObjectMethod, RadosPages, PAGES_PER_OBJECT};

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
    placed: FxHashSet<Lpn>,
    chunks: Vec<(u64, Vec<RecId>)>,
    /// Each head's position in its chunk (its VID less the chunk's first).
    positions: Vec<Vec<u16>>,
}

impl Share {
    fn add(&mut self, chunk: u64, position: usize, head: RecId, index: u32) {
        if self.placed.insert(head.lpn()) {
            self.pages.push((head.lpn(), index));
        }
        if self.chunks.last().is_none_or(|(c, _)| *c != chunk) {
            self.chunks.push((chunk, Vec::new()));
            self.positions.push(Vec::new());
        }
        if let (Some((_, heads)), Some(at)) = (self.chunks.last_mut(), self.positions.last_mut()) {
            heads.push(head);
            at.push(position as u16);
        }
    }

    /// The object's request (`cap`: the largest reply taken).
    fn request(&self, plan: &ObjectPlan, cap: usize) -> Vec<u8> {
        let cap = u32::try_from(cap).unwrap_or(u32::MAX);
        encode_request(plan, &self.pages, &self.chunks, cap)
    }

    /// The share's heads as whole chunks (NULL elsewhere), for a walk here.
    fn heads_by_chunk(&self) -> Vec<(u64, Vec<RecId>)> {
        self.chunks
            .iter()
            .zip(&self.positions)
            .map(|((chunk, heads), at)| {
                let mut all = vec![RecId::NULL; CHUNK as usize];
                for (h, &p) in heads.iter().zip(at) {
                    all[p as usize] = *h;
                }
                (*chunk, all)
            })
            .collect()
    }
}

/// The method a job's object-side share calls, if it has one: scans
/// and aggregates (`pipeline`), updates and deletes.
pub(crate) fn method(pipeline: bool, op: &NdpOp) -> Option<ObjectMethod> {
    if pipeline {
        Some(ObjectMethod::Scan)
    } else if op.modifies() {
        Some(ObjectMethod::Versions)
    } else {
        None
    }
}

/// Walks the PE's chunks with the object-side share of the job running
/// in the OSDs: a scan pipeline (`task.pipeline`), or an update's read
/// of the versions it changes.
pub(super) fn walk(
    task: &PeTask,
    walker: &mut Walker<'_>,
    objects: &RadosPages,
    method: ObjectMethod,
) -> Result<(), Error> {
    let plan = ObjectPlan {
        snapshot: task.inv.snapshot.clone(),
        types: task.inv.types.clone(),
        params: task.inv.params.clone(),
        filter: task.inv.filter.clone(),
        op: match task.pipeline {
            Some(p) => ObjectOp::Pipeline(p.op().clone()),
            None => ObjectOp::Versions,
        },
    };
    let chunks: Vec<u64> = task.chunks.iter().collect();
    let mut deferred = Vec::new();
    for round in chunks.chunks(CHUNKS_PER_ROUND) {
        walk_round(task, walker, (method, &plan), objects, round, &mut deferred)?;
    }
    walker.fan_out.deferred += deferred.len() as u64;
    match task.pipeline {
        Some(pipeline) => walk_deferred(walker, pipeline, deferred),
        None => walk_deferred_heads(walker, deferred),
    }
}

/// One round of chunks: their heads placed on objects, the objects
/// called, what stays here walked.
fn walk_round(
    task: &PeTask,
    walker: &mut Walker<'_>,
    (method, plan): (ObjectMethod, &ObjectPlan),
    objects: &RadosPages,
    round: &[u64],
    deferred: &mut Vec<(u64, RecId)>,
) -> Result<(), Error> {
    let mut shares: BTreeMap<u64, Share> = BTreeMap::new();
    // Whole chunks (a head's position is its VID), NULL where an object
    // takes the head.
    let mut here: Vec<(u64, Vec<RecId>)> = Vec::new();
    let mut heads = Vec::with_capacity(CHUNK as usize);
    for &chunk in round {
        task.check_cancel()?;
        chunk_heads(task, chunk, &mut heads);
        let maps = task.core.maps.read();
        let mut stays = false;
        for (position, h) in heads.iter_mut().enumerate().filter(|(_, h)| !h.is_null()) {
            let lpn = h.lpn();
            match maps.l2p.get(&lpn) {
                Some(ppn) if !task.shared.holds(lpn) => {
                    let (object, index) = (ppn.0 / PAGES_PER_OBJECT, ppn.0 % PAGES_PER_OBJECT);
                    shares
                        .entry(object)
                        .or_default()
                        .add(chunk, position, *h, index as u32);
                    *h = RecId::NULL;
                }
                // Passed-along pages, and heads the walk reports as errors.
                _ => stays = true,
            }
        }
        if stays {
            here.push((chunk, heads.clone()));
        }
    }
    let reply_cap = match plan.op {
        ObjectOp::Pipeline(PipelineOp::Aggregate { .. }) => AGGREGATE_REPLY,
        _ => ROWS_REPLY,
    };
    let shares: Vec<(u64, Share)> = shares.into_iter().collect();
    for wave in shares.chunks(objects.in_flight()) {
        task.check_cancel()?;
        let calls: Vec<(u64, Vec<u8>)> = wave
            .iter()
            .map(|(object, share)| (*object, share.request(plan, reply_cap)))
            .collect();
        let replies = objects.call(method, &calls, reply_cap).map_err(from_link)?;
        for ((object, share), reply) in wave.iter().zip(replies) {
            let reply = match reply {
                ObjectCall::Reply(bytes) => {
                    walker.fan_out.objects += 1;
                    walker.fan_out.reply_bytes += bytes.len() as u64;
                    match decode_reply(&bytes).map_err(|e| in_object(*object, e))? {
                        Outcome::Done(reply) => Some(reply),
                        Outcome::TooLarge(needed) => {
                            again(walker, (method, plan), objects, (*object, share), needed)?
                        }
                    }
                }
                ObjectCall::NoClass => None,
            };
            match reply {
                Some(reply) => absorb(walker, reply, deferred)?,
                // The OSD has no class: the heads are walked here.
                None => here.extend(share.heads_by_chunk()),
            }
        }
    }
    for (chunk, heads) in here {
        task.check_cancel()?;
        walker.cache.admit(head_pages(task, &heads)?);
        walker.walk(chunk, &heads)?;
    }
    Ok(())
}

/// Calls an object once more with a reply buffer of the size it asked
/// for; `None` if its OSD has no class.
fn again(
    walker: &mut Walker<'_>,
    (method, plan): (ObjectMethod, &ObjectPlan),
    objects: &RadosPages,
    (object, share): (u64, &Share),
    needed: u64,
) -> Result<Option<ObjectReply>, Error> {
    let cap = usize::try_from(needed).unwrap_or(usize::MAX);
    let call = [(object, share.request(plan, cap))];
    let Some(ObjectCall::Reply(bytes)) = objects.call(method, &call, cap).map_err(from_link)?.pop()
    else {
        return Ok(None);
    };
    walker.fan_out.reply_bytes += bytes.len() as u64;
    match decode_reply(&bytes).map_err(|e| in_object(object, e))? {
        Outcome::Done(reply) => Ok(Some(reply)),
        Outcome::TooLarge(n) => Err(in_object(
            object,
            Error::corrupted(format!("a reply of {n} B after one of {needed} B")),
        )),
    }
}

fn in_object(object: u64, e: Error) -> Error {
    match e {
        Error::Corrupted(m) => Error::corrupted(format!("page object {object}: {m}")),
        e => e,
    }
}

/// Folds an object's partial into the PE's: a scan's rows and groups,
/// or an update's versions, each changed here.
fn absorb(
    walker: &mut Walker<'_>,
    reply: ObjectReply,
    deferred: &mut Vec<(u64, RecId)>,
) -> Result<(), Error> {
    walker.tuples += reply.tuples;
    deferred.extend(reply.deferred);
    let Some(pipeline) = walker.task.pipeline else {
        for (_, rows) in reply.rows {
            for row in rows {
                walker.task.check_cancel()?;
                change_version(walker, row)?;
            }
        }
        return Ok(());
    };
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
    Ok(())
}

/// An update's version as an object read it (`[VID, RecId, columns…]`):
/// locked, certified and changed as the PE's own walk would.
fn change_version(walker: &mut Walker<'_>, mut row: Vec<Value>) -> Result<(), Error> {
    let (Some(&Value::BigInt(vid)), Some(&Value::BigInt(rid))) = (row.first(), row.get(1)) else {
        return Err(Error::corrupted(
            "an object's version without its VID and RecId",
        ));
    };
    if row.len() != walker.task.inv.types.len() + 2 || vid < 0 || vid as u64 >= MAX_VID {
        return Err(Error::corrupted(format!(
            "an object's version of {} values for VID {vid}",
            row.len()
        )));
    }
    walker.row.clear();
    walker.row.extend(row.drain(2..));
    let mut unused = Vec::new();
    walker.apply_op(Vid(vid as u64), RecId::from_raw(rid as u64), &mut unused)
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
            return Err(Error::corrupted("an object deferred a chain at no version"));
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

/// An update's heads an object handed back: walked here from the head
/// (its VID from the head's own record).
fn walk_deferred_heads(walker: &mut Walker<'_>, deferred: Vec<(u64, RecId)>) -> Result<(), Error> {
    let mut unused = Vec::new();
    for (_, head) in deferred {
        walker.task.check_cancel()?;
        let vid = walker.resolve(head)?.header()?.vid;
        walker.walk_head(vid, head, &mut unused)?;
    }
    Ok(())
}
