//! An NDP job's lifecycle through the NDP engine's commands, one command
//! at a time: NDP_SHARED, NDP_CALL, NDP_STATUS until the job ends,
//! NDP_RESULT — what a scan returns at its snapshot, and what an update
//! job hands back when it certifies its rows and when it cannot.

use std::sync::Arc;

use ndpdb_formats::codec::Reader;
use ndpdb_formats::expr::{Op, Program};
use ndpdb_formats::{Lpn, RecId, Value, Vid};
use ndpdb_link::ndp::{
    decode_rows, Invocation, JobState, JobStatus, ModifyResult, NdpOp, SharedState,
};
use ndpdb_link::LinkError;
use ndpdb_slt::SharedLockTable;

use super::fixture::*;
use crate::ndp::NdpEngine;

fn engine(slt: bool) -> NdpEngine {
    let slt = slt.then(|| Arc::new(SharedLockTable::in_process(64).unwrap()));
    NdpEngine::new(1, Vec::new(), slt)
}

/// NDP_SHARED (empty), NDP_CALL, then NDP_STATUS until the job ended.
fn run(ndp: &NdpEngine, dev: &Device, mut inv: Invocation) -> (ndpdb_formats::JobId, JobStatus) {
    inv.shared = ndp.shared(SharedState::default()).unwrap();
    let job = ndp.call(&dev.core, inv).unwrap();
    loop {
        let st = ndp.status(job, 1_000).unwrap();
        if st.state != JobState::Running {
            return (job, st);
        }
    }
}

/// The rows' values, sorted (a scan returns a chunk's rows in page order).
fn ints(rows: Vec<Vec<Value>>) -> Vec<i32> {
    let mut ints: Vec<i32> = rows
        .into_iter()
        .map(|r| match r[..] {
            [Value::Int(x)] => x,
            ref other => panic!("one INT per row, not {other:?}"),
        })
        .collect();
    ints.sort_unstable();
    ints
}

#[test]
fn a_scan_job_ends_with_its_rows_which_are_taken_once() {
    let dev = chains();
    let ndp = engine(false);
    let (job, st) = run(&ndp, &dev, invocation(scan(), snapshot(), 6));
    assert_eq!(st.state, JobState::Done);
    assert_eq!(st.result_rows, 4);
    let bytes = ndp.result(job).unwrap();
    assert_eq!(st.result_bytes, bytes.len() as u64);
    let rows = decode_rows(&mut Reader::new(&bytes)).unwrap();
    assert_eq!(ints(rows), vec![12, 15, 20, 23]);
    // NDP_RESULT freed the job.
    assert!(matches!(ndp.result(job), Err(LinkError::OutOfRange(_))));
    assert!(matches!(ndp.status(job, 0), Err(LinkError::OutOfRange(_))));
}

#[test]
fn a_job_sees_its_own_snapshot() {
    let dev = chains();
    let ndp = engine(false);
    let (old, _) = run(&ndp, &dev, invocation(scan(), old_snapshot(), 6));
    let (new, _) = run(&ndp, &dev, invocation(scan(), snapshot(), 6));
    let rows = |job| ints(decode_rows(&mut Reader::new(&ndp.result(job).unwrap())).unwrap());
    assert_eq!(rows(old), vec![10, 11, 12, 13, 15]);
    assert_eq!(rows(new), vec![12, 15, 20, 23]);
}

#[test]
fn a_passed_along_state_serves_one_call() {
    let dev = chains();
    let ndp = engine(false);
    let mut inv = invocation(scan(), snapshot(), 6);
    inv.shared = 77;
    assert!(matches!(
        ndp.call(&dev.core, inv.clone()),
        Err(LinkError::OutOfRange(_))
    ));
    inv.shared = ndp.shared(SharedState::default()).unwrap();
    ndp.call(&dev.core, inv.clone()).unwrap();
    assert!(
        matches!(ndp.call(&dev.core, inv), Err(LinkError::OutOfRange(_))),
        "the state was taken by the first call"
    );
}

