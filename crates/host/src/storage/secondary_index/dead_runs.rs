//! Runs of dead entries at the start of a key range, remembered so that
//! the next key-order read jumps over the whole run instead of passing
//! its entries one by one.
//!
//! ```text
//!  range (w, d):  [e1 e2 e3 … e260] e261 …        e1 … e260: tombstones
//!                  └──── run ─────┘  first live   a long snapshot keeps
//!  first read: passes e1 … e260 (a note lookup each), remembers the run
//!  next reads: first entry of the range is e1, a run starts there, the
//!              reader sees every deleter and touched none of the tuples
//!              ─► walk from after e260
//!  an entry added inside a run (a key inserted again) ─► the run is gone
//! ```
//!
//! Why: TPC-C's Delivery reads each district's oldest NEW-ORDER and
//! deletes it. While an analytical query's snapshot holds the horizon,
//! the entries delivered meanwhile cannot be dropped, and every Delivery
//! passed all of them: 260 entries a district beside the CH-benCHmark
//! queries, at about half a microsecond each (a note lookup, the
//! reader's own writes, the tuple's head), ten districts a Delivery.
//!
//! A run is trusted only while nothing was added inside it: every
//! write of a tuple whose head is a tombstone is an insert of its key
//! again, which takes the tuple's lock, then puts the key's entry back
//! (`add`, ending the run), then writes, and releases the lock only
//! after its commit made the new head current. A run takes in only
//! tuples whose lock was free *before* their head was found to be the
//! noted tombstone: an insert that held the lock then is caught by the
//! lock, one that took it later cannot put its entry back before the
//! run is remembered (the walk holds the entries' lock), and one done
//! before left a head that is no tombstone. So a run's tuples still
//! have the tombstones the reader that remembered it passed (or no
//! head at all, once GC removed them: dead to everyone as well). The
//! reader still checks what is its own: its snapshot must see every
//! deleter, and it must not have written or locked any of the tuples.
//!
//! Runs never overlap, and are kept under the entries' lock (a walk
//! holds it to read, an add or a removal to write): a run is remembered
//! while the walk that passed it still holds the lock, so no add slips
//! in between.

use std::collections::BTreeMap;

use rustc_hash::FxHashSet;

use ndpdb_formats::{TxId, Vid};

use super::Entry;

/// Fewest entries a run is remembered for.
pub const MIN_RUN: usize = 16;

/// Runs remembered per index at most (one per key range read from its
/// start; TPC-C at 10 warehouses reads 100 districts).
const MAX_RUNS: usize = 4096;

/// Consecutive entries of tuples whose heads are tombstones, from the
/// first entry of a key range.
#[derive(Debug, Clone)]
pub struct DeadRun {
    /// The run's last entry: a jump walks on after it.
    pub last: Entry,
    /// The run's tuples.
    pub vids: FxHashSet<Vid>,
    /// Their deleters, and the oldest and newest of them.
    pub deleters: FxHashSet<TxId>,
    pub oldest: TxId,
    pub newest: TxId,
}

impl DeadRun {
    fn new(last: Entry, passed: &[(Vid, TxId)]) -> DeadRun {
        let mut run = DeadRun {
            last,
            vids: FxHashSet::default(),
            deleters: FxHashSet::default(),
            oldest: passed[0].1,
            newest: passed[0].1,
        };
        run.extend(passed);
        run
    }

    fn extend(&mut self, passed: &[(Vid, TxId)]) {
        for &(vid, deleter) in passed {
            self.vids.insert(vid);
            self.deleters.insert(deleter);
            self.oldest = self.oldest.min(deleter);
            self.newest = self.newest.max(deleter);
        }
    }
}

/// The runs of one index, by their first entry.
#[derive(Debug, Default)]
pub(super) struct DeadRuns {
    runs: BTreeMap<Entry, DeadRun>,
}

impl DeadRuns {
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    pub fn get(&self, first: &Entry) -> Option<&DeadRun> {
        self.runs.get(first)
    }

    /// An entry was added: the run it falls inside is gone.
    pub fn added(&mut self, entry: &Entry) {
        let inside = self
            .runs
            .range(..=entry)
            .next_back()
            .filter(|(_, run)| *entry <= run.last)
            .map(|(first, _)| first.clone());
        if let Some(first) = inside {
            self.runs.remove(&first);
        }
    }

