//! One object's share of an NDP scan, run where the object lies.
//!
//! With the device store in Ceph RADOS, pages live in objects of 512
//! pages spread over the OSDs. An NDP scan or aggregate is fanned out:
//! the device engine (which holds the VID and L2P maps) sends each
//! object the heads whose pages it holds, and the OSD runs this module
//! inside `cls_ndp` over the object it read locally. Only the partial
//! result crosses the network.
//!
//! ```text
//!  device engine                                   OSD holding object N
//!  heads of chunk c ─ L2P ─► object N: pages        ┌──────────────────────┐
//!  ObjectScan {snapshot, plan, pages, heads} ──────►│ walk_heads (the PEs' │
//!                                                   │ visibility by page)  │
//!  merge ◄─ ObjectReply {rows | groups, stats, ─────│ older versions on    │
//!            deferred chains}                       │ this object's pages  │
//!  deferred: walked on the device engine            └──────────────────────┘
//! ```
//!
//! The walk, the visibility rule and the kernels are the same code the
//! device's PEs run, so an object computes exactly what a PE computes
//! for the same heads. A head whose visible version lies on a page the
//! object was not sent (an older version elsewhere) is not guessed at:
//! its chain is *deferred*, returned to the device engine, which walks
//! it with its own page access. A chain usually ends on its head's page
//! (the newest version is the one a snapshot sees), so few are.
//!
//! The request and the reply are versioned byte formats (`codec.rs`);
//! the method that carries them is `scan_v1`. Bytes from the network are
//! untrusted on both sides: every count and offset is checked.

mod codec;
#[cfg(test)]
mod tests;
mod versions;

use rustc_hash::{FxHashMap, FxHashSet};

use ndpdb_formats::expr::Program;
use ndpdb_formats::page::{PageRef, PAGE_SIZE};
use ndpdb_formats::visibility::{find_visible, Snapshot, Visible};
use ndpdb_formats::{DataType, Error, Lpn, RecId, Result, Value};

use crate::{walk_heads, Groups, PageSource, Pipeline, PipelineOp, PipelineState, RunBuffers};

pub use codec::{decode_reply, encode_request, serve, REPLY_TOO_LARGE};

/// What every object of one job runs: the same for all its objects.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectPlan {
    pub snapshot: Snapshot,
    pub types: Vec<DataType>,
    pub params: Vec<Value>,
    pub filter: Option<Program>,
    pub op: ObjectOp,
}

/// One object's share of a scan (the request of `scan_v1`).
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectScan {
    pub plan: ObjectPlan,
    /// The object's pages the walk may read: (LPN, page index in the object).
    pub pages: Vec<(Lpn, u32)>,
    /// Per chunk of VIDs, in VID order: the heads on those pages.
    pub chunks: Vec<(u64, Vec<RecId>)>,
    /// Largest reply the caller takes; a bigger one is not sent
    /// ([`Outcome::TooLarge`]).
    pub reply_cap: u32,
}

/// What an object computes from the visible versions of its heads.
#[derive(Clone, Debug, PartialEq)]
pub enum ObjectOp {
    /// The scan pipeline: projected rows or partial aggregates.
    Pipeline(PipelineOp),
    /// Update NDP's read: per visible version that passes the filter, a
    /// row `[VID, RecId, every column…]` (VID and RecId as BIGINT), for
    /// the device engine to lock, certify and change. A chain that
    /// continues in another object is deferred at its head.
    Versions,
}

/// What an object computed.
#[derive(Debug, Default)]
pub struct ObjectReply {
    /// Heads walked.
    pub tuples: u64,
    /// Pages filtered, pages whose zone maps ruled out every row, page
    /// bytes the walk and kernels read (as [`PipelineState`] counts them).
    pub pages: u64,
    pub pages_pruned: u64,
    pub bytes_touched: u64,
    /// Projected rows, per chunk.
    pub rows: Vec<(u64, Vec<Vec<Value>>)>,
    /// Partial aggregates (the plain aggregate under the empty key).
    pub groups: Groups,
    /// Chains that continue on pages of other objects: (chunk, the
    /// version to walk on from; for [`ObjectOp::Versions`], the head).
    pub deferred: Vec<(u64, RecId)>,
}

/// A reply as the caller decodes it.
#[derive(Debug)]
pub enum Outcome {
    Done(ObjectReply),
    /// The reply would have been this many bytes, over the request's cap.
    TooLarge(u64),
}

/// The object's pages as a [`PageSource`]: only the pages of the request.
struct ObjectPages<'a> {
    object: &'a [u8],
    index: FxHashMap<Lpn, u32>,
    snapshot: &'a Snapshot,
    wanted: &'a [bool],
    /// Page indexes whose checksum was verified.
    verified: FxHashSet<usize>,
    chunk: u64,
    deferred: Vec<(u64, RecId)>,
}

/// Why a chain walk on the object stopped.
enum Walk {
    Failed(Error),
    /// The chain goes on at this version, on a page of another object.
    Elsewhere(RecId),
}

impl From<Error> for Walk {
    fn from(e: Error) -> Walk {
        Walk::Failed(e)
    }
}

