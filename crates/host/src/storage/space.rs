//! Free-space management (DESIGN.md §8a): which device pages (PPNs) may
//! be written next.
//!
//! ```text
//!   release(pages, unmap LPNs) ──► pending, tagged with an epoch (the next TxId)
//!                                     │ every transaction older than the epoch
//!                                     │ has ended: nobody can still read them
//!                                     ▼
//!   ripe() ──► caller unmaps the LPNs (host L2P, device maps: durable)
//!                 └──► free(PPNs) ──► alloc(n): lowest PPN first, then new
//!                                     pages at the end of the store file
//! ```
//!
//! The store is append-only in the sense that matters: a page is never
//! rewritten while anyone may read it. A PPN becomes free when no map
//! refers to it — a GC victim, the older copy of a re-flushed LPN, a page
//! of an aborted update job — and is handed out again only after its LPN
//! is unmapped on the device (a crash must not leave a map pointing to a
//! page that now holds something else), and, if a head pointed into it
//! until just now, after every transaction that was running then has
//! ended (a reader may have resolved that head just before). A page whose
//! versions were all superseded by transactions below the GC horizon is
//! reached by no running transaction: every snapshot in use was taken
//! after those heads moved, and every walk stops at the version it sees.
//!
//! The map is not logged: its persistent form is the device's L2P map.
//! At open every PPN of the store file that no LPN maps to is free —
//! pages of jobs that never committed, pages written by a flush whose
//! map merge a crash cut off, older copies of re-flushed LPNs. Pages
//! still mapped but without a needed version are found by the next GC.

use std::collections::{BTreeSet, VecDeque};

use parking_lot::Mutex;
use rustc_hash::FxHashSet;

use ndpdb_formats::{Lpn, Ppn, TxId};

/// Pages released together, reusable once `epoch` is the oldest
/// running transaction (or none runs); epoch 0: as soon as their LPNs
/// are unmapped (no running transaction can reach them).
struct Pending {
    epoch: TxId,
    unmap: Vec<Lpn>,
    ppns: Vec<Ppn>,
}

#[derive(Default)]
struct Inner {
    /// PPNs nothing refers to or reads.
    free: BTreeSet<u64>,
    /// The store file's length in pages: new pages are appended there.
    end: u64,
    pending: VecDeque<Pending>,
    /// LPNs of pending pages that are still mapped (so that a page is
    /// never released twice, e.g. by two GC runs).
    pending_lpns: FxHashSet<Lpn>,
    /// LPNs handed to update jobs and never mapped: given out again.
    spare_lpns: Vec<Lpn>,
    /// Base backups reading the pages mapped at their checkpoint: while
    /// one runs no released page becomes free (none is rewritten).
    pins: u32,
}

/// Free and pending pages of the device store.
#[derive(Default)]
pub(crate) struct SpaceMap {
    inner: Mutex<Inner>,
}

/// Pages whose grace period ended: unmap `unmap`, then free `ppns`.
pub(crate) struct Ripe {
    pub unmap: Vec<Lpn>,
    pub ppns: Vec<Ppn>,
}

impl SpaceMap {
    /// The map of a store of `page_count` pages of which `mapped` are
    /// referenced by the L2P map: every other page is free.
    pub fn open(page_count: u64, mapped: impl Iterator<Item = Ppn>) -> SpaceMap {
        let used: FxHashSet<u64> = mapped.map(|p| p.0).collect();
        let free = (0..page_count).filter(|p| !used.contains(p)).collect();
        SpaceMap {
            inner: Mutex::new(Inner {
                free,
                end: page_count,
                ..Inner::default()
            }),
        }
    }

