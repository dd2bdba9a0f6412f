//! How a secondary index holds its entries: keys of up to four INT /
//! BIGINT parts (NULLs allowed) packed inline in the set's nodes, any
//! other key as its parts on the heap.
//!
//! ```text
//!  packed (every key so far fits)        parts (from the first key that does not)
//!  ┌────────────────────────────────┐    ┌──────────────────────────────────┐
//!  │ values [i64; 4] tags [u8; 4]   │    │ Vec<Part> ──► heap: Value, Value │
//!  │ + VID, 48 bytes, in the node   │    │ + VID                            │
//!  └────────────────────────────────┘    └──────────────────────────────────┘
//!  tag per part: 0 absent < 1 value < 2 NULL < 3 High (a bound above all)
//! ```
//!
//! Both forms order entries alike: part by part in the key's SQL order
//! (`Value::sort_cmp`, NULL after every value, `Part::High` above all),
//! a shorter key before a longer one it begins, then by VID. A packed
//! compare reads no memory outside the node, where a compare of parts
//! follows a pointer to the parts first. An entry takes 48 bytes where
//! four parts take 224 (32 in the node, 192 on the heap): ORDER-LINE's
//! primary key in key order (3 M keys at 10 TPC-C warehouses, growing
//! by thousands a second) is a set of about 150 MB instead of 700 MB,
//! and an insert walks it without a cache miss per key compared.
//!
//! An index starts packed and turns to parts, once, at the first entry
//! that does not pack (a text key, a fifth part, a numeric value). A
//! bound that does not pack (a range on an INT column with a numeric
//! bound) is looked up by comparing parts against every entry: slow, but
//! right.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::ops::Bound;

use ndpdb_formats::{Value, Vid};

use super::{Entry, Part, PassDead, WalkBatch};

/// Most key parts a packed key holds.
const PACKED_PARTS: usize = 4;

const ABSENT: u8 = 0;
const VALUE: u8 = 1;
const NULL: u8 = 2;
const HIGH: u8 = 3;

/// A key of at most [`PACKED_PARTS`] INT / BIGINT / NULL parts (or
/// `Part::High` in a bound), inline.
#[derive(Clone, Copy, Debug)]
pub(super) struct IntKey {
    values: [i64; PACKED_PARTS],
    tags: [u8; PACKED_PARTS],
    /// Bit i: part i was a BIGINT (not part of the order: INT 5 and
    /// BIGINT 5 compare equal, as values do).
    bigint: u8,
}

impl IntKey {
    /// `parts` packed; `None` if they do not fit.
    pub(super) fn pack(parts: &[Part]) -> Option<IntKey> {
        if parts.len() > PACKED_PARTS {
            return None;
        }
        let mut k = IntKey {
            values: [0; PACKED_PARTS],
            tags: [ABSENT; PACKED_PARTS],
            bigint: 0,
        };
        for (i, part) in parts.iter().enumerate() {
            k.tags[i] = match part {
                Part::V(Value::Int(v)) => {
                    k.values[i] = i64::from(*v);
                    VALUE
                }
                Part::V(Value::BigInt(v)) => {
                    k.values[i] = *v;
                    k.bigint |= 1 << i;
                    VALUE
                }
                Part::V(Value::Null) => NULL,
                Part::High => HIGH,
                Part::V(_) => return None,
            };
        }
        Some(k)
    }

    /// The parts again.
    pub(super) fn unpack(&self) -> Vec<Part> {
        let mut parts = Vec::with_capacity(PACKED_PARTS);
        for i in 0..PACKED_PARTS {
            parts.push(match self.tags[i] {
                ABSENT => break,
                VALUE if self.bigint & (1 << i) != 0 => Part::V(Value::BigInt(self.values[i])),
                // Packed from an INT: it fits.
                VALUE => Part::V(Value::Int(self.values[i] as i32)),
                NULL => Part::V(Value::Null),
                _ => Part::High,
            });
        }
        parts
    }
}

