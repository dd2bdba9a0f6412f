//! The host's side of the integrated lock table: host-shared locks and
//! lock ownership (DESIGN.md §7; update NDP §5.2–§5.3, Fig. 10–11).
//!
//! ```text
//!   SLT bucket (head)      [ D4 │ H │ D9 │ H │ _ … ]
//!                                 │        │
//!   host groups (tail)          {T1,T2}  {T5}        one group per H entry,
//!                                  ▲        ▲        in the same order
//!                               owner     owner      (the newest member)
//! ```
//!
//! A host transaction asking for a tuple lock joins the newest group if
//! the bucket's last entry is a host-shared entry (no device request came
//! after it); otherwise it appends a new host-shared entry and starts a
//! group. It holds the tuple when its group's entry is the bucket's head
//! and it is the first member of the group. When a member leaves, the
//! next one takes over; the member whose leaving empties the group — the
//! owner, i.e. the last to have joined — removes the entry from the SLT.
//!
//! `HostSide` is plain bookkeeping: the host lock manager calls it under
//! its own mutex (so host actors are serialised) while device PEs change
//! the same buckets concurrently through CAS. Every call reports whether
//! waiters should be woken.

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};

use rustc_hash::FxHashMap;

use ndpdb_formats::TxId;

use crate::bucket::{DeviceTag, Slot};
use crate::error::{Result, SltError};
use crate::table::SharedLockTable;

/// Where a host request ended up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Joined {
    /// Appended a new host-shared entry at this bucket position.
    NewEntry(usize),
    /// Joined the existing newest group (now its owner).
    ExistingGroup,
}

/// Host transactions per host-shared entry, per bucket. A bucket's entry
/// stays in the map when its groups empty, so its allocations are reused
/// by the next lock on it.
#[derive(Clone, Debug, Default)]
pub struct HostSide {
    groups: FxHashMap<usize, VecDeque<VecDeque<TxId>>>,
    /// Buckets whose head is known to be a host entry (the host put it
    /// there at the front): only the host changes a head that is a host
    /// entry, by removing it, so this stays true until then and saves a
    /// load (a message, when the table is remote) per lock.
    host_heads: rustc_hash::FxHashSet<usize>,
}

impl HostSide {
    /// The non-empty buckets, in bucket order (for equality and hashing).
    fn live(&self) -> Vec<(&usize, &VecDeque<VecDeque<TxId>>)> {
        let mut v: Vec<_> = self.groups.iter().filter(|(_, g)| !g.is_empty()).collect();
        v.sort_by_key(|(i, _)| **i);
        v
    }
}

impl PartialEq for HostSide {
    fn eq(&self, other: &HostSide) -> bool {
        self.live() == other.live()
    }
}

impl Eq for HostSide {}

impl Hash for HostSide {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.live().hash(state);
    }
}

impl HostSide {
    pub fn new() -> HostSide {
        HostSide::default()
    }

    /// Queues `tx` for bucket `idx` (SLT first, then the host group).
    pub fn request(&mut self, slt: &SharedLockTable, idx: usize, tx: TxId) -> Result<Joined> {
        let groups = self.groups.entry(idx).or_default();
        if groups.iter().any(|g| g.contains(&tx)) {
            return Ok(Joined::ExistingGroup);
        }
        let known = groups.len();
        // With no host entry there, the bucket is most often empty.
        let guess = (known == 0).then_some(crate::bucket::Bucket::EMPTY);
        let joined = slt.update_guessing(idx, guess, |b| {
            if b.host_entries() != known {
                return Err(SltError::Corrupted(format!(
                    "bucket {idx} has {} host entries, the host knows {known}: {b:?}",
                    b.host_entries()
                )));
            }
            if b.last() == Slot::Host {
                return Ok((None, Joined::ExistingGroup));
            }
            match b.push(Slot::Host) {
                Some((nb, pos)) => Ok((Some(nb), Joined::NewEntry(pos))),
                // Cannot happen: the last slot is reserved for the host and
                // is only ever filled by a host entry (which we would join).
                None => Err(SltError::Corrupted(format!(
                    "bucket {idx} full without a host entry: {b:?}"
                ))),
            }
        });
        match joined? {
            Joined::ExistingGroup => {
                groups
                    .back_mut()
                    .ok_or_else(|| SltError::Corrupted(format!("bucket {idx}: no host group")))?
                    .push_back(tx);
                Ok(Joined::ExistingGroup)
            }
            Joined::NewEntry(pos) => {
                if pos == 0 {
                    self.host_heads.insert(idx);
                }
                groups.push_back(VecDeque::from([tx]));
                Ok(Joined::NewEntry(pos))
            }
        }
    }

