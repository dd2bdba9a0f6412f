//! Typed identifiers (DESIGN.md §2–§3).
//!
//! A `RecId` packs ⟨LPN, slot⟩ into one `u64` (48-bit LPN, 16-bit slot) so
//! that VID maps are flat arrays of `u64` and a record header stays small.

use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident($inner:ty)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub $inner);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

id_type!(
    /// Transaction id: monotonically increasing, assigned at BEGIN.
    TxId(u64)
);
id_type!(
    /// Virtual id: the identity of a tuple across all of its versions.
    Vid(u64)
);
id_type!(
    /// Logical page number, the page part of a `RecId`.
    Lpn(u64)
);
id_type!(
    /// Physical page number on the device's page store.
    Ppn(u64)
);
impl Ppn {
    /// In a ΔL2P entry: the LPN is unmapped (its page was freed).
    pub const NONE: Ppn = Ppn(u64::MAX);
}

id_type!(
    /// Log sequence number: byte position in the host WAL stream.
    Lsn(u64)
);
id_type!(
    /// Id of a job (an NDP invocation) on the device.
    JobId(u64)
);
id_type!(
    /// Catalog id of a table; never reused.
    TableId(u32)
);

/// VIDs are dense per table; anything at or above this is corrupt input.
pub const MAX_VID: u64 = 1 << 40;

/// Largest LPN a `RecId` can carry.
pub const MAX_LPN: u64 = (1 << 48) - 1;

/// Record id ⟨LPN, slot⟩. `RecId::NULL` marks "no predecessor" / empty chain.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecId(u64);

impl RecId {
    pub const NULL: RecId = RecId(u64::MAX);

    pub fn new(lpn: Lpn, slot: u16) -> RecId {
        debug_assert!(lpn.0 <= MAX_LPN);
        RecId((lpn.0 << 16) | slot as u64)
    }

    pub fn from_raw(raw: u64) -> RecId {
        RecId(raw)
    }

    pub fn raw(self) -> u64 {
        self.0
    }

    pub fn is_null(self) -> bool {
        self == RecId::NULL
    }

    pub fn lpn(self) -> Lpn {
        Lpn(self.0 >> 16)
    }

    pub fn slot(self) -> u16 {
        self.0 as u16
    }
}

impl fmt::Debug for RecId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_null() {
            write!(f, "RecId(null)")
        } else {
            write!(f, "RecId({}:{})", self.lpn().0, self.slot())
        }
    }
}

impl fmt::Display for RecId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recid_packs_lpn_and_slot() {
        let r = RecId::new(Lpn(123_456), 77);
        assert_eq!(r.lpn(), Lpn(123_456));
        assert_eq!(r.slot(), 77);
        assert!(!r.is_null());
        assert!(RecId::NULL.is_null());
        assert_eq!(RecId::from_raw(r.raw()), r);
    }
}
