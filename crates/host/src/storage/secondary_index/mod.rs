//! Secondary indexes (`CREATE [UNIQUE] INDEX name ON t (a, b, …)`): an
//! ordered map from key values to the VIDs of tuples that have, or had,
//! that key, on the host.
//!
//! ```text
//!   entries: BTreeSet<(key parts, VID)>      ordered by the key's SQL order
//!            (integer keys packed inline: entries.rs)
//!   write (Transaction::put, not a tombstone) ─► (key of the new row, VID)
//!   lookup: key range ─► VIDs ─► the visible version of each (snapshot)
//!           ─► the whole WHERE re-checked on that version
//! ```
//!
//! An entry names a tuple (VID), not a version, and entries are only
//! added: a version written with a new key adds one, a delete or rollback
//! removes none. So every version any snapshot can see is reachable from
//! its key, and a lookup re-checks the key on the version it reads — a
//! stale entry costs a read, never a wrong row. An UPDATE that keeps the
//! key adds nothing (the entry exists). (The primary key's ordered index,
//! `pk_index/order.rs`, also loses entries: key-order reads drop those of
//! tuples dead to every snapshot, `transaction/key_order.rs`.)
//!
//! The index lives in memory: `CREATE INDEX` builds it while no
//! transaction runs (as `ALTER TABLE … ADD PRIMARY KEY` does), and every
//! open rebuilds it from the tuples' latest versions after recovery (no
//! snapshot older than the open exists). Versions only the device writes
//! are those of update NDP: an UPDATE that changes an indexed column is
//! placed on the host (`sql/src/placement/dml.rs`), a DELETE needs no
//! entry.
//!
//! UNIQUE: a write of a key first takes a lock on the key (a lock-table
//! key outside the VID space, [`key_lock`]); then every other tuple the
//! key names is locked too (waiting out its writer, as PostgreSQL waits
//! for a conflicting inserter) and checked: a live committed version with
//! the key is a 23505. NULLs never conflict.

mod build;
mod dead_runs;
mod entries;

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::ops::Bound;

use parking_lot::{Mutex, RwLock};

use ndpdb_formats::{TableId, TxId, Value, Vid};

use crate::catalog::IndexMeta;
use crate::mvcc::locks::LockKey;
pub use dead_runs::DeadRun;
use dead_runs::DeadRuns;
use entries::{Entries, Stored};

/// One part of a key, or a bound above every value.
#[derive(Clone, Debug)]
pub enum Part {
    V(Value),
    High,
}

impl Part {
    fn rank(&self) -> u8 {
        match self {
            Part::V(_) => 0,
            Part::High => 1,
        }
    }
}

impl PartialEq for Part {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Part {}

impl PartialOrd for Part {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Part {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            // NULLs sort after every value (as PostgreSQL's default).
            (Part::V(a), Part::V(b)) => a.sort_cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

/// One side of a key range: the equality prefix and, for the next key
/// column, a bound (`None`: unbounded on that side).
#[derive(Clone, Debug)]
pub struct KeyRange {
    pub prefix: Vec<Value>,
    pub lower: Option<(Value, bool)>,
    pub upper: Option<(Value, bool)>,
}

/// An entry: a key and the tuple with it.
pub type Entry = (Vec<Part>, Vid);

/// Most entries one batch of a walk passes over (the lock is held
/// meanwhile).
const MAX_PASSED: usize = 1 << 16;

/// What a key-order read passes over without reading
/// (`transaction/key_order.rs`).
pub trait PassDead {
    /// The deleter of `vid`'s tombstone when the entry may be passed
    /// over unread.
    fn pass(&mut self, vid: Vid) -> Option<TxId>;
    /// Whether no transaction holds `vid`'s lock; asked before
    /// [`Self::pass`] of an entry that may join a run.
    fn unlocked(&mut self, vid: Vid) -> bool;
    /// Whether the whole of `run` may be passed over unread.
    fn may_jump(&mut self, run: &DeadRun) -> bool;
}

/// A walk that passes nothing over.
struct PassNothing;

impl PassDead for PassNothing {
    fn pass(&mut self, _: Vid) -> Option<TxId> {
        None
    }

