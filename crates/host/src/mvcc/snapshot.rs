//! TxIds and snapshots (DESIGN.md §3). The visibility rule itself lives
//! in `ndpdb_formats::visibility`, shared with the device.
//!
//! ```text
//!            xmin                        xmax
//!   ─────────────┼──────────────────────────┼──────────▶ TxId
//!   committed    │ committed unless in the  │ started after the
//!   (visible)    │ in-flight set            │ snapshot (invisible)
//! ```
//!
//! A version is visible to a snapshot iff its creator is the reader
//! itself, or the creator is below `xmax` and not in the in-flight set.
//! Only committed (or committing) transactions ever place versions in
//! storage, so "not in flight and below xmax" means "committed before".
//! A tuple is read by walking its new-to-old chain from the VID-map head
//! until the first visible version; a visible tombstone means "deleted".

use std::collections::{BTreeMap, BTreeSet};

use parking_lot::{Mutex, RwLock};

use ndpdb_formats::TxId;

pub use ndpdb_formats::visibility::{find_visible, Snapshot, Visible};

/// Hands out TxIds and tracks running transactions.
pub struct TxManager {
    inner: Mutex<TxInner>,
    /// Held shared by `begin` and exclusively by [`TxManager::exclusive`]:
    /// while an exclusive section runs, no transaction begins (the
    /// rest of the manager — snapshots, horizon, next TxId — stays
    /// available to flushes and GC).
    admission: RwLock<()>,
}

struct TxInner {
    next: u64,
    /// Running transactions and the oldest `xmin` of the snapshots each
    /// has taken (its own TxId until it takes one).
    active: BTreeMap<TxId, TxId>,
    /// Running maintenance transactions ([`TxManager::begin_maintenance`]).
    maintenance: BTreeSet<TxId>,
}

impl TxInner {
    /// The next TxId, handed out.
    fn allocate(&mut self) -> TxId {
        let id = TxId(self.next);
        self.next += 1;
        id
    }

    /// A transaction or a maintenance job runs.
    fn running(&self) -> bool {
        !self.active.is_empty() || !self.maintenance.is_empty()
    }
}

impl TxManager {
    pub fn new(next: TxId) -> TxManager {
        TxManager {
            inner: Mutex::new(TxInner {
                next: next.0.max(1),
                active: BTreeMap::new(),
                maintenance: BTreeSet::new(),
            }),
            admission: RwLock::new(()),
        }
    }

    /// Like [`TxManager::exclusive`], with `f` given a way to begin
    /// transactions of its own (no other can begin meanwhile).
    pub fn exclusive_begin<R>(&self, f: impl FnOnce(&dyn Fn() -> TxId) -> R) -> Option<R> {
        let _no_admission = self.admission.write();
        if self.inner.lock().running() {
            return None;
        }
        let begin = || {
            let mut g = self.inner.lock();
            let id = g.allocate();
            g.active.insert(id, id);
            id
        };
        Some(f(&begin))
    }

    pub fn begin(&self) -> TxId {
        let _admitted = self.admission.read();
        let mut g = self.inner.lock();
        let id = g.allocate();
        g.active.insert(id, id);
        id
    }

    /// A TxId for a maintenance job that reads pages but creates no
    /// version (a GC run): it keeps the pages it may read from being
    /// freed ([`TxManager::oldest_active`]) and blocks exclusive
    /// sections, but it is in no snapshot's in-flight set and holds back
    /// no horizon. A GC run lasts seconds; counted as a transaction, it
    /// held the horizon for all of them, so the tuples deleted meanwhile
    /// stayed in every key-order read (TPC-C's Delivery walked past a
    /// GC run's worth of delivered orders per district).
    pub fn begin_maintenance(&self) -> TxId {
        let _admitted = self.admission.read();
        let mut g = self.inner.lock();
        let id = g.allocate();
        g.maintenance.insert(id);
        id
    }

    pub fn snapshot(&self, me: TxId) -> Snapshot {
        let mut g = self.inner.lock();
        let in_flight: Vec<TxId> = g.active.keys().copied().filter(|t| *t != me).collect();
        let xmax = TxId(g.next);
        let xmin = in_flight.first().copied().unwrap_or(xmax);
        if let Some(oldest) = g.active.get_mut(&me) {
            *oldest = (*oldest).min(xmin);
        }
        Snapshot {
            txid: me,
            xmin,
            xmax,
            in_flight,
        }
    }

