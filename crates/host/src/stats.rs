//! Engine counters shown by `SHOW STATS` (since the database was opened).

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default, Debug)]
pub struct EngineCounters {
    pub commits: AtomicU64,
    pub aborts: AtomicU64,
    pub delta_flushes: AtomicU64,
    pub pages_flushed: AtomicU64,
    pub checkpoints: AtomicU64,
    /// Checkpoints whose PK index files could not be written (the next
    /// open rebuilds those indexes from the head records).
    pub pk_index_save_failures: AtomicU64,
    /// Background checkpoints that failed (taken again at the next
    /// request).
    pub checkpoint_failures: AtomicU64,
    pub gc_runs: AtomicU64,
    pub gc_failures: AtomicU64,
    pub gc_versions_reclaimed: AtomicU64,
    pub gc_versions_relocated: AtomicU64,
    pub gc_tuples_removed: AtomicU64,
    pub gc_pages_freed: AtomicU64,
    /// Pages GC runs read, and pages they skipped as settled.
    pub gc_pages_scanned: AtomicU64,
    pub gc_pages_skipped: AtomicU64,
    /// Key-order reads that jumped over a remembered run of dead
    /// entries (`secondary_index/dead_runs.rs`).
    pub dead_runs_jumped: AtomicU64,
    pub serialization_failures: AtomicU64,
    pub deadlocks: AtomicU64,
    pub lock_waits: AtomicU64,
    pub ndp_calls: AtomicU64,
    pub ndp_shared_bytes: AtomicU64,
    pub ndp_result_rows: AtomicU64,
    pub ndp_device_micros: AtomicU64,
    pub ndp_pe_micros: AtomicU64,
    pub ndp_tuples: AtomicU64,
    pub ndp_pages_read: AtomicU64,
    /// Pages of NDP scans whose zone maps ruled out every row.
    pub ndp_pages_pruned: AtomicU64,
    /// Page bytes the PEs read.
    pub ndp_bytes_touched: AtomicU64,
    /// Host scans through the scan core: pages, pages ruled out by zone
    /// maps, bytes read.
    pub scan_pages: AtomicU64,
    pub scan_pages_pruned: AtomicU64,
    pub scan_bytes_touched: AtomicU64,
    pub ndp_rows_modified: AtomicU64,
    pub ndp_space_round_trips: AtomicU64,
    /// Update jobs that stopped early on a conflict found on the device.
    pub ndp_early_aborts: AtomicU64,
    /// Update jobs whose ΔVID failed host validation.
    pub ndp_validation_failures: AtomicU64,
    /// PE time spent taking SLT locks.
    pub ndp_device_lock_micros: AtomicU64,
    /// Host time spent releasing update jobs' SLT locks at transaction end.
    pub ndp_host_release_micros: AtomicU64,
    /// Extended NDP logging: overflow-log bytes moved from the device to
    /// the host, and the time moving them took.
    pub ndp_overflow_bytes: AtomicU64,
    pub ndp_overflow_micros: AtomicU64,
    /// Of those bytes, the ones moved while their job still ran.
    pub ndp_overflow_streamed_bytes: AtomicU64,
    /// Update-NDP commits that let waiters violate their locks, and the
    /// commits that waited for one of them (commit dependencies).
    pub ndp_lock_violations: AtomicU64,
    /// NDP statements that ran over the previous statement's stage.
    pub ndp_pipelined: AtomicU64,
    /// Times the host joined a restarted device process again.
    pub device_reattaches: AtomicU64,
    /// Delta-buffer flushes that failed because the device was
    /// unreachable (their pages stay in the delta buffer).
    pub flushes_deferred: AtomicU64,
    pub ndp_commit_dependencies: AtomicU64,
    /// Snapshot writers that failed certification against a version of a
    /// transaction still committing with lock violation (early aborts).
    pub ndp_violation_early_aborts: AtomicU64,
}

impl EngineCounters {
    pub fn inc(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

pub fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}
