//! Lock table tests: hand-over, deadlocks, the integrated SLT.

use super::*;
use std::sync::Arc;
use std::thread;

const K1: LockKey = (TableId(1), Vid(1));
const K2: LockKey = (TableId(1), Vid(2));

#[test]
fn fifo_handoff_and_wakeup() {
    let lt = Arc::new(LockTable::new());
    lt.acquire(TxId(1), K1, None).unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut hs = Vec::new();
    for t in [2u64, 3] {
        let (lt2, order) = (lt.clone(), order.clone());
        hs.push(thread::spawn(move || {
            let r = lt2.acquire(TxId(t), K1, None).unwrap();
            order.lock().push(t);
            assert_eq!(r, Acquired::AfterWait);
            lt2.release_all(TxId(t), &[K1]);
        }));
        // Make the queue order deterministic.
        while lt.waiting() < (t - 1) as usize {
            thread::yield_now();
        }
    }
    lt.release_all(TxId(1), &[K1]);
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(*order.lock(), vec![2, 3]);
    assert_eq!(lt.locked_keys(), 0);
}

/// T1 holds K1 and waits for K2; T2 holds K2 and asks for K1.
fn deadlock_scenario(lt: &Arc<LockTable>) {
    lt.acquire(TxId(1), K1, None).unwrap();
    lt.acquire(TxId(2), K2, None).unwrap();
    let lt2 = lt.clone();
    let h = thread::spawn(move || lt2.acquire(TxId(1), K2, None));
    while lt.waiting() < 1 {
        thread::yield_now();
    }
    let e = lt.acquire(TxId(2), K1, None).unwrap_err();
    assert_eq!(e.code, SqlState::DEADLOCK_DETECTED);
    lt.release_all(TxId(2), &[K2]);
    assert_eq!(h.join().unwrap().unwrap(), Acquired::AfterWait);
}

#[test]
fn deadlock_is_detected() {
    deadlock_scenario(&Arc::new(LockTable::new()));
}

#[test]
fn granted_waiter_that_has_not_woken_is_no_deadlock() {
    let lt = Arc::new(LockTable::new());
    lt.acquire(TxId(1), K1, None).unwrap();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let lt2 = lt.clone();
    let h = thread::spawn(move || {
        lt2.acquire(TxId(2), K1, None).unwrap();
        go_rx.recv().unwrap();
        lt2.release_all(TxId(2), &[K1]);
    });
    while lt.waiting() < 1 {
        thread::yield_now();
    }
    lt.release_all(TxId(1), &[K1]);
    // T2 now holds K1 (awake or not): T3 must wait, not be called a deadlock victim.
    let e = lt
        .acquire(TxId(3), K1, Some(Duration::from_millis(30)))
        .unwrap_err();
    assert_eq!(e.code, SqlState::LOCK_NOT_AVAILABLE);
    go_tx.send(()).unwrap();
    h.join().unwrap();
    assert_eq!(
        lt.acquire(TxId(3), K1, None).unwrap(),
        Acquired::Immediately
    );
}

fn integrated() -> (Arc<LockTable>, Arc<SharedLockTable>) {
    let slt = Arc::new(SharedLockTable::in_process(256).unwrap());
    (Arc::new(LockTable::with_slt(slt.clone())), slt)
}

fn tag(n: u16) -> DeviceTag {
    DeviceTag::new(n).unwrap()
}

/// Update NDP Fig. 11: NDP holds t; H1 and H2 wait sharing one
/// host-shared entry; the NDP commit hands t to H1, then H2; the last
/// of them (the owner) removes the entry.
#[test]
fn host_waiters_share_an_entry_behind_a_device_lock() {
    let (lt, slt) = integrated();
    slt.acquire_device(K1, tag(7), Duration::from_secs(1))
        .unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut hs = Vec::new();
    for t in [1u64, 2] {
        let (lt2, order) = (lt.clone(), order.clone());
        hs.push(thread::spawn(move || {
            let r = lt2.acquire(TxId(t), K1, None).unwrap();
            order.lock().push(t);
            assert_eq!(r, Acquired::AfterWait);
            lt2.release_all(TxId(t), &[K1]);
        }));
        while lt.inner.lock().slt_refs.len() < t as usize {
            thread::yield_now();
        }
    }
    assert_eq!(format!("{:?}", slt.load(K1).unwrap()), "[D7 H _ _ _ _ _ _]");
    assert!(order.lock().is_empty());
    lt.release_device(K1, tag(7)).unwrap();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(*order.lock(), vec![1, 2]);
    assert!(slt.load(K1).unwrap().is_empty());
    assert_eq!(lt.locked_keys(), 0);
}