    /// Removes a finished transaction (committed durably, or aborted).
    pub fn finish(&self, id: TxId) {
        let mut g = self.inner.lock();
        if g.active.remove(&id).is_none() {
            g.maintenance.remove(&id);
        }
    }

    /// The GC horizon (DESIGN.md §8a): no snapshot in use, or taken from
    /// now on, has an `xmin` below it — so a committed version created
    /// below it is visible to all of them, and every version behind it
    /// in its chain is garbage.
    pub fn horizon(&self) -> TxId {
        let g = self.inner.lock();
        g.active
            .iter()
            .map(|(id, xmin)| (*id).min(*xmin))
            .min()
            .unwrap_or(TxId(g.next))
            .min(TxId(g.next))
    }

    /// The oldest running transaction, maintenance included, or the
    /// next TxId if none runs: pages released before it started are read
    /// by nobody.
    pub fn oldest_active(&self) -> TxId {
        let g = self.inner.lock();
        let first = |s: Option<&TxId>| s.copied().unwrap_or(TxId(g.next));
        first(g.active.keys().next()).min(first(g.maintenance.first()))
    }

    pub fn next_txid(&self) -> TxId {
        TxId(self.inner.lock().next)
    }

    pub fn active_count(&self) -> usize {
        self.inner.lock().active.len()
    }

    /// Runs `f` while no transaction runs and none can begin, given the
    /// next TxId: every transaction below it is finished. `None` if a
    /// transaction is running.
    pub fn exclusive<R>(&self, f: impl FnOnce(TxId) -> R) -> Option<R> {
        self.exclusive_beside(None, f)
    }