    fn unlocked(&mut self, _: Vid) -> bool {
        false
    }

    fn may_jump(&mut self, _: &DeadRun) -> bool {
        false
    }
}

/// One batch of a walk in key order ([`SecondaryIndex::walk_in_order`]).
pub struct WalkBatch {
    /// The entries looked at and not passed over, in walk order.
    pub kept: Vec<Entry>,
    /// The last entry looked at: the next batch starts after it.
    pub last: Option<Entry>,
    /// Fewer entries than asked for were left: the range ends here.
    pub ended: bool,
    /// The entries passed over before the first one kept (and the first
    /// locked one), with their deleters, and the first and last of them.
    lead: Vec<(Vid, TxId)>,
    lead_ends: Option<(Entry, Entry)>,
}

impl WalkBatch {
    fn ended() -> WalkBatch {
        WalkBatch {
            kept: Vec::new(),
            last: None,
            ended: true,
            lead: Vec::new(),
            lead_ends: None,
        }
    }

    /// The first `max` entries of `found` not passed over (and those
    /// passed over among them, at most [`MAX_PASSED`]); the lead only
    /// when `lead`.
    fn take<'a, T: Stored + 'a>(
        found: impl Iterator<Item = &'a T>,
        max: usize,
        pass: &mut impl PassDead,
        mut lead_open: bool,
    ) -> WalkBatch {
        let (mut kept, mut last, mut passed) = (Vec::new(), None, 0);
        let (mut lead, mut lead_ends) = (Vec::new(), None::<(&T, &T)>);
        let mut ended = true;
        for found in found {
            if kept.len() >= max || passed >= MAX_PASSED {
                ended = false;
                break;
            }
            let vid = found.vid();
            // The lock before the head (`dead_runs.rs`).
            lead_open = lead_open && kept.is_empty() && pass.unlocked(vid);
            match pass.pass(vid) {
                Some(deleter) => {
                    passed += 1;
                    if lead_open {
                        lead.push((vid, deleter));
                        lead_ends = Some((lead_ends.map_or(found, |(f, _)| f), found));
                    }
                }
                None => kept.push(found.entry()),
            }
            last = Some(found);
        }
        WalkBatch {
            kept,
            last: last.map(Stored::entry),
            ended,
            lead,
            lead_ends: lead_ends.map(|(f, l)| (f.entry(), l.entry())),
        }
    }
}

/// A secondary index of one table.
pub struct SecondaryIndex {
    pub meta: IndexMeta,
    entries: RwLock<Entries>,
    /// Taken only under `entries`' lock (`dead_runs.rs`).
    dead_runs: Mutex<DeadRuns>,
}

impl SecondaryIndex {
    pub fn new(meta: IndexMeta) -> Self {
        SecondaryIndex {
            meta,
            entries: RwLock::new(Entries::default()),
            dead_runs: Mutex::default(),
        }
    }

    /// The key of `row`.
    pub fn key_of(&self, row: &[Value]) -> Vec<Value> {
        self.meta
            .columns
            .iter()
            .map(|&c| row.get(c).cloned().unwrap_or(Value::Null))
            .collect()
    }

    fn parts(key: Vec<Value>) -> Vec<Part> {
        key.into_iter().map(Part::V).collect()
    }

    /// Records that tuple `vid` has a version with `row`'s key.
    pub fn add(&self, row: &[Value], vid: Vid) {
        let entry = (Self::parts(self.key_of(row)), vid);
        if !self.entries.read().contains(&entry) {
            self.insert(entry);
        }
    }