#[test]
fn a_device_waits_for_host_holders_and_the_host_for_devices() {
    let (lt, slt) = integrated();
    assert_eq!(
        lt.acquire(TxId(1), K1, None).unwrap(),
        Acquired::Immediately
    );
    let slt2 = slt.clone();
    let dev = thread::spawn(move || slt2.acquire_device(K1, tag(9), Duration::from_secs(10)));
    while slt.load(K1).unwrap().len() < 2 {
        thread::yield_now();
    }
    // The device queued behind T1; T2 must queue behind the device.
    let lt2 = lt.clone();
    let t2 = thread::spawn(move || lt2.acquire(TxId(2), K1, None));
    while slt.load(K1).unwrap().len() < 3 {
        thread::yield_now();
    }
    lt.release_all(TxId(1), &[K1]);
    assert_eq!(
        dev.join().unwrap().unwrap(),
        ndpdb_slt::DeviceGrant::AfterWait
    );
    assert!(!t2.is_finished());
    lt.release_device(K1, tag(9)).unwrap();
    assert_eq!(t2.join().unwrap().unwrap(), Acquired::AfterWait);
    lt.release_all(TxId(2), &[K1]);
    assert!(slt.load(K1).unwrap().is_empty());
}

#[test]
fn a_lock_timeout_behind_a_device_leaves_no_entry() {
    let (lt, slt) = integrated();
    slt.acquire_device(K1, tag(3), Duration::from_secs(1))
        .unwrap();
    let e = lt
        .acquire(TxId(1), K1, Some(Duration::from_millis(20)))
        .unwrap_err();
    assert_eq!(e.code, SqlState::LOCK_NOT_AVAILABLE);
    assert_eq!(format!("{:?}", slt.load(K1).unwrap()), "[D3 _ _ _ _ _ _ _]");
    assert!(!lt.try_acquire(TxId(2), K1));
    lt.release_device(K1, tag(3)).unwrap();
    assert!(lt.try_acquire(TxId(2), K1));
    lt.release_all(TxId(2), &[K1]);
    assert!(slt.load(K1).unwrap().is_empty());
    assert_eq!(lt.locked_keys(), 0);
}

#[test]
fn host_only_behaviour_is_unchanged_with_an_slt() {
    let (lt, slt) = integrated();
    deadlock_scenario(&lt);
    lt.release_all(TxId(1), &[K1, K2]);
    assert!(slt.load(K1).unwrap().is_empty() && slt.load(K2).unwrap().is_empty());
}

#[test]
fn lock_timeout() {
    let lt = LockTable::new();
    lt.acquire(TxId(1), K1, None).unwrap();
    let e = lt
        .acquire(TxId(2), K1, Some(Duration::from_millis(20)))
        .unwrap_err();
    assert_eq!(e.code, SqlState::LOCK_NOT_AVAILABLE);
    assert_eq!(lt.waiting(), 0);
}

