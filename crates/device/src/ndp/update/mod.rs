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
//!
//! - `certify`: the SLT lock and the certification of the version read.
//! - `modify`: one row's new version (or tombstone) and its ΔVID entry.
//! - `unloader`: the pre-allocated pages, the PE's page writer and the
//!   thread that writes sealed pages to the store.
//!
//! This file holds what they share: an update job's context and one PE's
//! part of its result.

mod certify;
mod modify;
mod unloader;

use std::time::Duration;

use ndpdb_formats::delta_maps::DeltaVid;
use ndpdb_formats::{Lpn, Ppn, RecId, Vid};
use ndpdb_slt::{DeviceTag, SharedLockTable};

pub(crate) use certify::{lock_current, HeadCheck};
pub(crate) use modify::{modify_row, RowChange};
pub(crate) use unloader::{unloader, PageWriter, SpacePool};

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