    /// `n` PPNs to write: free ones (lowest first), then new pages at the
    /// end of the file.
    pub fn alloc(&self, n: usize) -> Vec<Ppn> {
        let mut g = self.inner.lock();
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let Some(p) = g.free.pop_first() else { break };
            out.push(Ppn(p));
        }
        while out.len() < n {
            out.push(Ppn(g.end));
            g.end += 1;
        }
        out
    }

    /// An LPN an update job had and never used, or `None`.
    pub fn spare_lpn(&self) -> Option<Lpn> {
        self.inner.lock().spare_lpns.pop()
    }

    /// Pages that were never mapped (an update job's unused or failed
    /// pages): free at once, their LPNs given out again.
    pub fn give_back(&self, pages: &[(Lpn, Ppn)]) {
        let mut g = self.inner.lock();
        for (l, p) in pages {
            g.free.insert(p.0);
            g.spare_lpns.push(*l);
        }
    }

    /// Releases pages nothing will refer to once the transactions running
    /// now have ended: `unmap` are their mapped LPNs (none for the older
    /// copy of a re-flushed LPN). Pages already pending are skipped.
    pub fn release(&self, epoch: TxId, unmap: &[(Lpn, Ppn)], ppns: &[Ppn]) {
        let mut g = self.inner.lock();
        let mut p = Pending {
            epoch,
            unmap: Vec::new(),
            ppns: ppns.to_vec(),
        };
        for (l, ppn) in unmap {
            if g.pending_lpns.insert(*l) {
                p.unmap.push(*l);
                p.ppns.push(*ppn);
            }
        }
        if !p.ppns.is_empty() {
            g.pending.push_back(p);
        }
    }

    /// Whether `lpn`'s page is already released.
    pub fn is_pending(&self, lpn: Lpn) -> bool {
        self.inner.lock().pending_lpns.contains(&lpn)
    }

    /// The pending pages whose epoch `oldest` (the oldest running
    /// transaction, or the next TxId) has reached.
    pub fn ripe(&self, oldest: TxId) -> Option<Ripe> {
        let mut g = self.inner.lock();
        let mut r = Ripe {
            unmap: Vec::new(),
            ppns: Vec::new(),
        };
        // Called before every flush and job allocation: nothing to do
        // (the common case) costs one pass, no allocation.
        if g.pins > 0 || !g.pending.iter().any(|p| p.epoch <= oldest) {
            return None;
        }
        let mut waiting = VecDeque::with_capacity(g.pending.len());
        for p in g.pending.drain(..) {
            if p.epoch <= oldest {
                r.unmap.extend(p.unmap);
                r.ppns.extend(p.ppns);
            } else {
                waiting.push_back(p);
            }
        }
        g.pending = waiting;
        (!r.ppns.is_empty()).then_some(r)
    }

    /// Holds every released page back (see `crate::backup`) until
    /// [`SpaceMap::unpin`].
    pub fn pin(&self) {
        self.inner.lock().pins += 1;
    }

    pub fn unpin(&self) {
        let mut g = self.inner.lock();
        g.pins = g.pins.saturating_sub(1);
    }

    /// Ripe pages whose LPNs are unmapped now: free to write.
    pub fn free(&self, ripe: Ripe) {
        let mut g = self.inner.lock();
        for l in &ripe.unmap {
            g.pending_lpns.remove(l);
        }
        g.free.extend(ripe.ppns.iter().map(|p| p.0));
    }

    /// Ripe pages whose unmapping failed: pending again.
    pub fn retry(&self, ripe: Ripe, epoch: TxId) {
        self.inner.lock().pending.push_front(Pending {
            epoch,
            unmap: ripe.unmap,
            ppns: ripe.ppns,
        });
    }

    /// (free pages, pending pages, the file's length in pages).
    pub fn counts(&self) -> (u64, u64, u64) {
        let g = self.inner.lock();
        let pending = g.pending.iter().map(|p| p.ppns.len() as u64).sum();
        (g.free.len() as u64, pending, g.end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmapped_pages_are_free_at_open_and_reused_lowest_first() {
        let s = SpaceMap::open(6, [Ppn(0), Ppn(2), Ppn(5)].into_iter());
        assert_eq!(s.counts(), (3, 0, 6));
        assert_eq!(s.alloc(5), vec![Ppn(1), Ppn(3), Ppn(4), Ppn(6), Ppn(7)]);
        assert_eq!(s.counts(), (0, 0, 8));
    }

    #[test]
    fn released_pages_wait_for_older_transactions_and_their_unmap() {
        let s = SpaceMap::open(4, (0..4).map(Ppn));
        s.release(TxId(10), &[(Lpn(7), Ppn(2))], &[Ppn(3)]);
        // A second release of the same mapped page is ignored.
        s.release(TxId(11), &[(Lpn(7), Ppn(2))], &[]);
        assert!(s.is_pending(Lpn(7)));
        assert!(s.ripe(TxId(9)).is_none());
        let r = s.ripe(TxId(10)).unwrap();
        assert_eq!(
            (r.unmap.clone(), r.ppns.clone()),
            (vec![Lpn(7)], vec![Ppn(3), Ppn(2)])
        );
        assert_eq!(s.alloc(1), vec![Ppn(4)], "not free before the unmap");
        s.free(r);
        assert!(!s.is_pending(Lpn(7)));
        assert_eq!(s.alloc(3), vec![Ppn(2), Ppn(3), Ppn(5)]);
    }

    #[test]
    fn a_pin_holds_released_pages_back() {
        let s = SpaceMap::open(4, (0..4).map(Ppn));
        s.pin();
        s.release(TxId(0), &[(Lpn(1), Ppn(1))], &[]);
        assert!(s.ripe(TxId(10)).is_none());
        assert_eq!(s.alloc(1), vec![Ppn(4)]);
        s.unpin();
        assert_eq!(s.ripe(TxId(10)).unwrap().ppns, vec![Ppn(1)]);
    }

    #[test]
    fn pages_nobody_can_reach_do_not_wait_behind_others() {
        let s = SpaceMap::open(4, (0..4).map(Ppn));
        s.release(TxId(50), &[(Lpn(1), Ppn(1))], &[]);
        s.release(TxId(0), &[(Lpn(2), Ppn(2))], &[]);
        let r = s.ripe(TxId(10)).unwrap();
        assert_eq!(r.ppns, vec![Ppn(2)]);
        s.free(r);
        assert!(s.is_pending(Lpn(1)));
    }

    #[test]
    fn unused_job_pages_come_back_with_their_lpns() {
        let s = SpaceMap::open(0, std::iter::empty());
        let p = s.alloc(2);
        s.give_back(&[(Lpn(4), p[0]), (Lpn(5), p[1])]);
        assert_eq!(s.spare_lpn(), Some(Lpn(5)));
        assert_eq!(s.alloc(1), vec![Ppn(0)]);
    }
}