/// A device restarts with a fresh lock table: the host's holders and
/// waiters move over, a waiter that queued behind the dead device's job
/// gets its lock, and the dead job's tag is stale until its transaction
/// lets it go.
#[test]
fn a_restarted_devices_table_takes_over_the_host_locks() {
    let (lt, slt) = integrated();
    lt.set_device_owner(tag(7), Some(TxId(9)));
    // The device job holds K1; T1 holds K2 (another bucket) and T2 waits
    // for K1 behind the job.
    slt.acquire_device(K1, tag(7), Duration::from_secs(1))
        .unwrap();
    assert_eq!(
        lt.acquire(TxId(1), K2, None).unwrap(),
        Acquired::Immediately
    );
    let lt2 = lt.clone();
    let waiter = thread::spawn(move || lt2.acquire(TxId(2), K1, None));
    while slt.load(K1).unwrap().len() < 2 {
        thread::yield_now();
    }
    assert!(!lt.tag_is_stale(tag(7)));
    // The device dies and comes back with an empty table.
    let fresh = Arc::new(SharedLockTable::in_process(256).unwrap());
    lt.swap_slt_with(|| Ok(Some(fresh.clone()))).unwrap();
    assert_eq!(waiter.join().unwrap().unwrap(), Acquired::AfterWait);
    assert_eq!(
        format!("{:?}", fresh.load(K1).unwrap()),
        "[H _ _ _ _ _ _ _]"
    );
    assert_eq!(
        format!("{:?}", fresh.load(K2).unwrap()),
        "[H _ _ _ _ _ _ _]"
    );
    assert!(lt.tag_is_stale(tag(7)));
    // A new job of the new device queues behind the host, as before.
    let (lt3, fresh2) = (lt.clone(), fresh.clone());
    let job = thread::spawn(move || {
        let g = fresh2.acquire_device(K2, tag(8), Duration::from_secs(5));
        lt3.release_device(K2, tag(8)).unwrap();
        g
    });
    while fresh.load(K2).unwrap().len() < 2 {
        thread::yield_now();
    }
    lt.release_all(TxId(1), &[K2]);
    assert_eq!(job.join().unwrap(), Ok(ndpdb_slt::DeviceGrant::AfterWait));
    lt.release_all(TxId(2), &[K1]);
    assert!(fresh.load(K1).unwrap().is_empty() && fresh.load(K2).unwrap().is_empty());
    // The dead job's transaction ends: its tag is reusable.
    lt.release_device(K1, tag(7)).unwrap_err();
    lt.set_device_owner(tag(7), None);
    assert!(!lt.tag_is_stale(tag(7)));
    // A table of another size cannot take over.
    let small = Arc::new(SharedLockTable::in_process(16).unwrap());
    assert_eq!(
        lt.swap_slt_with(|| Ok(Some(small))).unwrap_err().code,
        ndpdb_formats::SqlState::CONNECTION_FAILURE
    );
}

fn shared(lt: &LockTable, tx: u64, key: LockKey) -> Result<Acquired> {
    lt.acquire_mode(
        TxId(tx),
        key,
        LockMode::Shared,
        LockWait::default(),
        false,
        None,
    )
}

#[test]
fn shared_holders_coexist_and_keep_an_exclusive_request_waiting() {
    let lt = Arc::new(LockTable::new());
    assert_eq!(shared(&lt, 1, K1).unwrap(), Acquired::Immediately);
    assert_eq!(shared(&lt, 2, K1).unwrap(), Acquired::Immediately);
    let lt2 = lt.clone();
    let h = thread::spawn(move || lt2.acquire(TxId(3), K1, None));
    while lt.waiting() < 1 {
        thread::yield_now();
    }
    // A shared request behind a waiting exclusive one waits too (FIFO).
    let lt4 = lt.clone();
    let h4 = thread::spawn(move || shared(&lt4, 4, K1));
    while lt.waiting() < 2 {
        thread::yield_now();
    }
    lt.release_all(TxId(1), &[K1]);
    assert_eq!(lt.waiting(), 2, "one sharer still holds the key");
    lt.release_all(TxId(2), &[K1]);
    assert_eq!(h.join().unwrap().unwrap(), Acquired::AfterWait);
    assert_eq!(lt.waiting(), 1, "the exclusive holder keeps the sharer out");
    lt.release_all(TxId(3), &[K1]);
    assert_eq!(h4.join().unwrap().unwrap(), Acquired::AfterWait);
    lt.release_all(TxId(4), &[K1]);
    assert_eq!(lt.locked_keys(), 0);
}

#[test]
fn a_lone_sharer_upgrades_and_two_upgrading_sharers_deadlock() {
    let lt = Arc::new(LockTable::new());
    shared(&lt, 1, K1).unwrap();
    assert_eq!(
        lt.acquire(TxId(1), K1, None).unwrap(),
        Acquired::Immediately
    );
    assert!(!lt.try_acquire(TxId(2), K1));
    lt.release_all(TxId(1), &[K1]);

    shared(&lt, 1, K1).unwrap();
    shared(&lt, 2, K1).unwrap();
    let lt2 = lt.clone();
    let h = thread::spawn(move || lt2.acquire(TxId(1), K1, None));
    while lt.waiting() < 1 {
        thread::yield_now();
    }
    let e = lt.acquire(TxId(2), K1, None).unwrap_err();
    assert_eq!(e.code, SqlState::DEADLOCK_DETECTED);
    // The victim keeps its shared hold until it ends.
    assert_eq!(lt.waiting(), 1);
    lt.release_all(TxId(2), &[K1]);
    assert_eq!(h.join().unwrap().unwrap(), Acquired::AfterWait);
    lt.release_all(TxId(1), &[K1]);
    assert_eq!(lt.locked_keys(), 0);
}