#[test]
fn update_ndp_needs_a_shared_lock_table() {
    let dev = chains();
    let ndp = engine(false);
    let (_, st) = run(&ndp, &dev, invocation(NdpOp::Delete, snapshot(), 6));
    let JobState::Failed(code, _) = st.state else {
        panic!("an update job without an SLT fails");
    };
    assert_eq!(code, "0A000");
}

/// SET c0 = c0 + 1000.
fn add_1000() -> NdpOp {
    NdpOp::Update {
        sets: vec![(
            0,
            Program {
                consts: vec![Value::Int(1000)],
                ops: vec![Op::Column(0), Op::Const(0), Op::Add],
            },
        )],
        not_null: Vec::new(),
    }
}

fn modify_result(ndp: &NdpEngine, job: ndpdb_formats::JobId) -> ModifyResult {
    ModifyResult::decode(&mut Reader::new(&ndp.result(job).unwrap())).unwrap()
}

#[test]
fn an_update_job_certifies_its_rows_and_writes_new_versions() {
    let mut dev = Device::new();
    let base = dev.put(1, &[v(0, 5, RecId::NULL, 10), v(1, 5, RecId::NULL, 11)]);
    dev.head(0, base[0]);
    dev.head(1, base[1]);
    let space = dev.free_pages(100..102);
    let ndp = engine(true);
    let mut inv = invocation(add_1000(), snapshot(), 2);
    inv.space = space.clone();
    let (job, st) = run(&ndp, &dev, inv);
    assert_eq!(st.state, JobState::Done);
    let out = modify_result(&ndp, job);
    assert_eq!(out.rows, 2);
    assert_eq!(out.locked, vec![Vid(0), Vid(1)]);
    let new = |slot| RecId::new(Lpn(100), slot);
    let deltas: Vec<_> = out
        .delta
        .vids
        .iter()
        .map(|d| (d.vid, d.pred, d.new))
        .collect();
    assert_eq!(
        deltas,
        vec![(Vid(0), base[0], new(0)), (Vid(1), base[1], new(1))]
    );
    // One page written, the other handed back unused.
    assert_eq!(out.delta.l2p, vec![space[0]]);
    assert_eq!(out.unused, vec![space[1]]);
    let page = dev.core.store.read(space[0].1).unwrap();
    for (slot, (pred, value)) in [(base[0], 1010), (base[1], 1011)].into_iter().enumerate() {
        let (h, v) = read_version(&page, slot as u16);
        assert_eq!((h.creator, h.pred, v), (READER, pred, Value::Int(value)));
    }
    // The device's maps are the host's to change, at commit.
    assert_eq!(dev.core.maps.read().vids[&TABLE][0], base[0].raw());
}

#[test]
fn an_update_of_a_tuple_changed_after_the_snapshot_fails_certification() {
    let mut dev = Device::new();
    let base = dev.put(1, &[v(0, 5, RecId::NULL, 10)]);
    // A newer version, committed after the snapshot was taken.
    let newer = dev.put(2, &[v(0, 120, base[0], 20)]);
    dev.head(0, newer[0]);
    let space = dev.free_pages(100..102);
    let ndp = engine(true);
    let mut inv = invocation(add_1000(), snapshot(), 1);
    inv.space = space.clone();
    let (job, st) = run(&ndp, &dev, inv);
    let JobState::Failed(code, _) = st.state else {
        panic!("first-updater-wins: the job fails");
    };
    assert_eq!(code, "40001");
    // Nothing of it is used: no ΔVID, every page back; the lock it took
    // is listed for the host to release.
    let out = modify_result(&ndp, job);
    assert_eq!(out.rows, 0);
    assert!(out.delta.vids.is_empty() && out.delta.l2p.is_empty());
    assert_eq!(out.locked, vec![Vid(0)]);
    let mut unused = out.unused.clone();
    unused.sort();
    assert_eq!(unused, space);
}