impl Ord for IntKey {
    fn cmp(&self, other: &Self) -> Ordering {
        for i in 0..PACKED_PARTS {
            let by_tag = self.tags[i].cmp(&other.tags[i]);
            if by_tag != Ordering::Equal {
                return by_tag;
            }
            if self.tags[i] == VALUE {
                let by_value = self.values[i].cmp(&other.values[i]);
                if by_value != Ordering::Equal {
                    return by_value;
                }
            }
        }
        Ordering::Equal
    }
}

impl PartialOrd for IntKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for IntKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for IntKey {}

type Packed = (IntKey, Vid);

fn pack(entry: &Entry) -> Option<Packed> {
    IntKey::pack(&entry.0).map(|k| (k, entry.1))
}

fn unpack(p: &Packed) -> Entry {
    (p.0.unpack(), p.1)
}

fn pack_bound(b: &Bound<Entry>) -> Option<Bound<Packed>> {
    Some(match b {
        Bound::Included(e) => Bound::Included(pack(e)?),
        Bound::Excluded(e) => Bound::Excluded(pack(e)?),
        Bound::Unbounded => Bound::Unbounded,
    })
}

/// Whether `e` lies within `(lower, upper)`.
pub(super) fn within(e: &Entry, lower: &Bound<Entry>, upper: &Bound<Entry>) -> bool {
    let above = match lower {
        Bound::Included(l) => e >= l,
        Bound::Excluded(l) => e > l,
        Bound::Unbounded => true,
    };
    above
        && match upper {
            Bound::Included(u) => e <= u,
            Bound::Excluded(u) => e < u,
            Bound::Unbounded => true,
        }
}

/// The entries of one index.
pub(super) enum Entries {
    Packed(BTreeSet<Packed>),
    Parts(BTreeSet<Entry>),
}

impl Default for Entries {
    fn default() -> Self {
        Entries::Packed(BTreeSet::new())
    }
}

impl Entries {
    pub fn len(&self) -> usize {
        match self {
            Entries::Packed(s) => s.len(),
            Entries::Parts(s) => s.len(),
        }
    }

    pub fn contains(&self, entry: &Entry) -> bool {
        match self {
            Entries::Packed(s) => pack(entry).is_some_and(|p| s.contains(&p)),
            Entries::Parts(s) => s.contains(entry),
        }
    }

    /// The set as parts (from now on).
    fn turn_to_parts(&mut self) -> &mut BTreeSet<Entry> {
        if let Entries::Packed(s) = self {
            *self = Entries::Parts(s.iter().map(unpack).collect());
        }
        match self {
            Entries::Parts(s) => s,
            Entries::Packed(_) => unreachable!("turned to parts above"),
        }
    }

    pub fn insert(&mut self, entry: Entry) {
        if let Entries::Packed(s) = self {
            if let Some(p) = pack(&entry) {
                s.insert(p);
                return;
            }
        }
        self.turn_to_parts().insert(entry);
    }

    pub fn remove(&mut self, entry: &Entry) -> bool {
        match self {
            Entries::Packed(s) => pack(entry).is_some_and(|p| s.remove(&p)),
            Entries::Parts(s) => s.remove(entry),
        }
    }

    /// Adds many entries; an empty set is built in bulk from the sorted
    /// entries.
    pub fn extend(&mut self, new: Vec<Entry>) {
        if let Entries::Packed(s) = self {
            let packed: Option<Vec<Packed>> = new.iter().map(pack).collect();
            if let Some(mut packed) = packed {
                if s.is_empty() {
                    // Sorted here, the set's own sort finds one run.
                    packed.sort_unstable();
                    *s = packed.into_iter().collect();
                } else {
                    s.extend(packed);
                }
                return;
            }
        }
        let s = self.turn_to_parts();
        if s.is_empty() {
            *s = new.into_iter().collect();
        } else {
            s.extend(new);
        }
    }

    /// Calls `f` with the VID of each entry in `(lower, upper)`, in key
    /// order, until it returns false.
    pub fn each_vid(
        &self,
        lower: Bound<Entry>,
        upper: Bound<Entry>,
        mut f: impl FnMut(Vid) -> bool,
    ) {
        match self {
            Entries::Parts(s) => {
                s.range((lower, upper)).all(|e| f(e.1));
            }
            Entries::Packed(s) => match (pack_bound(&lower), pack_bound(&upper)) {
                (Some(l), Some(u)) => {
                    s.range((l, u)).all(|p| f(p.1));
                }
                _ => {
                    s.iter()
                        .filter(|p| within(&unpack(p), &lower, &upper))
                        .all(|p| f(p.1));
                }
            },
        }
    }