    /// Records that tuple `vid` has key `key` (the index's key columns).
    /// Its callers add keys the primary key just gained, almost always
    /// new: one search under the write lock, not a look under the read
    /// lock first (an entry already there stays as it is).
    pub fn add_key(&self, key: Vec<Value>, vid: Vid) {
        self.insert((Self::parts(key), vid));
    }

    /// Inserts `entry`, ending the run of dead entries it falls inside.
    fn insert(&self, entry: Entry) {
        let mut entries = self.entries.write();
        let mut runs = self.dead_runs.lock();
        if !runs.is_empty() {
            runs.added(&entry);
        }
        entries.insert(entry);
    }

    /// Records many keys at once.
    pub fn extend_keys(&self, keys: Vec<(Vec<Value>, Vid)>) {
        let new = keys.into_iter().map(|(k, v)| (Self::parts(k), v));
        let mut entries = self.entries.write();
        self.dead_runs.lock().clear();
        entries.extend(new.collect());
    }

    /// Entries in the index (all keys, stale ones included).
    pub fn len(&self) -> usize {
        self.entries.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.read().len() == 0
    }

    /// The tuples whose entries fall in `range`, each once; `None` when
    /// more than `limit` entries do (a scan is cheaper then).
    pub fn lookup(&self, range: &KeyRange, limit: usize) -> Option<Vec<Vid>> {
        let Some(bounds) = Self::bounds(range) else {
            return Some(Vec::new());
        };
        let mut vids = Vec::new();
        let mut over = false;
        self.entries.read().each_vid(bounds.0, bounds.1, |vid| {
            over = vids.len() >= limit;
            if !over {
                vids.push(vid);
            }
            !over
        });
        if over {
            return None;
        }
        vids.sort_unstable();
        vids.dedup();
        Some(vids)
    }

    /// Up to `max` entries of `range` in key order (backwards when
    /// `descending`), those after `after` when given (an entry of the
    /// range a walk passed last). A walk in batches holds the entries'
    /// lock only while it copies a batch.
    pub fn entries_in_order(
        &self,
        range: &KeyRange,
        descending: bool,
        after: Option<&Entry>,
        max: usize,
    ) -> Vec<Entry> {
        self.walk_in_order(range, descending, after, max, &mut PassNothing)
            .kept
    }

    /// The next `max` entries of a walk in key order, as
    /// [`Self::entries_in_order`] takes them, except that entries whose
    /// VID `pass` picks are passed over under the lock, not copied: a
    /// key-order read passes runs of deleted tuples this way
    /// (`transaction/key_order.rs`).
    pub fn walk_in_order(
        &self,
        range: &KeyRange,
        descending: bool,
        after: Option<&Entry>,
        max: usize,
        pass: &mut impl PassDead,
    ) -> WalkBatch {
        let Some((mut lower, mut upper)) = Self::bounds(range) else {
            return WalkBatch::ended();
        };
        match (after, descending) {
            (Some(a), false) => lower = Bound::Excluded(a.clone()),
            (Some(a), true) => upper = Bound::Excluded(a.clone()),
            (None, _) => {}
        }
        if !bounds_ordered(&lower, &upper) {
            return WalkBatch::ended();
        }
        let entries = self.entries.read();
        // From the range's start, in key order: a run of dead entries
        // starting there may be jumped over, and one passed remembered.
        let from_start = after.is_none() && !descending;
        let mut jumped = None;
        let runs = self.dead_runs.lock();
        if from_start && !runs.is_empty() {
            let first = entries
                .walk(
                    lower.clone(),
                    upper.clone(),
                    false,
                    1,
                    &mut PassNothing,
                    false,
                )
                .kept
                .pop();
            if let Some((first, run)) = first.and_then(|f| runs.get(&f).map(|r| (f, r))) {
                if entries::within(&run.last, &lower, &upper) && pass.may_jump(run) {
                    lower = Bound::Excluded(run.last.clone());
                    jumped = Some(first);
                }
            }
        }
        drop(runs);
        let mut batch = entries.walk(lower, upper, descending, max, pass, from_start);
        if from_start {
            if let Some((first, last)) = batch.lead_ends.take() {
                let mut runs = self.dead_runs.lock();
                match &jumped {
                    // Passed right after the run jumped over: it grows.
                    Some(start) if batch.lead.len() < MAX_PASSED => {
                        runs.grow(start, last, &batch.lead)
                    }
                    Some(_) => {}
                    None => runs.remember(first, last, &batch.lead),
                }
            }
        }
        batch
    }