    /// An entry was removed: a run that starts there is no longer found
    /// from its range's start (the entries after it are read again).
    pub fn removed(&mut self, entry: &Entry) {
        self.runs.remove(entry);
    }

    pub fn clear(&mut self) {
        self.runs.clear();
    }

    /// A walk from `first` passed `passed` up to `last`: remembered as a
    /// run when long enough (replacing runs it overlaps).
    pub fn remember(&mut self, first: Entry, last: Entry, passed: &[(Vid, TxId)]) {
        if passed.len() < MIN_RUN || first > last {
            return;
        }
        let overlapped: Vec<Entry> = self
            .runs
            .range(..=&last)
            .rev()
            .take_while(|(start, run)| run.last >= first || **start >= first)
            .map(|(start, _)| start.clone())
            .collect();
        for start in overlapped {
            self.runs.remove(&start);
        }
        if self.runs.len() >= MAX_RUNS {
            self.runs.pop_first();
        }
        self.runs.insert(first, DeadRun::new(last, passed));
    }

    /// A walk jumped over the run at `first` and passed `passed` right
    /// after it, up to `last`: the run grows by them.
    pub fn grow(&mut self, first: &Entry, last: Entry, passed: &[(Vid, TxId)]) {
        if passed.is_empty() {
            return;
        }
        // Runs do not overlap: one starting inside the growth ends.
        let next: Vec<Entry> = match self.runs.get(first) {
            Some(run) => self
                .runs
                .range((
                    std::ops::Bound::Excluded(&run.last),
                    std::ops::Bound::Included(&last),
                ))
                .map(|(start, _)| start.clone())
                .collect(),
            None => return,
        };
        for start in next {
            self.runs.remove(&start);
        }
        if let Some(run) = self.runs.get_mut(first) {
            run.extend(passed);
            run.last = last;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Part;
    use super::*;
    use ndpdb_formats::Value;

    fn e(k: i32) -> Entry {
        (vec![Part::V(Value::Int(k))], Vid(k as u64))
    }

    fn passed(from: i32, to: i32) -> Vec<(Vid, TxId)> {
        (from..=to)
            .map(|k| (Vid(k as u64), TxId(100 + k as u64)))
            .collect()
    }

    #[test]
    fn a_run_is_remembered_grown_and_ended_by_an_add_inside_it() {
        let mut runs = DeadRuns::default();
        runs.remember(e(1), e(5), &passed(1, 5));
        assert!(runs.is_empty(), "shorter than MIN_RUN");
        runs.remember(e(1), e(20), &passed(1, 20));
        let run = runs.get(&e(1)).unwrap();
        assert_eq!(run.last, e(20));
        assert_eq!((run.oldest, run.newest), (TxId(101), TxId(120)));
        runs.grow(&e(1), e(22), &passed(21, 22));
        let run = runs.get(&e(1)).unwrap();
        assert_eq!(run.last, e(22));
        assert!(run.vids.contains(&Vid(22)) && run.deleters.contains(&TxId(122)));
        // An add after the run leaves it; one inside ends it.
        runs.added(&e(23));
        assert!(runs.get(&e(1)).is_some());
        runs.added(&e(7));
        assert!(runs.is_empty());
    }

    #[test]
    fn runs_never_overlap_and_a_removed_start_forgets_its_run() {
        let mut runs = DeadRuns::default();
        runs.remember(e(1), e(20), &passed(1, 20));
        runs.remember(e(30), e(50), &passed(30, 50));
        // A run over part of both replaces both.
        runs.remember(e(10), e(40), &passed(10, 40));
        assert!(runs.get(&e(1)).is_none() && runs.get(&e(30)).is_none());
        assert_eq!(runs.get(&e(10)).unwrap().last, e(40));
        // Growing into a run after it ends that one.
        runs.remember(e(60), e(80), &passed(60, 80));
        runs.grow(&e(10), e(65), &passed(41, 65));
        assert!(runs.get(&e(60)).is_none());
        assert_eq!(runs.get(&e(10)).unwrap().last, e(65));
        runs.removed(&e(10));
        assert!(runs.is_empty());
    }
}