    /// Up to `max` entries of `(lower, upper)` in key order (backwards
    /// when `descending`), those `pass` picks passed over.
    pub fn walk(
        &self,
        lower: Bound<Entry>,
        upper: Bound<Entry>,
        descending: bool,
        max: usize,
        pass: &mut impl PassDead,
        lead: bool,
    ) -> WalkBatch {
        match self {
            Entries::Parts(s) => walk_found(s.range((lower, upper)), descending, max, pass, lead),
            Entries::Packed(s) => match (pack_bound(&lower), pack_bound(&upper)) {
                (Some(l), Some(u)) => walk_found(s.range((l, u)), descending, max, pass, lead),
                _ => {
                    let inside: Vec<Entry> = s
                        .iter()
                        .map(unpack)
                        .filter(|e| within(e, &lower, &upper))
                        .collect();
                    walk_found(inside.iter(), descending, max, pass, lead)
                }
            },
        }
    }
}

/// An entry as a set holds it: its VID, and the entry as parts.
pub(super) trait Stored {
    fn vid(&self) -> Vid;
    fn entry(&self) -> Entry;
}

impl Stored for Entry {
    fn vid(&self) -> Vid {
        self.1
    }

    fn entry(&self) -> Entry {
        self.clone()
    }
}

impl Stored for Packed {
    fn vid(&self) -> Vid {
        self.1
    }

    fn entry(&self) -> Entry {
        unpack(self)
    }
}