    /// Removes `entry`; whether it was there.
    pub(crate) fn remove(&self, entry: &Entry) -> bool {
        let mut entries = self.entries.write();
        let mut runs = self.dead_runs.lock();
        if !runs.is_empty() {
            runs.removed(entry);
        }
        entries.remove(entry)
    }

    /// The BTreeSet bounds of `range`; `None` when it is empty.
    fn bounds(range: &KeyRange) -> Option<(Bound<Entry>, Bound<Entry>)> {
        let mut lo: Vec<Part> = range.prefix.iter().cloned().map(Part::V).collect();
        let mut hi = lo.clone();
        match &range.lower {
            None => {}
            Some((v, true)) => lo.push(Part::V(v.clone())),
            Some((v, false)) => lo.extend([Part::V(v.clone()), Part::High]),
        }
        let upper = match &range.upper {
            None => {
                hi.push(Part::High);
                Bound::Included((hi, Vid(u64::MAX)))
            }
            Some((v, true)) => {
                hi.extend([Part::V(v.clone()), Part::High]);
                Bound::Included((hi, Vid(u64::MAX)))
            }
            Some((v, false)) => {
                hi.push(Part::V(v.clone()));
                Bound::Excluded((hi, Vid(0)))
            }
        };
        let lower = Bound::Included((lo, Vid(0)));
        bounds_ordered(&lower, &upper).then_some((lower, upper))
    }

