//! The host's authoritative address maps (DESIGN.md §2).
//!
//! - L2P: LPN → PPN for every page already on the device (pages still in
//!   the delta buffer have no PPN yet).
//! - One VID map per table: VID → RecId of the newest committed version.
//!
//! ```text
//!  VID map            L2P             device store
//!  vid 0 ─► (7:2) ─►  lpn 7 ─► ppn 31 ─► page 31, slot 2 ─► version
//!  vid 1 ─► (9:0) ─►  lpn 9 (delta buffer, no PPN yet)
//! ```

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;
use rustc_hash::FxHashMap;

use ndpdb_formats::ids::MAX_VID;
use ndpdb_formats::{Error, Lpn, Ppn, RecId, Result, Vid};
use ndpdb_link::MapRuns;

/// VID → head RecId for one table, plus the VID allocator.
#[derive(Default)]
pub struct VidMap {
    heads: RwLock<Vec<u64>>,
    next_vid: AtomicU64,
}

impl VidMap {
    /// The map of a device's dump; a VID beyond [`MAX_VID`] is corruption.
    pub fn from_runs(runs: &MapRuns) -> Result<VidMap> {
        if runs.key_end() > MAX_VID {
            return Err(Error::corrupted(format!(
                "VID map entry {} beyond the VID space",
                runs.key_end() - 1
            )));
        }
        let heads = runs.to_dense(RecId::NULL.raw());
        Ok(VidMap {
            next_vid: AtomicU64::new(heads.len() as u64),
            heads: RwLock::new(heads),
        })
    }

    /// Hands out no VID below `bound` from now on.
    pub fn allocate_from(&self, bound: u64) {
        self.next_vid.fetch_max(bound, Ordering::AcqRel);
    }

    pub fn head(&self, vid: Vid) -> RecId {
        self.heads
            .read()
            .get(vid.0 as usize)
            .map_or(RecId::NULL, |r| RecId::from_raw(*r))
    }

    /// Copies the heads of `[from, to)` into `out` (one read-lock).
    pub fn heads_range(&self, from: u64, to: u64, out: &mut Vec<RecId>) {
        out.clear();
        let h = self.heads.read();
        for v in from..to {
            out.push(
                h.get(v as usize)
                    .map_or(RecId::NULL, |r| RecId::from_raw(*r)),
            );
        }
    }

    pub fn set(&self, vid: Vid, head: RecId) {
        let mut h = self.heads.write();
        let i = vid.0 as usize;
        if h.len() <= i {
            h.resize(i + 1, RecId::NULL.raw());
        }
        h[i] = head.raw();
        drop(h);
        self.next_vid.fetch_max(vid.0 + 1, Ordering::AcqRel);
    }

    /// Sets many heads under one lock.
    pub fn set_many(&self, heads: &[(Vid, RecId)]) {
        let Some(top) = heads.iter().map(|(v, _)| v.0).max() else {
            return;
        };
        let mut h = self.heads.write();
        if h.len() <= top as usize {
            h.resize(top as usize + 1, RecId::NULL.raw());
        }
        for (v, r) in heads {
            h[v.0 as usize] = r.raw();
        }
        drop(h);
        self.next_vid.fetch_max(top + 1, Ordering::AcqRel);
    }

    pub fn allocate(&self) -> Vid {
        Vid(self.next_vid.fetch_add(1, Ordering::AcqRel))
    }

    /// VIDs handed out so far (scans walk `0..vid_count`).
    pub fn vid_count(&self) -> u64 {
        self.next_vid.load(Ordering::Acquire)
    }

    /// Non-empty entries, for rebuilding indexes.
    pub fn entries(&self) -> Vec<(Vid, RecId)> {
        self.heads
            .read()
            .iter()
            .enumerate()
            .filter(|(_, r)| **r != RecId::NULL.raw())
            .map(|(v, r)| (Vid(v as u64), RecId::from_raw(*r)))
            .collect()
    }
}

/// LPN → PPN.
#[derive(Default)]
pub struct L2pMap {
    map: RwLock<FxHashMap<Lpn, Ppn>>,
}

impl L2pMap {
    /// The map of a device's dump.
    pub fn from_runs(runs: &MapRuns) -> L2pMap {
        L2pMap {
            map: RwLock::new(runs.iter().map(|(l, p)| (Lpn(l), Ppn(p))).collect()),
        }
    }

    pub fn get(&self, lpn: Lpn) -> Option<Ppn> {
        self.map.read().get(&lpn).copied()
    }

    /// Maps `entries`; returns the PPNs they replace (older copies of
    /// re-flushed LPNs).
    pub fn insert_all(&self, entries: &[(Lpn, Ppn)]) -> Vec<Ppn> {
        let mut m = self.map.write();
        let mut replaced = Vec::new();
        for (l, p) in entries {
            if let Some(old) = m.insert(*l, *p) {
                if old != *p {
                    replaced.push(old);
                }
            }
        }
        replaced
    }

    pub fn remove_all(&self, lpns: &[Lpn]) {
        let mut m = self.map.write();
        for l in lpns {
            m.remove(l);
        }
    }

    /// Every mapped LPN.
    pub fn lpns(&self) -> Vec<Lpn> {
        self.map.read().keys().copied().collect()
    }

    /// Every mapped PPN.
    pub fn ppns(&self) -> Vec<Ppn> {
        self.map.read().values().copied().collect()
    }

    pub fn max_lpn(&self) -> Option<Lpn> {
        self.map.read().keys().max().copied()
    }

    pub fn len(&self) -> usize {
        self.map.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
