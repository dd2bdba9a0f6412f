//! Where the table's 16-byte words live: a mapping this process shares
//! (anonymous or `/dev/shm`), or the memory of a device reached over a
//! network link, where every load and compare-and-swap is a sync-plane
//! message (update NDP §5.1 on PCIe-attached devices; the coherent-link
//! argument of dansen-cinda-ieee-micro2026 §3).
//!
//! ```text
//!  SharedLockTable ── Words::Local(Region)   one 128-bit CAS instruction
//!                  └─ Words::Remote(dyn RemoteWords)
//!                        └─ SLT_LOAD / SLT_CAS / SLT_OCCUPIED ──► device process
//! ```
//!
//! Word 0 is the header in both; bucket `i` is word `1 + i`.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::error::Result;
use crate::region::Region;

/// The words of a table that lives in another process's memory, reached
/// by messages. Each call is one atomic operation on the owner's side.
pub trait RemoteWords: Send + Sync {
    /// The word at `word` (0: the header).
    fn load(&self, word: u64) -> Result<u128>;
    /// Compare-and-swap at `word`: `Ok(())` if it held `old` and now holds
    /// `new`, else `Err(current)`.
    fn compare_exchange(&self, word: u64, old: u128, new: u128) -> Result<Result<(), u128>>;
    /// Every bucket that is not empty, as (bucket index, word), in one
    /// exchange: what a wait-for graph search reads.
    fn occupied(&self) -> Result<Vec<(u64, u128)>>;
}

pub(crate) enum Words {
    Local(Region),
    Remote(Arc<dyn RemoteWords>),
}

impl Words {
    pub(crate) fn load(&self, word: usize) -> Result<u128> {
        match self {
            Words::Local(r) => Ok(r.words()[word].load(Ordering::Acquire)),
            Words::Remote(r) => r.load(word as u64),
        }
    }

    pub(crate) fn compare_exchange(
        &self,
        word: usize,
        old: u128,
        new: u128,
    ) -> Result<Result<(), u128>> {
        match self {
            Words::Local(r) => Ok(r.words()[word]
                .compare_exchange(old, new, Ordering::AcqRel, Ordering::Acquire)
                .map(|_| ())),
            Words::Remote(r) => r.compare_exchange(word as u64, old, new),
        }
    }

    /// Non-empty buckets among the first `buckets`.
    pub(crate) fn occupied(&self, buckets: usize) -> Result<Vec<(u64, u128)>> {
        match self {
            Words::Local(r) => Ok(r.words()[1..=buckets]
                .iter()
                .enumerate()
                .filter_map(|(i, w)| {
                    let v = w.load(Ordering::Acquire);
                    (v != 0).then_some((i as u64, v))
                })
                .collect()),
            Words::Remote(r) => r.occupied(),
        }
    }

    /// Bytes of shared memory this process maps for the table (none when
    /// it is remote).
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Words::Local(r) => r.bytes(),
            Words::Remote(_) => 0,
        }
    }

    /// The local word itself (tests that forge shared memory).
    #[cfg(test)]
    pub(crate) fn local(&self, word: usize) -> &portable_atomic::AtomicU128 {
        match self {
            Words::Local(r) => &r.words()[word],
            Words::Remote(_) => panic!("a remote table has no local words"),
        }
    }
}
