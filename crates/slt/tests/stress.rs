//! Threads as device PEs and host transactions hammer a few SLT buckets;
//! an invariant checker asserts exclusive holding per bucket, and
//! counters assert that every critical section ran exactly once.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use rand::{Rng, SeedableRng};

use ndpdb_formats::{TableId, TxId, Vid};
use ndpdb_slt::{DeviceTag, HostSide, SharedLockTable};

const BUCKETS: usize = 4;
const KEYS: u64 = 16;

/// The host side: SLT groups plus a FIFO queue per bucket standing in for
/// the HLT (tuple = bucket here), under one mutex, with a condvar.
struct Host {
    slt: Arc<SharedLockTable>,
    state: Mutex<(HostSide, HashMap<usize, VecDeque<TxId>>)>,
    wake: Condvar,
}

impl Host {
    fn lock(&self, idx: usize, tx: TxId) {
        let mut g = self.state.lock();
        g.0.request(&self.slt, idx, tx).unwrap();
        g.1.entry(idx).or_default().push_back(tx);
        loop {
            let first = g.1.get(&idx).and_then(|q| q.front()) == Some(&tx);
            if first && g.0.slt_granted(&self.slt, idx, tx).unwrap() {
                return;
            }
            // A timed wait only bounds a hung test; wake-ups are explicit.
            self.wake.wait_for(&mut g, Duration::from_secs(5));
        }
    }

    fn unlock(&self, idx: usize, tx: TxId) {
        let mut g = self.state.lock();
        g.0.leave(&self.slt, idx, tx).unwrap();
        if let Some(q) = g.1.get_mut(&idx) {
            q.retain(|t| *t != tx);
        }
        drop(g);
        self.wake.notify_all();
    }

    /// Releases a device job's lock (the host does this at job end).
    fn release_device(&self, idx: usize, tag: DeviceTag) {
        let g = self.state.lock();
        let wake = g.0.release_device(&self.slt, idx, tag).unwrap();
        drop(g);
        if wake {
            self.wake.notify_all();
        }
    }
}

#[test]
fn hosts_and_devices_hold_buckets_exclusively() {
    let slt = Arc::new(SharedLockTable::in_process(BUCKETS).unwrap());
    let host = Arc::new(Host {
        slt: slt.clone(),
        state: Mutex::new((HostSide::new(), HashMap::new())),
        wake: Condvar::new(),
    });
    // Who is inside each bucket's critical section (0 = nobody).
    let inside: Arc<Vec<AtomicU64>> = Arc::new((0..BUCKETS).map(|_| AtomicU64::new(0)).collect());
    let counters: Arc<Vec<AtomicU64>> = Arc::new((0..BUCKETS).map(|_| AtomicU64::new(0)).collect());
    let per_thread = 5_000u64;
    let mut threads = Vec::new();
    for t in 0..6u64 {
        let (slt, host, inside, counters) =
            (slt.clone(), host.clone(), inside.clone(), counters.clone());
        threads.push(std::thread::spawn(move || {
            let mut rng = rand::rngs::StdRng::seed_from_u64(t);
            let device = t % 2 == 0;
            for i in 0..per_thread {
                let key = (TableId(1), Vid(rng.gen_range(0..KEYS)));
                let idx = slt.index(key);
                let me = t * 1_000_000 + i + 1;
                let tag = DeviceTag::new(2 + (me % 60_000) as u16).unwrap();
                if device {
                    slt.acquire_device(key, tag, Duration::from_secs(30))
                        .unwrap();
                } else {
                    host.lock(idx, TxId(me));
                }
                let prev = inside[idx].swap(me, Ordering::AcqRel);
                assert_eq!(prev, 0, "bucket {idx} held by {prev} and {me}");
                // A non-atomic read-modify-write: lost updates show up in the total.
                // Yielding inside lets the others run into the held bucket.
                let v = counters[idx].load(Ordering::Relaxed);
                std::thread::yield_now();
                counters[idx].store(v + 1, Ordering::Relaxed);
                assert_eq!(inside[idx].swap(0, Ordering::AcqRel), me);
                if device {
                    host.release_device(idx, tag);
                } else {
                    host.unlock(idx, TxId(me));
                }
            }
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
    let total: u64 = counters.iter().map(|c| c.load(Ordering::Relaxed)).sum();
    assert_eq!(total, 6 * per_thread);
    for idx in 0..BUCKETS {
        assert!(
            slt.load_index(idx).unwrap().is_empty(),
            "bucket {idx} left locked"
        );
    }
    assert!(host.state.lock().0.groups(0).is_empty());
    let stats = slt.stats();
    // Every device acquire and release is at least one CAS.
    assert!(stats.cas_attempts >= 2 * 3 * per_thread);
}