    /// [`TxManager::exclusive`], but `beside` — the caller's own
    /// transaction, which has written nothing — may be running.
    pub fn exclusive_beside<R>(
        &self,
        beside: Option<TxId>,
        f: impl FnOnce(TxId) -> R,
    ) -> Option<R> {
        let _no_admission = self.admission.write();
        let next = {
            let g = self.inner.lock();
            let others = g.active.keys().any(|t| Some(*t) != beside);
            if others || !g.maintenance.is_empty() {
                return None;
            }
            TxId(g.next)
        };
        Some(f(next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndpdb_formats::record::{RecordHeader, FLAG_TOMBSTONE};
    use ndpdb_formats::{Lpn, RecId, Vid};
    use std::collections::HashMap;

    /// A hand-built chain: rid → (creator, pred, tombstone, payload).
    struct Chain(HashMap<RecId, (RecordHeader, &'static str)>);

    impl Chain {
        fn new(versions: &[(u64, u64, bool, &'static str)]) -> (Chain, RecId) {
            // versions are listed old → new; creator, slot, tombstone, payload
            let mut map = HashMap::new();
            let mut pred = RecId::NULL;
            for &(creator, slot, tomb, payload) in versions {
                let rid = RecId::new(Lpn(1), slot as u16);
                map.insert(
                    rid,
                    (
                        RecordHeader {
                            creator: TxId(creator),
                            pred,
                            vid: Vid(0),
                            flags: if tomb { FLAG_TOMBSTONE } else { 0 },
                        },
                        payload,
                    ),
                );
                pred = rid;
            }
            (Chain(map), pred)
        }

        fn read(&self, head: RecId, s: &Snapshot) -> Visible<&'static str> {
            find_visible(head, s, |r| Ok::<_, ndpdb_formats::Error>(self.0[&r])).unwrap()
        }
    }

    fn snap(me: u64, xmax: u64, in_flight: &[u64]) -> Snapshot {
        let in_flight: Vec<TxId> = in_flight.iter().map(|t| TxId(*t)).collect();
        Snapshot {
            txid: TxId(me),
            xmin: in_flight.first().copied().unwrap_or(TxId(xmax)),
            xmax: TxId(xmax),
            in_flight,
        }
    }

    #[test]
    fn committed_before_is_visible_committed_after_is_not() {
        let (c, head) = Chain::new(&[(2, 0, false, "v2"), (5, 1, false, "v5")]);
        // Reader 4 started before 5: sees v2.
        assert_eq!(
            c.read(head, &snap(4, 5, &[])),
            Visible::Version(RecId::new(Lpn(1), 0), "v2")
        );
        // Reader 7 sees the newest.
        assert_eq!(
            c.read(head, &snap(7, 8, &[])),
            Visible::Version(RecId::new(Lpn(1), 1), "v5")
        );
        // Reader 1 sees nothing: the tuple did not exist yet.
        assert_eq!(c.read(head, &snap(1, 2, &[])), Visible::None);
    }

    #[test]
    fn in_flight_creators_are_invisible() {
        let (c, head) = Chain::new(&[(2, 0, false, "v2"), (5, 1, false, "v5")]);
        // 5 was running when reader 8 took its snapshot.
        assert_eq!(
            c.read(head, &snap(8, 9, &[5])),
            Visible::Version(RecId::new(Lpn(1), 0), "v2")
        );
    }

    #[test]
    fn own_writes_are_visible() {
        let (c, head) = Chain::new(&[(2, 0, false, "v2"), (9, 1, false, "mine")]);
        // Reader 9 has 9 ≥ xmax of an older snapshot, but it is its own version.
        assert_eq!(
            c.read(head, &snap(9, 9, &[])),
            Visible::Version(RecId::new(Lpn(1), 1), "mine")
        );
    }

    #[test]
    fn tombstones_delete() {
        let (c, head) = Chain::new(&[(2, 0, false, "v2"), (4, 1, true, "gone")]);
        assert_eq!(
            c.read(head, &snap(6, 6, &[])),
            Visible::Deleted(RecId::new(Lpn(1), 1))
        );
        // Before the delete committed, the row is still there.
        assert_eq!(
            c.read(head, &snap(3, 4, &[])),
            Visible::Version(RecId::new(Lpn(1), 0), "v2")
        );
        assert_eq!(
            c.read(head, &snap(6, 6, &[4])),
            Visible::Version(RecId::new(Lpn(1), 0), "v2")
        );
        // Re-inserted after the delete.
        let (c, head) = Chain::new(&[(2, 0, false, "a"), (4, 1, true, "x"), (6, 2, false, "b")]);
        assert_eq!(
            c.read(head, &snap(5, 5, &[])),
            Visible::Deleted(RecId::new(Lpn(1), 1))
        );
        assert_eq!(
            c.read(head, &snap(7, 7, &[])),
            Visible::Version(RecId::new(Lpn(1), 2), "b")
        );
    }

    #[test]
    fn manager_snapshots() {
        let m = TxManager::new(TxId(10));
        let a = m.begin();
        let b = m.begin();
        let s = m.snapshot(b);
        assert!(!s.sees(a));
        assert!(s.sees(b));
        assert!(s.sees(TxId(9)));
        m.finish(a);
        let s2 = m.snapshot(b);
        assert!(s2.sees(a));
        let c = m.begin();
        assert!(!s2.sees(c));
    }

    #[test]
    fn the_horizon_is_the_oldest_xmin_in_use() {
        let m = TxManager::new(TxId(10));
        assert_eq!(m.horizon(), TxId(10));
        let a = m.begin();
        let b = m.begin();
        // b's snapshot has a (10) in flight: its xmin is 10.
        let s = m.snapshot(b);
        assert_eq!(s.xmin, a);
        m.finish(a);
        // a ended, but b may still need what a's versions replaced.
        assert_eq!(m.horizon(), a);
        assert_eq!(m.oldest_active(), b);
        m.finish(b);
        assert_eq!(m.horizon(), TxId(12));
        // A transaction without a snapshot yet holds the horizon at itself.
        let c = m.begin();
        assert_eq!(m.horizon(), c);
    }

    #[test]
    fn a_maintenance_job_holds_back_page_reuse_but_no_horizon() {
        let m = TxManager::new(TxId(10));
        let gc = m.begin_maintenance();
        // Nothing else runs: the horizon moves past the job.
        assert_eq!(m.horizon(), TxId(11));
        assert_eq!(m.oldest_active(), gc);
        // A transaction begun after it sees past it and holds the
        // horizon at itself only.
        let a = m.begin();
        let s = m.snapshot(a);
        assert!(s.in_flight.is_empty());
        assert_eq!(m.horizon(), a);
        assert_eq!(m.oldest_active(), gc);
        // No exclusive section while it runs.
        m.finish(a);
        assert!(m.exclusive(|_| ()).is_none());
        m.finish(gc);
        assert_eq!(m.oldest_active(), TxId(12));
        assert!(m.exclusive(|_| ()).is_some());
    }
}
