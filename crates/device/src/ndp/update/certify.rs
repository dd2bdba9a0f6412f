//! Certification of update NDP (update NDP §4.1.4–§4.1.5; DESIGN.md §6):
//! before a PE writes a new version of a tuple it locks the tuple and
//! certifies that the version it read is still the newest.
//!
//! ```text
//!  tuple (table, VID), version `read` the job's snapshot saw:
//!    bucket held by the invoking transaction's host locks?
//!        yes → left to the host to lock (ModifyPart::host_locks)
//!        no  → SLT lock, polling with backoff (timeout → 55P03)
//!    head now == read                       → certified: replace `read`
//!    head is a version the snapshot sees    → certified: a GC copy of it
//!    else (a newer committed version)       → READ COMMITTED: stale, left
//!                                             to the host, still locked
//!                                           → otherwise 40001, the job stops
//! ```
//!
//! First-updater-wins, as on the host: the job may only replace the
//! version its snapshot read.

use std::sync::atomic::{AtomicBool, Ordering};

use ndpdb_formats::{Error, RecId, SqlState, TableId, Vid};
use ndpdb_slt::SltError;

use super::{ModifyCtx, ModifyPart};

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
