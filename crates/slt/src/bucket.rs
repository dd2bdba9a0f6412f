//! One SLT bucket: a FIFO lock queue of eight 2-byte slots in 16 bytes
//! (DESIGN.md §7; update NDP §5.1).
//!
//! ```text
//!   bit 0                                                          bit 127
//!   ┌────────┬────────┬────────┬────────┬────────┬────────┬────────┬────────┐
//!   │ slot 0 │ slot 1 │ slot 2 │ slot 3 │ slot 4 │ slot 5 │ slot 6 │ slot 7 │
//!   │ holder │ waiters in arrival order ──────────────────────────► │ host   │
//!   └────────┴────────┴────────┴────────┴────────┴────────┴────────┴────────┘
//!   0 = empty · 1 = TxID_HOST (host-shared lock) · 2..=65535 = device job tag
//! ```
//!
//! A bucket is *compact*: its entries form a prefix and empty slots follow.
//! Enqueueing appends after the last entry; releasing shifts the queue by
//! one slot; a waiter that gives up is cut out and the tail shifts left.
//! Device requests may use slots 0–6 only; slot 7 is reserved so a host
//! transaction can always enqueue. Everything here is a pure function of
//! the 128-bit value: the table applies the results with one CAS each.

use std::fmt;

use ndpdb_formats::JobId;

/// Slots per bucket.
pub const SLOTS: usize = 8;
/// Slots a device request may occupy (the last is reserved for the host).
pub const DEVICE_SLOTS: usize = SLOTS - 1;

const RAW_EMPTY: u16 = 0;
const RAW_HOST: u16 = 1;

/// A device job's 2-byte identity in the SLT (JobIds are 8 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceTag(u16);

impl DeviceTag {
    /// A tag from its raw slot value (0 and 1 are not device tags).
    pub fn new(raw: u16) -> Option<DeviceTag> {
        (raw > RAW_HOST).then_some(DeviceTag(raw))
    }

    /// The tag a job uses: unique among the 65,534 most recent jobs.
    pub fn for_job(job: JobId) -> DeviceTag {
        DeviceTag(2 + (job.0 % (u16::MAX as u64 - 1)) as u16)
    }

    pub fn raw(self) -> u16 {
        self.0
    }
}

/// What a slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Slot {
    Empty,
    /// The host-shared lock TxID_HOST, standing for a group of host
    /// transactions kept in the host lock table.
    Host,
    Device(DeviceTag),
}

impl Slot {
    fn raw(self) -> u16 {
        match self {
            Slot::Empty => RAW_EMPTY,
            Slot::Host => RAW_HOST,
            Slot::Device(t) => t.0,
        }
    }

    fn from_raw(raw: u16) -> Slot {
        match raw {
            RAW_EMPTY => Slot::Empty,
            RAW_HOST => Slot::Host,
            r => Slot::Device(DeviceTag(r)),
        }
    }

    /// How many slots a requester of this kind may fill up to.
    pub fn limit(self) -> usize {
        match self {
            Slot::Device(_) => DEVICE_SLOTS,
            _ => SLOTS,
        }
    }
}

/// A bucket value.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Bucket(pub u128);

impl Bucket {
    pub const EMPTY: Bucket = Bucket(0);

    fn raw(self, i: usize) -> u16 {
        (self.0 >> (16 * i)) as u16
    }

    pub fn slot(self, i: usize) -> Slot {
        if i >= SLOTS {
            return Slot::Empty;
        }
        Slot::from_raw(self.raw(i))
    }