    /// Whether `tx`'s host-shared entry of bucket `idx` is the holder. The
    /// host transactions of that group then share the bucket; which of
    /// them holds a tuple is the host lock table's business (HLT = tail).
    pub fn slt_granted(&self, slt: &SharedLockTable, idx: usize, tx: TxId) -> Result<bool> {
        Ok(self.in_first_group(idx, tx)
            && (self.host_heads.contains(&idx) || slt.load_index(idx)?.head() == Slot::Host))
    }

    /// Whether `tx` is in the group of bucket `idx`'s first host entry.
    fn in_first_group(&self, idx: usize, tx: TxId) -> bool {
        self.groups
            .get(&idx)
            .and_then(|g| g.front())
            .is_some_and(|m| m.contains(&tx))
    }

    /// Whether `tx`'s host-shared entry of bucket `idx` may take the bucket
    /// by violating the locks ahead of it (controlled lock violation,
    /// update NDP §5.4): it is the first host entry, and every slot ahead
    /// of it is a device job for which `violable` holds.
    pub fn slt_granted_violating(
        &self,
        slt: &SharedLockTable,
        idx: usize,
        tx: TxId,
        violable: impl Fn(DeviceTag) -> bool,
    ) -> Result<bool> {
        if !self.in_first_group(idx, tx) {
            return Ok(false);
        }
        for slot in slt.load_index(idx)?.slots() {
            match slot {
                Slot::Host => return Ok(true),
                Slot::Device(tag) if violable(tag) => {}
                _ => return Ok(false),
            }
        }
        Ok(false)
    }

    /// `tx` leaves bucket `idx` (after holding it, or giving up waiting).
    /// Returns true if another host group now holds the bucket (wake
    /// waiters; hand-overs inside a group are the HLT's to signal).
    pub fn leave(&mut self, slt: &SharedLockTable, idx: usize, tx: TxId) -> Result<bool> {
        let Some(groups) = self.groups.get_mut(&idx) else {
            return Ok(false);
        };
        let Some(gi) = groups.iter().position(|g| g.contains(&tx)) else {
            return Ok(false);
        };
        let group = &mut groups[gi];
        group.retain(|t| *t != tx);
        let mut wake = false;
        if group.is_empty() {
            // `tx` was the owner: it removes the host-shared entry.
            groups.remove(gi);
            self.host_heads.remove(&idx);
            let head = slt.remove_host_entry_index(idx, gi)?;
            wake |= head == Slot::Host;
        }
        Ok(wake)
    }

    /// The host releases a device job's lock on bucket `idx` (at the
    /// job's commit or abort). Returns true if a host group now holds it.
    pub fn release_device(
        &self,
        slt: &SharedLockTable,
        idx: usize,
        tag: DeviceTag,
    ) -> Result<bool> {
        Ok(slt.release_index(idx, Slot::Device(tag))? == Slot::Host)
    }

    /// Re-creates the host's entries in `slt`, a new table that replaced
    /// the one they were in (a device restarted, taking its jobs and
    /// their entries with it): each bucket with host transactions gets
    /// one host-shared entry, their groups merged into one in order.
    pub fn rebuild_on(&mut self, slt: &SharedLockTable) -> Result<()> {
        self.host_heads.clear();
        for (idx, groups) in self.groups.iter_mut() {
            if groups.is_empty() {
                continue;
            }
            let members: VecDeque<TxId> = groups.drain(..).flatten().collect();
            groups.push_back(members);
            let pos = slt.update(*idx, |b| match (b.host_entries(), b.push(Slot::Host)) {
                (0, Some((nb, pos))) => Ok((Some(nb), pos)),
                _ => Err(SltError::Corrupted(format!(
                    "bucket {idx} of a fresh lock table cannot take the host's entry: {b:?}"
                ))),
            })?;
            if pos == 0 {
                self.host_heads.insert(*idx);
            }
        }
        Ok(())
    }