/// The walk over a range's entries, in the direction asked.
fn walk_found<'a, T: Stored + 'a>(
    found: impl DoubleEndedIterator<Item = &'a T>,
    descending: bool,
    max: usize,
    pass: &mut impl PassDead,
    lead: bool,
) -> WalkBatch {
    match descending {
        true => WalkBatch::take(found.rev(), max, pass, lead),
        false => WalkBatch::take(found, max, pass, lead),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Passes over every third VID.
    struct EveryThird;

    impl PassDead for EveryThird {
        fn pass(&mut self, vid: Vid) -> Option<ndpdb_formats::TxId> {
            vid.0
                .is_multiple_of(3)
                .then_some(ndpdb_formats::TxId(vid.0))
        }

        fn unlocked(&mut self, _: Vid) -> bool {
            true
        }

        fn may_jump(&mut self, _: &super::super::DeadRun) -> bool {
            false
        }
    }

    /// A small deterministic generator (xorshift).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        /// A part: INT or BIGINT over a small range (so keys repeat),
        /// values beyond INT, NULL, or (for bounds) High.
        fn part(&mut self, high: bool) -> Part {
            match self.below(if high { 10 } else { 9 }) {
                0..=3 => Part::V(Value::Int(self.below(7) as i32 - 3)),
                4 | 5 => Part::V(Value::BigInt(self.below(7) as i64 - 3)),
                6 => Part::V(Value::BigInt(i64::MIN + self.below(3) as i64)),
                7 => Part::V(Value::BigInt(i64::MAX - self.below(3) as i64)),
                8 => Part::V(Value::Null),
                _ => Part::High,
            }
        }

        fn key(&mut self, len: usize, high: bool) -> Vec<Part> {
            (0..len).map(|_| self.part(high)).collect()
        }

        /// A key of `lengths` parts, `lengths` counting from `from`.
        fn key_of(&mut self, from: u64, lengths: u64, high: bool) -> Vec<Part> {
            let len = from + self.below(lengths);
            self.key(len as usize, high)
        }
    }

    /// Packed keys order exactly as their parts do, across lengths,
    /// NULLs, High, INT against BIGINT and the extremes of BIGINT; and
    /// unpack gives the parts back.
    #[test]
    fn packed_keys_order_as_their_parts_do() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let a = rng.key_of(0, 5, true);
            let b = rng.key_of(0, 5, true);
            let (pa, pb) = (IntKey::pack(&a).unwrap(), IntKey::pack(&b).unwrap());
            assert_eq!(pa.cmp(&pb), a.cmp(&b), "{a:?} against {b:?}");
            let back = pa.unpack();
            assert_eq!(format!("{back:?}"), format!("{a:?}"));
        }
        let text = [Part::V(Value::Text("a".into()))];
        assert!(IntKey::pack(&text).is_none());
        let five: Vec<Part> = (0..5).map(|i| Part::V(Value::Int(i))).collect();
        assert!(IntKey::pack(&five).is_none());
    }

    fn bound(rng: &mut Rng) -> Bound<Entry> {
        let e = (rng.key_of(0, 4, true), Vid(rng.below(4)));
        match rng.below(3) {
            0 => Bound::Included(e),
            1 => Bound::Excluded(e),
            _ => Bound::Unbounded,
        }
    }

    fn ordered(l: &Bound<Entry>, u: &Bound<Entry>) -> bool {
        match (l, u) {
            (Bound::Included(a), Bound::Included(b)) => a <= b,
            (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
                a < b
            }
            _ => true,
        }
    }

    /// A packed set answers every range and walk as a set of parts
    /// does, through inserts, removes and a turn to parts halfway;
    /// bounds that do not pack (NUMERIC) give the same answers too.
    #[test]
    fn packed_entries_answer_as_a_set_of_parts() {
        let mut rng = Rng(42);
        let mut packed = Entries::default();
        let mut model: BTreeSet<Entry> = BTreeSet::new();
        let bulk: Vec<Entry> = (0..300)
            .map(|_| (rng.key(3, false), Vid(rng.below(50))))
            .collect();
        packed.extend(bulk.clone());
        model.extend(bulk);
        assert!(matches!(packed, Entries::Packed(_)));
        for round in 0..3000 {
            let e = (rng.key_of(1, 3, false), Vid(rng.below(50)));
            match rng.below(4) {
                0 => assert_eq!(packed.remove(&e), model.remove(&e)),
                _ => {
                    packed.insert(e.clone());
                    model.insert(e);
                }
            }
            if round == 2000 {
                // A text key turns the set to parts; the answers stay.
                let t = (vec![Part::V(Value::Text("x".into()))], Vid(1));
                packed.insert(t.clone());
                model.insert(t);
                assert!(matches!(packed, Entries::Parts(_)));
            }
            assert_eq!(packed.len(), model.len());
            let (mut lower, mut upper) = (bound(&mut rng), bound(&mut rng));
            if rng.below(8) == 0 {
                let n = Part::V(Value::Numeric(ndpdb_formats::Decimal::new(5, 1)));
                lower = Bound::Included((vec![Part::V(Value::Int(0)), n], Vid(0)));
            }
            if !ordered(&lower, &upper) {
                upper = Bound::Unbounded;
                if !ordered(&lower, &upper) {
                    continue;
                }
            }
            let want: Vec<Vid> = model
                .range((lower.clone(), upper.clone()))
                .map(|e| e.1)
                .collect();
            let mut got = Vec::new();
            packed.each_vid(lower.clone(), upper.clone(), |v| {
                got.push(v);
                true
            });
            assert_eq!(got, want);
            let descending = rng.below(2) == 0;
            let max = 1 + rng.below(6) as usize;
            let pass = |v: Vid| v.0.is_multiple_of(3);
            let w = packed.walk(
                lower.clone(),
                upper.clone(),
                descending,
                max,
                &mut EveryThird,
                false,
            );
            let in_range: Vec<&Entry> = match descending {
                true => model.range((lower, upper)).rev().collect(),
                false => model.range((lower, upper)).collect(),
            };
            // Entries passed over do not count towards `max`.
            let (mut kept, mut last, mut ended) = (Vec::new(), None, true);
            for e in in_range {
                if kept.len() >= max {
                    ended = false;
                    break;
                }
                if !pass(e.1) {
                    kept.push(e);
                }
                last = Some(e);
            }
            assert_eq!(w.kept.iter().collect::<Vec<_>>(), kept);
            assert_eq!(w.last.as_ref(), last);
            assert_eq!(w.ended, ended);
        }
    }
}
