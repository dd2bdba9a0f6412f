//! What this process moved through librados, for benchmarks: bytes
//! read and written, object-class replies, calls.

use std::sync::atomic::{AtomicU64, Ordering};

static READ: AtomicU64 = AtomicU64::new(0);
static WRITTEN: AtomicU64 = AtomicU64::new(0);
static REPLIES: AtomicU64 = AtomicU64::new(0);
static CALLS: AtomicU64 = AtomicU64::new(0);

/// Totals since the process started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Object bytes read into this process.
    pub read_bytes: u64,
    /// Object bytes written from this process.
    pub written_bytes: u64,
    /// Bytes of object-class replies (what an NDP call returns).
    pub reply_bytes: u64,
    /// Calls to the cluster (reads, writes, operations, class calls).
    pub calls: u64,
}

impl Counters {
    /// What happened between `before` and `self`.
    pub fn since(&self, before: &Counters) -> Counters {
        Counters {
            read_bytes: self.read_bytes - before.read_bytes,
            written_bytes: self.written_bytes - before.written_bytes,
            reply_bytes: self.reply_bytes - before.reply_bytes,
            calls: self.calls - before.calls,
        }
    }
}

/// The totals so far.
pub fn counters() -> Counters {
    Counters {
        read_bytes: READ.load(Ordering::Relaxed),
        written_bytes: WRITTEN.load(Ordering::Relaxed),
        reply_bytes: REPLIES.load(Ordering::Relaxed),
        calls: CALLS.load(Ordering::Relaxed),
    }
}

pub(crate) fn read(n: usize) {
    READ.fetch_add(n as u64, Ordering::Relaxed);
    CALLS.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn written(n: usize) {
    WRITTEN.fetch_add(n as u64, Ordering::Relaxed);
    CALLS.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn replied(n: usize) {
    REPLIES.fetch_add(n as u64, Ordering::Relaxed);
    CALLS.fetch_add(1, Ordering::Relaxed);
}