    /// Host transactions queued on bucket `idx`, group by group.
    pub fn groups(&self, idx: usize) -> Vec<Vec<TxId>> {
        // (Buckets whose groups emptied keep an empty entry.)
        self.groups
            .get(&idx)
            .map(|g| g.iter().map(|m| m.iter().copied().collect()).collect())
            .unwrap_or_default()
    }

    /// The owner of each group of bucket `idx` (its newest member).
    pub fn owners(&self, idx: usize) -> Vec<TxId> {
        self.groups
            .get(&idx)
            .map(|g| g.iter().filter_map(|m| m.back().copied()).collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use ndpdb_formats::{TableId, Vid};

    /// The walk-through of update NDP Fig. 10/11: NDP holds t, H1 and H2
    /// share one host entry, NDP2 breaks the chain, H3 starts a new group.
    #[test]
    fn figure_ten_walk_through() {
        let slt = SharedLockTable::in_process(64).unwrap();
        let key = (TableId(1), Vid(42));
        let idx = slt.index(key);
        let (ndp, ndp2) = (DeviceTag::new(10).unwrap(), DeviceTag::new(11).unwrap());
        let mut host = HostSide::new();
        slt.acquire_device(key, ndp, Duration::from_secs(1))
            .unwrap();
        assert_eq!(
            host.request(&slt, idx, TxId(1)).unwrap(),
            Joined::NewEntry(1)
        );
        assert_eq!(
            host.request(&slt, idx, TxId(2)).unwrap(),
            Joined::ExistingGroup
        );
        assert_eq!(host.owners(idx), vec![TxId(2)]);
        assert_eq!(slt.enqueue_index(idx, Slot::Device(ndp2)).unwrap(), Some(2));
        assert_eq!(
            host.request(&slt, idx, TxId(3)).unwrap(),
            Joined::NewEntry(3)
        );
        assert_eq!(
            format!("{:?}", slt.load_index(idx).unwrap()),
            "[D10 H D11 H _ _ _ _]"
        );
        assert!(!host.slt_granted(&slt, idx, TxId(1)).unwrap());

        // NDP commits: the host releases its lock; H1's group holds t
        // (H1 and H2 then take turns in the HLT).
        assert!(host.release_device(&slt, idx, ndp).unwrap());
        assert!(host.slt_granted(&slt, idx, TxId(1)).unwrap());
        assert!(host.slt_granted(&slt, idx, TxId(2)).unwrap());
        assert!(!host.slt_granted(&slt, idx, TxId(3)).unwrap());
        // H1 is not the owner: leaving keeps the entry.
        assert!(!host.leave(&slt, idx, TxId(1)).unwrap());
        assert_eq!(slt.load_index(idx).unwrap().head(), Slot::Host);
        assert!(host.slt_granted(&slt, idx, TxId(2)).unwrap());
        // H2 owns the entry: leaving removes it, NDP2 holds t.
        assert!(!host.leave(&slt, idx, TxId(2)).unwrap());
        assert_eq!(slt.load_index(idx).unwrap().head(), Slot::Device(ndp2));
        assert!(host.release_device(&slt, idx, ndp2).unwrap());
        assert!(host.slt_granted(&slt, idx, TxId(3)).unwrap());
        host.leave(&slt, idx, TxId(3)).unwrap();
        assert!(slt.load_index(idx).unwrap().is_empty());
        assert!(host.groups(idx).is_empty());
    }

    #[test]
    fn a_waiter_that_gives_up_in_the_middle_keeps_the_order() {
        let slt = SharedLockTable::in_process(4).unwrap();
        let idx = 1;
        let d = DeviceTag::new(5).unwrap();
        let mut host = HostSide::new();
        host.request(&slt, idx, TxId(1)).unwrap();
        slt.enqueue_index(idx, Slot::Device(d)).unwrap();
        host.request(&slt, idx, TxId(2)).unwrap();
        // T2 (sole member and owner of the second group) times out.
        host.leave(&slt, idx, TxId(2)).unwrap();
        assert_eq!(
            format!("{:?}", slt.load_index(idx).unwrap()),
            "[H D5 _ _ _ _ _ _]"
        );
        assert!(host.slt_granted(&slt, idx, TxId(1)).unwrap());
    }
}