    /// Entries in the queue.
    pub fn len(self) -> usize {
        (0..SLOTS).take_while(|&i| self.raw(i) != RAW_EMPTY).count()
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether the entries form a prefix (what every writer maintains;
    /// a bucket read from shared memory that is not compact is corrupt).
    pub fn is_compact(self) -> bool {
        let n = self.len();
        n == SLOTS || self.0 >> (16 * n) == 0
    }

    /// The holder.
    pub fn head(self) -> Slot {
        self.slot(0)
    }

    /// The newest entry.
    pub fn last(self) -> Slot {
        match self.len() {
            0 => Slot::Empty,
            n => self.slot(n - 1),
        }
    }

    /// Position of the first entry equal to `s`.
    pub fn position(self, s: Slot) -> Option<usize> {
        (0..self.len()).find(|&i| self.slot(i) == s)
    }

    /// Position of the `n`-th (0-based) host-shared entry.
    pub fn nth_host(self, n: usize) -> Option<usize> {
        (0..self.len())
            .filter(|&i| self.slot(i) == Slot::Host)
            .nth(n)
    }

    /// Number of host-shared entries.
    pub fn host_entries(self) -> usize {
        (0..self.len())
            .filter(|&i| self.slot(i) == Slot::Host)
            .count()
    }

    /// Appends `s`; `None` if its kind may not use another slot.
    pub fn push(self, s: Slot) -> Option<(Bucket, usize)> {
        let n = self.len();
        if s == Slot::Empty || n >= s.limit() {
            return None;
        }
        Some((Bucket(self.0 | (s.raw() as u128) << (16 * n)), n))
    }

    /// Cuts out the entry at `i`; the entries behind it move up one slot.
    pub fn remove_at(self, i: usize) -> Bucket {
        if i >= SLOTS {
            return self;
        }
        let low_mask = if i == 0 {
            0
        } else {
            u128::MAX >> (128 - 16 * i)
        };
        let low = self.0 & low_mask;
        let high = if i + 1 >= SLOTS {
            0
        } else {
            (self.0 >> (16 * (i + 1))) << (16 * i)
        };
        Bucket(low | high)
    }

    /// Release: the holder leaves and the queue shifts by one slot.
    pub fn pop_head(self) -> Bucket {
        self.remove_at(0)
    }

    pub fn slots(self) -> [Slot; SLOTS] {
        std::array::from_fn(|i| self.slot(i))
    }
}

impl fmt::Debug for Bucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[")?;
        for i in 0..SLOTS {
            if i > 0 {
                write!(f, " ")?;
            }
            match self.slot(i) {
                Slot::Empty => write!(f, "_")?,
                Slot::Host => write!(f, "H")?,
                Slot::Device(t) => write!(f, "D{}", t.0)?,
            }
        }
        write!(f, "]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dev(n: u16) -> Slot {
        Slot::Device(DeviceTag::new(n).unwrap())
    }

    #[test]
    fn fifo_push_and_release() {
        let (b, p0) = Bucket::EMPTY.push(dev(7)).unwrap();
        let (b, p1) = b.push(Slot::Host).unwrap();
        let (b, p2) = b.push(dev(9)).unwrap();
        assert_eq!((p0, p1, p2), (0, 1, 2));
        assert_eq!(format!("{b:?}"), "[D7 H D9 _ _ _ _ _]");
        let b = b.pop_head();
        assert_eq!(b.head(), Slot::Host);
        assert_eq!(b.last(), dev(9));
        assert_eq!(b.remove_at(1), Bucket::EMPTY.push(Slot::Host).unwrap().0);
    }

    #[test]
    fn last_slot_is_reserved_for_the_host() {
        let mut b = Bucket::EMPTY;
        for t in 2..9 {
            b = b.push(dev(t)).unwrap().0;
        }
        assert_eq!(b.len(), DEVICE_SLOTS);
        assert!(b.push(dev(20)).is_none());
        let (b, pos) = b.push(Slot::Host).unwrap();
        assert_eq!(pos, SLOTS - 1);
        assert!(b.push(Slot::Host).is_none());
        assert!(b.is_compact());
    }

    #[test]
    fn device_tags_skip_the_reserved_values() {
        assert_eq!(DeviceTag::new(0), None);
        assert_eq!(DeviceTag::new(1), None);
        for j in [0u64, 1, 65533, 65534, 65535, u64::MAX] {
            assert!(DeviceTag::for_job(JobId(j)).raw() >= 2);
        }
        assert_ne!(DeviceTag::for_job(JobId(5)), DeviceTag::for_job(JobId(6)));
    }

    #[test]
    fn a_gap_is_not_compact() {
        assert!(!Bucket(1 << 16).is_compact());
        assert!(Bucket(0x0005_0001).is_compact());
    }

    proptest! {
        /// The bucket behaves like a bounded queue (a Vec model).
        #[test]
        fn behaves_like_a_vec(ops in prop::collection::vec((0u8..4, 2u16..40, 0usize..9), 0..60)) {
            let mut b = Bucket::EMPTY;
            let mut model: Vec<Slot> = Vec::new();
            for (op, tag, i) in ops {
                match op {
                    0 | 1 => {
                        let s = if op == 0 { dev(tag) } else { Slot::Host };
                        let fits = model.len() < s.limit();
                        match b.push(s) {
                            Some((nb, pos)) => {
                                prop_assert!(fits);
                                prop_assert_eq!(pos, model.len());
                                model.push(s);
                                b = nb;
                            }
                            None => prop_assert!(!fits),
                        }
                    }
                    2 => {
                        b = b.pop_head();
                        if !model.is_empty() {
                            model.remove(0);
                        }
                    }
                    _ => {
                        b = b.remove_at(i);
                        if i < model.len() {
                            model.remove(i);
                        }
                    }
                }
                prop_assert!(b.is_compact());
                prop_assert_eq!(b.len(), model.len());
                for (k, s) in model.iter().enumerate() {
                    prop_assert_eq!(b.slot(k), *s);
                }
            }
        }
    }
}
