//! Certification of update NDP, one tuple at a time: the lock taken and
//! the version the job read checked against the tuple's head now — the
//! step a PE takes before it writes a new version.

use std::cell::Cell;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use ndpdb_formats::{Error, Lpn, RecId, SqlState, Vid};
use ndpdb_slt::{DeviceTag, SharedLockTable};

use super::fixture::TABLE;
use crate::ndp::update::{lock_current, HeadCheck, ModifyCtx, ModifyPart, SpacePool};

/// A version `slot` on page 1.
fn rid(slot: u16) -> RecId {
    RecId::new(Lpn(1), slot)
}

/// A lock table and the job's isolation and host locks.
struct Case {
    slt: SharedLockTable,
    read_committed: bool,
    host_buckets: Vec<usize>,
}

impl Case {
    fn new() -> Case {
        Case {
            slt: SharedLockTable::in_process(64).unwrap(),
            read_committed: false,
            host_buckets: Vec::new(),
        }
    }

    /// What certifying VID 7, read at `read`, gives when its head is now
    /// `head` and the snapshot sees exactly the versions in `seen`: the
    /// outcome, the PE's part, and how often the head was read.
    fn certify(
        &self,
        read: RecId,
        head: RecId,
        seen: &[RecId],
    ) -> (Result<Option<RecId>, Error>, ModifyPart, usize) {
        let space = SpacePool::new(Vec::new(), Box::new(|| {}), None);
        let ctx = ModifyCtx {
            slt: &self.slt,
            tag: DeviceTag::new(2).unwrap(),
            space: &space,
            lock_timeout: Duration::from_millis(50),
            read_committed: self.read_committed,
            host_buckets: &self.host_buckets,
        };
        let heads_read = Cell::new(0);
        let current = || {
            heads_read.set(heads_read.get() + 1);
            head
        };
        let visible = |r: RecId| Ok::<_, Error>(seen.contains(&r));
        let check = HeadCheck {
            head: &current,
            visible: &visible,
        };
        let mut part = ModifyPart::default();
        let cancel = AtomicBool::new(false);
        let out = lock_current(&ctx, &mut part, TABLE, Vid(7), read, &check, &cancel);
        (out, part, heads_read.get())
    }
}

#[test]
fn the_version_read_still_at_the_head_is_certified_and_locked() {
    let case = Case::new();
    let (out, part, heads_read) = case.certify(rid(0), rid(0), &[rid(0)]);
    assert_eq!(out.unwrap(), Some(rid(0)));
    assert_eq!(part.locked, vec![Vid(7)]);
    assert!(part.stale.is_empty() && part.host_locks.is_empty());
    assert_eq!(heads_read, 1, "the head is read after locking");
}

#[test]
fn a_moved_copy_the_snapshot_sees_is_certified_in_its_place() {
    // GC moved the version read (slot 0) to slot 5: the same version,
    // no newer committed one; the new version replaces the copy.
    let (out, part, _) = Case::new().certify(rid(0), rid(5), &[rid(0), rid(5)]);
    assert_eq!(out.unwrap(), Some(rid(5)));
    assert_eq!(part.locked, vec![Vid(7)]);
}

#[test]
fn a_newer_version_the_snapshot_does_not_see_is_a_conflict() {
    let (out, part, _) = Case::new().certify(rid(0), rid(3), &[rid(0)]);
    let e = out.unwrap_err();
    assert_eq!(e.sqlstate(), SqlState::SERIALIZATION_FAILURE);
    // Locked all the same: the host releases the job's locks.
    assert_eq!(part.locked, vec![Vid(7)]);
}

#[test]
fn under_read_committed_a_conflict_is_left_to_the_host() {
    let mut case = Case::new();
    case.read_committed = true;
    let (out, part, _) = case.certify(rid(0), rid(3), &[rid(0)]);
    assert_eq!(out.unwrap(), None);
    assert_eq!(part.stale, vec![Vid(7)]);
    assert_eq!(part.locked, vec![Vid(7)], "still locked, for the host");
}

#[test]
fn a_tuple_in_a_bucket_of_the_host_locks_is_left_to_the_host_to_lock() {
    let mut case = Case::new();
    case.host_buckets = vec![case.slt.index((TABLE, Vid(7)))];
    let (out, part, _) = case.certify(rid(0), rid(0), &[rid(0)]);
    assert_eq!(out.unwrap(), Some(rid(0)));
    assert_eq!(part.host_locks, vec![Vid(7)]);
    assert!(part.locked.is_empty(), "no SLT lock taken");
}

#[test]
fn a_tuple_another_job_holds_is_refused_after_the_lock_timeout() {
    let case = Case::new();
    let other = DeviceTag::new(3).unwrap();
    case.slt
        .acquire_device((TABLE, Vid(7)), other, Duration::from_secs(1))
        .unwrap();
    let (out, part, heads_read) = case.certify(rid(0), rid(0), &[rid(0)]);
    assert_eq!(out.unwrap_err().sqlstate(), SqlState::LOCK_NOT_AVAILABLE);
    assert!(part.locked.is_empty());
    assert_eq!(heads_read, 0, "nothing certified without the lock");
}
