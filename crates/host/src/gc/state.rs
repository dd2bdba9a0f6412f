//! What garbage collection reports and keeps between runs: a run's
//! figures ([`GcReport`]), its pacing ([`GcCost`], PostgreSQL's
//! `vacuum_cost_delay` / `vacuum_cost_limit`), and the engine's record
//! of past runs ([`GcState`], what `SHOW STATS` and the space estimate
//! read).
//!
//! ```text
//!  gc/mod.rs ── a run ──► GcReport, GcState.live_bytes, micros
//!  background/autovacuum.rs ── GcCost from autovacuum_cost_*
//! ```
//!
//! Plain values, so that the engine's state and the autovacuum worker
//! hold them without reaching the run itself.

use rustc_hash::FxHashMap;

use ndpdb_formats::TableId;

/// Default share of a page's slots that may still be needed for GC to
/// compact it (VACUUM FULL compacts every page it can).
pub const GC_MAX_LIVE_PERCENT: u8 = 50;

/// What GC runs have found, per table and in total.
#[derive(Default)]
pub(crate) struct GcState {
    /// Per table: bytes of page space its needed versions took at its
    /// last run.
    pub live_bytes: FxHashMap<TableId, u64>,
    /// Time spent in finished runs, and the start of the one under way.
    pub micros_done: u64,
    pub running_since: Option<std::time::Instant>,
}

impl GcState {
    /// Time spent collecting garbage so far, the run under way included.
    pub fn micros(&self) -> u64 {
        self.micros_done
            + self
                .running_since
                .map_or(0, |t| t.elapsed().as_micros() as u64)
    }
}

/// One GC run's figures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Versions copied out of victim pages (heads that moved).
    pub relocated: u64,
    /// Tuples whose newest version is a tombstone every snapshot sees:
    /// their VID-map entries are gone.
    pub tuples_removed: u64,
    /// Pages freed (reused once the transactions running now end).
    pub pages_freed: u64,
    /// Versions on the freed pages that no snapshot needed.
    pub versions_reclaimed: u64,
    /// ΔVIDs not applied: the tuple was locked or had moved.
    pub skipped: u64,
    /// Pages of the table the device read.
    pub pages_scanned: u64,
    /// Pages it did not read: all their versions were heads every
    /// snapshot sees at the last run, and none has moved since
    /// (PostgreSQL skips all-visible pages likewise).
    pub pages_skipped: u64,
}

/// How a GC run paces itself (PostgreSQL's `vacuum_cost_delay` and
/// `vacuum_cost_limit`): it sleeps `delay` each time its work adds up to
/// `limit` (a page read costs 1, a page written 20). No delay: full speed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcCost {
    pub delay: std::time::Duration,
    pub limit: u32,
}

impl GcCost {
    /// Manual VACUUM's default: no pauses.
    pub const UNTHROTTLED: GcCost = GcCost {
        delay: std::time::Duration::ZERO,
        limit: 200,
    };
}