    /// The other tuples `key` names (for a UNIQUE check).
    pub fn holders(&self, key: &[Value], except: Vid) -> Vec<Vid> {
        let range = KeyRange {
            prefix: key.to_vec(),
            lower: None,
            upper: None,
        };
        let mut v = self.lookup(&range, usize::MAX).unwrap_or_default();
        v.retain(|&x| x != except);
        v
    }
}

/// Whether a BTreeSet range from `lower` to `upper` is well formed.
fn bounds_ordered(lower: &Bound<Entry>, upper: &Bound<Entry>) -> bool {
    match (lower, upper) {
        (Bound::Included(l), Bound::Included(u)) => l <= u,
        (Bound::Included(l), Bound::Excluded(u))
        | (Bound::Excluded(l), Bound::Excluded(u))
        | (Bound::Excluded(l), Bound::Included(u)) => l < u,
        _ => true,
    }
}

/// The lock-table key of a UNIQUE index's key value: a VID with the top
/// bit set (tuples' VIDs never reach it), from a hash of the index and
/// the key. Two keys that hash alike only wait for each other.
pub fn key_lock(table: TableId, index: &str, key: &[Value]) -> LockKey {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    index.hash(&mut h);
    let mut w = ndpdb_formats::codec::Writer::new();
    for v in key {
        v.key_bytes(&mut w);
    }
    w.as_slice().hash(&mut h);
    (table, Vid(h.finish() | (1 << 63)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index() -> SecondaryIndex {
        let ix = SecondaryIndex::new(IndexMeta {
            name: "i".into(),
            columns: vec![0, 1],
            unique: false,
            constraint: false,
        });
        let rows = [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (3, 5)];
        for (n, (a, b)) in rows.iter().enumerate() {
            ix.add(&[Value::Int(*a), Value::Int(*b)], Vid(n as u64));
        }
        ix.add(&[Value::Int(1), Value::Null], Vid(10));
        ix
    }

    fn vids(
        ix: &SecondaryIndex,
        prefix: &[i32],
        lower: Option<(i32, bool)>,
        upper: Option<(i32, bool)>,
    ) -> Vec<u64> {
        let r = KeyRange {
            prefix: prefix.iter().map(|&v| Value::Int(v)).collect(),
            lower: lower.map(|(v, inc)| (Value::Int(v), inc)),
            upper: upper.map(|(v, inc)| (Value::Int(v), inc)),
        };
        ix.lookup(&r, usize::MAX)
            .unwrap()
            .into_iter()
            .map(|v| v.0)
            .collect()
    }

    #[test]
    fn ranges_over_a_prefix_and_the_next_column_match_a_model() {
        let ix = index();
        assert_eq!(vids(&ix, &[1], None, None), vec![0, 1, 2, 10]);
        assert_eq!(vids(&ix, &[1, 2], None, None), vec![1]);
        assert_eq!(vids(&ix, &[1], Some((2, true)), None), vec![1, 2, 10]);
        assert_eq!(vids(&ix, &[1], Some((2, false)), Some((3, true))), vec![2]);
        assert_eq!(vids(&ix, &[1], None, Some((2, false))), vec![0]);
        assert_eq!(vids(&ix, &[], Some((2, true)), None), vec![3, 4, 5]);
        assert_eq!(
            vids(&ix, &[], Some((1, false)), Some((2, true))),
            vec![3, 4]
        );
        assert_eq!(vids(&ix, &[], Some((3, false)), None), Vec::<u64>::new());
        assert_eq!(
            vids(&ix, &[], Some((3, true)), Some((1, true))),
            Vec::<u64>::new()
        );
        assert_eq!(vids(&ix, &[4], None, None), Vec::<u64>::new());
    }

    /// The VIDs of `range` in order, walked two entries at a time.
    fn in_order(ix: &SecondaryIndex, range: &KeyRange, descending: bool) -> Vec<Vid> {
        let mut out = Vec::new();
        let mut after: Option<Entry> = None;
        loop {
            let batch = ix.entries_in_order(range, descending, after.as_ref(), 2);
            out.extend(batch.iter().map(|(_, v)| *v));
            match batch.len() {
                2 => after = batch.into_iter().last(),
                _ => return out,
            }
        }
    }

    #[test]
    fn ordered_lookups_follow_the_key_both_ways() {
        let ix = index();
        let r = |lower: Option<i32>| KeyRange {
            prefix: vec![Value::Int(1)],
            lower: lower.map(|v| (Value::Int(v), true)),
            upper: None,
        };
        let ids = |v: Vec<Vid>| v.into_iter().map(|v| v.0).collect::<Vec<_>>();
        // (1,1)=0, (1,2)=1, (1,3)=2, (1,NULL)=10: NULL sorts last.
        assert_eq!(ids(in_order(&ix, &r(None), false)), vec![0, 1, 2, 10]);
        assert_eq!(ids(in_order(&ix, &r(None), true)), vec![10, 2, 1, 0]);
        assert_eq!(ids(in_order(&ix, &r(Some(2)), false)), vec![1, 2, 10]);
        let empty = KeyRange {
            prefix: vec![],
            lower: Some((Value::Int(3), false)),
            upper: Some((Value::Int(1), true)),
        };
        assert!(in_order(&ix, &empty, false).is_empty());
    }

    /// A walk that passes entries over still moves past them: each
    /// batch looks at `max` entries, keeps the others in order, and the
    /// next batch starts after the last one looked at, passed or kept.
    #[test]
    fn a_walk_passes_over_entries_and_resumes_after_them() {
        let ix = index();
        let r = KeyRange {
            prefix: vec![Value::Int(1)],
            lower: None,
            upper: None,
        };
        for descending in [false, true] {
            let passed = |v: Vid| v.0 == 0 || v.0 == 1;
            let (mut kept, mut looked_at, mut after) = (Vec::new(), Vec::new(), None::<Entry>);
            loop {
                let mut pass = PassIf(|v: Vid| {
                    looked_at.push(v.0);
                    passed(v)
                });
                let b = ix.walk_in_order(&r, descending, after.as_ref(), 2, &mut pass);
                assert!(b.kept.iter().all(|(_, v)| !passed(*v)));
                kept.extend(b.kept.iter().map(|(_, v)| v.0));
                if b.ended {
                    break;
                }
                after = b.last;
            }
            let (want_kept, want_looked) = match descending {
                false => (vec![2, 10], vec![0, 1, 2, 10]),
                true => (vec![10, 2], vec![10, 2, 1, 0]),
            };
            assert_eq!(kept, want_kept, "descending {descending}");
            assert_eq!(looked_at, want_looked, "descending {descending}");
        }
        // Passed entries do not count towards a batch's size: one batch
        // passes them all and reaches the range's end.
        let b = ix.walk_in_order(&r, false, None, 2, &mut PassIf(|_| true));
        assert!(b.kept.is_empty() && b.ended);
        assert_eq!(b.last.map(|e| e.1), Some(Vid(10)));
    }

    /// Passes over the VIDs `f` picks (deleted by TxId(VID)); never
    /// jumps.
    struct PassIf<F: FnMut(Vid) -> bool>(F);

    impl<F: FnMut(Vid) -> bool> PassDead for PassIf<F> {
        fn pass(&mut self, vid: Vid) -> Option<TxId> {
            (self.0)(vid).then_some(TxId(vid.0))
        }

        fn unlocked(&mut self, _: Vid) -> bool {
            true
        }

        fn may_jump(&mut self, _: &DeadRun) -> bool {
            false
        }
    }

    /// A reader that passes VIDs below `dead`, counts what it was asked
    /// and jumps runs when `jump`.
    struct Reader {
        dead: u64,
        jump: bool,
        asked: usize,
        jumped: usize,
        locked: Option<Vid>,
    }

    impl PassDead for Reader {
        fn pass(&mut self, vid: Vid) -> Option<TxId> {
            self.asked += 1;
            (vid.0 < self.dead).then_some(TxId(vid.0))
        }

        fn unlocked(&mut self, vid: Vid) -> bool {
            self.locked != Some(vid)
        }

        fn may_jump(&mut self, _: &DeadRun) -> bool {
            self.jumped += self.jump as usize;
            self.jump
        }
    }

    /// A walk from a range's start that passes a long run of dead
    /// entries remembers it; the next reader that may jumps over it (and
    /// grows it by what it passes next); an entry added inside the run
    /// ends it, and so does the removal of its first entry.
    #[test]
    fn a_run_of_dead_entries_is_jumped_over_until_an_entry_is_added_inside_it() {
        let ix = SecondaryIndex::new(IndexMeta {
            name: "i".into(),
            columns: vec![0, 1],
            unique: false,
            constraint: false,
        });
        for k in 0..100u64 {
            ix.add_key(vec![Value::Int(1), Value::Int(k as i32)], Vid(k));
        }
        ix.add_key(vec![Value::Int(2), Value::Int(0)], Vid(500));
        let r = KeyRange {
            prefix: vec![Value::Int(1)],
            lower: None,
            upper: None,
        };
        let walk_locked = |dead: u64, jump: bool, locked: Option<Vid>| {
            let mut reader = Reader {
                dead,
                jump,
                asked: 0,
                jumped: 0,
                locked,
            };
            let b = ix.walk_in_order(&r, false, None, 1, &mut reader);
            (b.kept[0].1, reader.asked, reader.jumped)
        };
        let walk = |dead: u64, jump: bool| walk_locked(dead, jump, None);
        // A locked tuple ends the run before it: too short to keep.
        assert_eq!(walk_locked(50, true, Some(Vid(10))), (Vid(50), 51, 0));
        assert_eq!(walk(50, true), (Vid(50), 51, 0));
        // That walk passed 50 entries, kept the 51st and remembered them.
        // A reader that may jump is asked about the 51st only.
        assert_eq!(walk(50, true), (Vid(50), 1, 1));
        // One that may not reads the run again.
        assert_eq!(walk(50, false), (Vid(50), 51, 0));
        // Ten more deleted: the jumping reader passes them, and the run
        // grows by them.
        assert_eq!(walk(60, true), (Vid(60), 11, 1));
        assert_eq!(walk(60, true), (Vid(60), 1, 1));
        // A key inserted again inside the run ends it.
        ix.add_key(vec![Value::Int(1), Value::Int(25)], Vid(25));
        assert_eq!(walk(60, true), (Vid(60), 61, 0));
        assert_eq!(walk(60, true), (Vid(60), 1, 1));
        // Its first entry dropped: no run starts at the range's start.
        assert!(ix.remove(&(vec![Part::V(Value::Int(1)), Part::V(Value::Int(0))], Vid(0))));
        assert_eq!(walk(60, true), (Vid(60), 60, 0));
        // A run never reaches past the range's end.
        let r2 = KeyRange {
            prefix: vec![Value::Int(2)],
            lower: None,
            upper: None,
        };
        let mut all = Reader {
            dead: 1000,
            jump: true,
            asked: 0,
            jumped: 0,
            locked: None,
        };
        assert!(ix
            .walk_in_order(&r2, false, None, 1, &mut all)
            .kept
            .is_empty());
        assert_eq!(all.asked, 1);
    }

    /// Keys built in bulk come back in the entries' own order: integer
    /// keys (packed, negative values, BIGINT beyond INT, NULL last,
    /// duplicate keys by VID) and keys with text (as parts).
    #[test]
    fn keys_built_in_bulk_come_back_in_key_order() {
        let all = KeyRange {
            prefix: vec![],
            lower: None,
            upper: None,
        };
        let int_key = |i: u64| {
            let a = (i as i64 * 37 % 23) - 11;
            let b = (i as i64 * 7919 % 101 - 50) * 10_000_000_000;
            match i % 17 {
                0 => vec![Value::Int(a as i32), Value::Null],
                _ => vec![Value::Int(a as i32), Value::BigInt(b)],
            }
        };
        let text_key = |i: u64| vec![Value::Text(format!("{}", i * 7919 % 101)), Value::Int(1)];
        for key in [&int_key as &dyn Fn(u64) -> Vec<Value>, &text_key] {
            let ix = SecondaryIndex::new(IndexMeta {
                name: "i".into(),
                columns: vec![0, 1],
                unique: false,
                constraint: false,
            });
            let keys: Vec<(Vec<Value>, Vid)> =
                (0..500u64).map(|i| (key(i), Vid(i * 7 % 13))).collect();
            let mut want: Vec<Entry> = keys
                .iter()
                .map(|(k, v)| (SecondaryIndex::parts(k.clone()), *v))
                .collect();
            want.sort();
            want.dedup();
            ix.extend_keys(keys);
            let got = ix.entries_in_order(&all, false, None, usize::MAX);
            assert_eq!(got, want);
        }
    }

    #[test]
    fn a_lookup_past_its_limit_gives_up() {
        let ix = index();
        let all = KeyRange {
            prefix: vec![],
            lower: None,
            upper: None,
        };
        assert!(ix.lookup(&all, 3).is_none());
        assert_eq!(ix.lookup(&all, 100).unwrap().len(), 7);
        assert_eq!(ix.holders(&[Value::Int(2), Value::Int(1)], Vid(3)), vec![]);
        assert_eq!(
            ix.holders(&[Value::Int(2), Value::Int(1)], Vid(9)),
            vec![Vid(3)]
        );
    }
}
