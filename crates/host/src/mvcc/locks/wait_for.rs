//! The wait-for graph across both lock tables (update NDP §5.3): host
//! transactions waiting in the HLT or behind an SLT entry, and device
//! jobs waiting in SLT buckets, stand for the host transactions that own
//! them.
//!
//! ```text
//!  bucket(a)  [ H{T1} │ D7 ]        D7 (a job of T2) waits behind T1's entry
//!  bucket(b)  [ D7 │ H{T1} ]        T1 waits behind D7
//!                                   T1 → T2 → T1: a deadlock
//! ```
//!
//! Edges: a waiter waits for everyone ahead of it — in the HLT the holders
//! and the waiters queued before it; in an SLT bucket every entry ahead
//! of its own (a device tag stands for its owner, a host-shared entry for
//! every member of its group) and the members ahead of it in its group.
//! Device waits are found by reading every SLT bucket, so this full search
//! runs only once a wait has lasted `deadlock_timeout` (as PostgreSQL
//! runs its detector); the HLT-only search at enqueue stays cheap.
//!
//! PEs change buckets while the search reads them. An edge into a waiter
//! cannot vanish while that waiter waits, so a cycle through the searching
//! transaction is real; a second search confirms it against edges that
//! ended between two bucket reads.

use std::collections::HashSet;

use rustc_hash::FxHashMap;

use ndpdb_formats::TxId;
use ndpdb_slt::{SharedLockTable, Slot};

use super::Inner;
use crate::error::Result;

/// The edges of one search.
pub(super) struct WaitFor<'a> {
    g: &'a Inner,
    slt: Option<&'a SharedLockTable>,
    /// Per owner of a waiting device job: whom its jobs wait for.
    device: FxHashMap<TxId, Vec<TxId>>,
}

impl<'a> WaitFor<'a> {
    /// Reads the graph as it is now (every SLT bucket when device jobs
    /// of known owners exist).
    pub(super) fn read(g: &'a Inner, slt: Option<&'a SharedLockTable>) -> Result<WaitFor<'a>> {
        let mut device: FxHashMap<TxId, Vec<TxId>> = FxHashMap::default();
        if let Some(slt) = slt.filter(|_| !g.device_owners.is_empty()) {
            for (idx, bucket) in slt.occupied().map_err(super::slt_error)? {
                if bucket.len() < 2 {
                    continue;
                }
                let slots = bucket.slots();
                for (pos, slot) in slots.iter().enumerate().take(bucket.len()).skip(1) {
                    let Slot::Device(tag) = slot else { continue };
                    let Some(&owner) = g.device_owners.get(&tag.raw()) else {
                        continue;
                    };
                    let ahead = ahead_in_bucket(g, idx, &slots[..pos]);
                    device.entry(owner).or_default().extend(ahead);
                }
            }
        }
        Ok(WaitFor { g, slt, device })
    }

    /// Whom `t` waits for.
    fn edges(&self, t: TxId) -> Result<Vec<TxId>> {
        let mut out = self.device.get(&t).cloned().unwrap_or_default();
        let Some(key) = self.g.blocked.get(&t) else {
            return Ok(out);
        };
        if let Some(q) = self.g.queues.get(key) {
            if q.waiters.iter().any(|(w, _)| *w == t) {
                out.extend(q.ahead_of(t));
            }
        }
        if let Some(slt) = self.slt {
            let idx = slt.index(*key);
            let groups = self.g.host_side.groups(idx);
            if let Some(gi) = groups.iter().position(|m| m.contains(&t)) {
                let bucket = slt.load_index(idx).map_err(super::slt_error)?;
                let slots = bucket.slots();
                let own = (0..bucket.len())
                    .filter(|&p| slots[p] == Slot::Host)
                    .nth(gi);
                if let Some(pos) = own {
                    out.extend(ahead_in_bucket(self.g, idx, &slots[..pos]));
                }
                out.extend(groups[gi].iter().copied().take_while(|m| *m != t));
            }
        }
        Ok(out)
    }

    /// A cycle through `start`, if it waits in one: its members, `start`
    /// first, each waiting for the next.
    pub(super) fn cycle_through(&self, start: TxId) -> Result<Option<Vec<TxId>>> {
        let mut stack = vec![start];
        let mut parent: FxHashMap<TxId, TxId> = FxHashMap::default();
        let mut seen = HashSet::new();
        while let Some(t) = stack.pop() {
            for next in self.edges(t)? {
                if next == start {
                    let mut path = vec![t];
                    while let Some(p) = parent.get(path.last().unwrap_or(&start)) {
                        path.push(*p);
                    }
                    path.reverse();
                    if path.first() != Some(&start) {
                        path.insert(0, start);
                    }
                    return Ok(Some(path));
                }
                if seen.insert(next) {
                    parent.insert(next, t);
                    stack.push(next);
                }
            }
        }
        Ok(None)
    }
}

/// The host transactions standing for `ahead`, the first slots of bucket
/// `idx`: a device tag's owner, every member of a host entry's group.
fn ahead_in_bucket(g: &Inner, idx: usize, ahead: &[Slot]) -> Vec<TxId> {
    let mut out = Vec::new();
    let mut groups = None;
    let mut host_entries = 0;
    for slot in ahead {
        match slot {
            Slot::Device(tag) => out.extend(g.device_owners.get(&tag.raw()).copied()),
            Slot::Host => {
                let groups = groups.get_or_insert_with(|| g.host_side.groups(idx));
                if let Some(members) = groups.get(host_entries) {
                    out.extend(members.iter().copied());
                }
                host_entries += 1;
            }
            Slot::Empty => {}
        }
    }
    out
}
