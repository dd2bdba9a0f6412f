//! Device L2P and VID maps (DESIGN.md §2), kept in arrays indexed by
//! LPN and by VID, persisted as a map image plus a merge log.
//!
//! - [`image`]: the map image — the file a compaction writes (`maps.snap`,
//!   "the snapshot" of the merge log's compaction) — read straight into
//!   the arrays. (Not an MVCC snapshot: those are `ndpdb_formats::visibility`.)
//! - [`store`]: the merge log and compaction.

mod image;
mod rados;
mod store;

pub use store::{Compaction, MapStore};

use std::collections::HashMap;

use rustc_hash::FxHashMap;

use ndpdb_formats::{Lpn, Ppn, RecId, TableId};
use ndpdb_link::{LinkError, MapRuns, VidEntry};

fn io(e: std::io::Error) -> LinkError {
    LinkError::Io(e.to_string())
}

/// The L2P map: LPNs are handed out densely from a counter, so the map is
/// an array indexed by LPN (one load per page a PE resolves, no hashing);
/// an LPN far beyond the array's end (a map written by something else)
/// goes to a side table instead of growing the array without bound.
#[derive(Default, Debug, Clone)]
pub struct L2p {
    dense: Vec<u64>,
    sparse: FxHashMap<Lpn, Ppn>,
    len: usize,
}

/// An unmapped slot of [`L2p::dense`].
const UNMAPPED: u64 = u64::MAX;
/// How far past its end the dense array grows for one insert.
const DENSE_SLACK: u64 = 1 << 20;

impl L2p {
    #[inline]
    pub fn get(&self, lpn: &Lpn) -> Option<Ppn> {
        match self.dense.get(lpn.0 as usize) {
            Some(&p) if p != UNMAPPED => Some(Ppn(p)),
            Some(_) => None,
            None if self.sparse.is_empty() => None,
            None => self.sparse.get(lpn).copied(),
        }
    }

    pub fn insert(&mut self, lpn: Lpn, ppn: Ppn) {
        let i = lpn.0;
        if i < self.dense.len() as u64 + DENSE_SLACK && ppn.0 != UNMAPPED {
            let i = i as usize;
            if i >= self.dense.len() {
                self.dense.resize(i + 1, UNMAPPED);
            }
            if self.dense[i] == UNMAPPED {
                self.len += 1;
            }
            self.dense[i] = ppn.0;
        } else if self.sparse.insert(lpn, ppn).is_none() {
            self.len += 1;
        }
    }

    pub fn remove(&mut self, lpn: Lpn) {
        let removed = match self.dense.get_mut(lpn.0 as usize) {
            Some(p) if *p != UNMAPPED => {
                *p = UNMAPPED;
                true
            }
            Some(_) => false,
            None => self.sparse.remove(&lpn).is_some(),
        };
        if removed {
            self.len -= 1;
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every mapping, dense part in LPN order first.
    pub fn iter(&self) -> impl Iterator<Item = (Lpn, Ppn)> + '_ {
        self.dense
            .iter()
            .enumerate()
            .filter(|(_, p)| **p != UNMAPPED)
            .map(|(l, p)| (Lpn(l as u64), Ppn(*p)))
            .chain(self.sparse.iter().map(|(l, p)| (*l, *p)))
    }
}

impl L2p {
    /// A map of the dense array and the side table [`L2p::parts`] gave.
    fn from_parts(dense: Vec<u64>, sparse: Vec<(Lpn, Ppn)>) -> L2p {
        let mut m = L2p {
            len: dense.iter().filter(|p| **p != UNMAPPED).count(),
            dense,
            sparse: FxHashMap::default(),
        };
        for (l, p) in sparse {
            m.insert(l, p);
        }
        m
    }

    /// The dense array and the side table, sorted.
    fn parts(&self) -> (&[u64], Vec<(Lpn, Ppn)>) {
        let mut sparse: Vec<_> = self.sparse.iter().map(|(l, p)| (*l, *p)).collect();
        sparse.sort_unstable();
        (&self.dense, sparse)
    }

    /// Every mapping in LPN order, as runs.
    pub fn runs(&self) -> MapRuns {
        if self.sparse.is_empty() {
            return MapRuns::collect(self.iter().map(|(l, p)| (l.0, p.0)));
        }
        let mut all: Vec<(u64, u64)> = self.iter().map(|(l, p)| (l.0, p.0)).collect();
        all.sort_unstable();
        MapRuns::collect(all)
    }
}

impl PartialEq for L2p {
    fn eq(&self, o: &L2p) -> bool {
        let sorted = |m: &L2p| {
            let mut v: Vec<_> = m.iter().collect();
            v.sort();
            v
        };
        self.len == o.len && sorted(self) == sorted(o)
    }
}

/// The maps themselves.
#[derive(Default, Debug, Clone, PartialEq)]
pub struct Maps {
    pub l2p: L2p,
    /// Per table: index = VID, value = head RecId (raw; NULL = empty).
    pub vids: HashMap<TableId, Vec<u64>>,
}

impl Maps {
    /// Applies ΔL2P (an entry to [`Ppn::NONE`] unmaps its LPN) and ΔVID.
    pub fn apply_merge(&mut self, l2p: &[(Lpn, Ppn)], vids: &[VidEntry]) {
        for (l, p) in l2p {
            if *p == Ppn::NONE {
                self.l2p.remove(*l);
            } else {
                self.l2p.insert(*l, *p);
            }
        }
        for e in vids {
            let map = self.vids.entry(e.table).or_default();
            let i = e.vid.0 as usize;
            if map.len() <= i {
                map.resize(i + 1, RecId::NULL.raw());
            }
            map[i] = e.head.raw();
        }
    }

    pub fn drop_table(&mut self, table: TableId) {
        self.vids.remove(&table);
    }

    /// A table's VID map in VID order, as runs.
    pub fn vid_runs(&self, table: TableId) -> MapRuns {
        let Some(m) = self.vids.get(&table) else {
            return MapRuns::default();
        };
        MapRuns::collect(
            m.iter()
                .enumerate()
                .filter(|(_, r)| **r != RecId::NULL.raw())
                .map(|(v, r)| (v as u64, *r)),
        )
    }
}