impl<'a> ObjectPages<'a> {
    /// The page the request places `lpn` on, checksum-verified the first
    /// time it is read and checked to hold that LPN; `None` if the
    /// request does not place it.
    fn get(&mut self, lpn: Lpn) -> Option<Result<&'a [u8]>> {
        let index = *self.index.get(&lpn)? as usize;
        Some(self.read(lpn, index))
    }

    fn read(&mut self, lpn: Lpn, index: usize) -> Result<&'a [u8]> {
        let at = index * PAGE_SIZE;
        let page = self.object.get(at..at + PAGE_SIZE).ok_or_else(|| {
            Error::corrupted(format!(
                "page {index} of the object (LPN {}) was never written",
                lpn.0
            ))
        })?;
        if !self.verified.contains(&index) {
            let view = PageRef::parse_verified(page)?;
            if view.lpn() != lpn {
                return Err(Error::corrupted(format!(
                    "page {index} of the object holds LPN {}, not LPN {}",
                    view.lpn().0,
                    lpn.0
                )));
            }
            self.verified.insert(index);
        }
        Ok(page)
    }
}

impl<'a> ObjectPages<'a> {
    /// The version of the chain from `from` the snapshot sees, walked on
    /// the request's pages only: [`Walk::Elsewhere`] where it leaves
    /// them (a page of another object, or a slot the stored copy of a
    /// page does not have yet).
    fn visible(&mut self, from: RecId) -> Result<Visible<PageRef<'a>>, Walk> {
        let snapshot = self.snapshot;
        find_visible(from, snapshot, |at: RecId| {
            let page = match self.get(at.lpn()) {
                Some(page) => page?,
                None => return Err(Walk::Elsewhere(at)),
            };
            let view = PageRef::parse(page)?;
            if at.slot() >= view.slot_count() {
                return Err(Walk::Elsewhere(at));
            }
            let header = view
                .header(at.slot())?
                .ok_or_else(|| Error::corrupted(format!("{at} is an empty slot")))?;
            Ok((header, view))
        })
    }
}

impl<'a> PageSource for ObjectPages<'a> {
    type Page = &'a [u8];

    fn page(&mut self, lpn: Lpn, _last: u16) -> Result<&'a [u8]> {
        self.get(lpn).unwrap_or_else(|| {
            Err(Error::corrupted(format!(
                "a head on LPN {} that the request does not place",
                lpn.0
            )))
        })
    }

    fn older_visible(&mut self, rid: RecId, row: &mut Vec<Value>) -> Result<bool> {
        match self.visible(rid) {
            Ok(Visible::Version(at, view)) => {
                view.decode_row_into(at.slot(), Some(self.wanted), row)?;
                Ok(true)
            }
            Ok(Visible::None | Visible::Deleted(_)) => Ok(false),
            Err(Walk::Elsewhere(at)) => {
                self.deferred.push((self.chunk, at));
                Ok(false)
            }
            Err(Walk::Failed(e)) => Err(e),
        }
    }
}

/// Runs `req` over `object` (the object's bytes from offset 0).
pub fn run(req: &ObjectScan, object: &[u8]) -> Result<ObjectReply> {
    let op = match &req.plan.op {
        ObjectOp::Pipeline(op) => op,
        ObjectOp::Versions => return versions::run(req, object),
    };
    let pipeline = Pipeline::new(
        &req.plan.types,
        &req.plan.params,
        req.plan.filter.as_ref(),
        op.clone(),
    );
    let mut source = ObjectPages {
        object,
        index: req.pages.iter().copied().collect(),
        snapshot: &req.plan.snapshot,
        wanted: pipeline.wanted(),
        verified: FxHashSet::default(),
        chunk: 0,
        deferred: Vec::new(),
    };
    let mut state = PipelineState::default();
    let mut buffers = RunBuffers::default();
    let mut reply = ObjectReply::default();
    for (chunk, heads) in &req.chunks {
        source.chunk = *chunk;
        reply.tuples += walk_heads(
            &pipeline,
            &mut state,
            &req.plan.snapshot,
            heads,
            &mut source,
            &mut buffers,
        )?;
        if !state.rows.is_empty() {
            reply.rows.push((*chunk, std::mem::take(&mut state.rows)));
        }
    }
    reply.pages = state.pages;
    reply.pages_pruned = state.pages_pruned;
    reply.bytes_touched = state.bytes_touched;
    if matches!(op, PipelineOp::Aggregate { .. }) {
        reply.groups = pipeline.finish(state);
    }
    reply.deferred = source.deferred;
    Ok(reply)
}

impl PipelineState {
    /// Folds another worker's partial aggregates (as
    /// [`Pipeline::finish`] returns them) into this state.
    pub fn absorb(&mut self, pipeline: &Pipeline, groups: Groups) -> Result<()> {
        let PipelineOp::Aggregate { groups: by, aggs } = pipeline.op() else {
            return Err(Error::corrupted("aggregate partials for a projection"));
        };
        for (key, (values, accs)) in groups {
            if accs.len() != aggs.len() {
                return Err(Error::corrupted(format!(
                    "a partial of {} aggregates for {}",
                    accs.len(),
                    aggs.len()
                )));
            }
            let mine = if by.is_empty() {
                if !key.is_empty() {
                    return Err(Error::corrupted("a grouped partial for a plain aggregate"));
                }
                match &mut self.plain {
                    Some(mine) => mine,
                    slot => {
                        *slot = Some(accs);
                        continue;
                    }
                }
            } else {
                match self.groups.get_mut(&key) {
                    Some((_, mine)) => mine,
                    None => {
                        self.groups.insert(key, (values, accs));
                        continue;
                    }
                }
            };
            for ((m, a), spec) in mine.iter_mut().zip(accs).zip(aggs) {
                m.merge(spec, a)?;
            }
        }
        Ok(())
    }
}
