//! Version garbage collection, the host's side (DESIGN.md §8a): the
//! device finds garbage and compacts pages (`ndpdb_device::gc`); the host
//! validates and applies the result like an update job's ΔMaps.
//!
//! ```text
//!  collect_garbage(table)                       one run at a time
//!    horizon  = oldest snapshot in use (TxManager::horizon)
//!    flush the delta buffer (only heads on device pages can move)
//!    NDP_CALL Gc in a system transaction (its TxId keeps the pages the
//!      job reads from reuse) → ΔVID, ΔL2P, victims; space is granted
//!      on demand as for update NDP
//!    validate & apply
//!      try-lock each ΔVID's tuple — never waits: a tuple a user holds
//!        (host or device) is skipped, and its victim page kept; while an
//!        update or lock job runs on the table no head moves at all (it
//!        certifies against the heads it captured)
//!      map the new pages (nothing points to them yet)
//!      under the commit gate: a ΔVID whose predecessor is still the head
//!        moves it (to the copy, or NULL for a tuple gone for everyone);
//!        else the victim page of the predecessor is kept
//!      WAL Gc record (ΔL2P, applied ΔVIDs, freed pages) → fsync
//!      unlock
//!    freed victims → space map: reused once unmapped, and — if a head
//!      pointed into them until this apply — once every transaction
//!      running now has ended (`crate::storage::space`)
//! ```
//!
//! A user transaction never waits for GC beyond the apply, and never
//! fails because of it: a writer that read a version GC has since moved
//! certifies against the copy (same creator, so its snapshot sees it —
//! see `Transaction::lock_and_certify`), and the same holds on the device.

mod state;

use std::sync::Arc;

use rustc_hash::FxHashSet;

use ndpdb_formats::codec::Reader;
use ndpdb_formats::delta_maps::DeltaMaps;
use ndpdb_formats::{Lpn, Ppn, SqlState};
use ndpdb_link::ndp::{JobState, ModifyResult, NdpOp};
use ndpdb_link::VidEntry;
use ndpdb_wal::WalRecord;

use crate::background::autovacuum::{Autovacuum, Vacuum};
use crate::config::Config;
use crate::db::{Database, Engine, TableState};
use crate::error::{Error, Result};
use crate::mvcc::snapshot::TxManager;
use crate::ndp::overflow_log::{self, OverflowRef};
use crate::ndp::{NdpReport, NdpRequest};
use crate::stats::EngineCounters;
use crate::transaction::Isolation;

pub(crate) use state::GcState;
pub use state::{GcCost, GcReport, GC_MAX_LIVE_PERCENT};

/// Times a GC run into [`GcState`].
struct Running<'a>(&'a Engine);

impl<'a> Running<'a> {
    fn start(inner: &'a Engine) -> Running<'a> {
        inner.gc.lock().running_since = Some(std::time::Instant::now());
        Running(inner)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let mut g = self.0.gc.lock();
        if let Some(t) = g.running_since.take() {
            g.micros_done += t.elapsed().as_micros() as u64;
        }
    }
}

fn decode_err(e: ndpdb_formats::Error) -> Error {
    Error::new(SqlState::DATA_CORRUPTED, format!("GC reply: {e}"))
}

impl Database {
    /// `VACUUM [table]`: collects garbage in one table or in all; `full`
    /// compacts every page with garbage, not only mostly-dead ones.
    pub fn vacuum(&self, table: Option<&str>, full: bool) -> Result<GcReport> {
        self.vacuum_with(table, full, GcCost::UNTHROTTLED)
    }

    /// [`Database::vacuum`] paced by `cost`.
    pub fn vacuum_with(&self, table: Option<&str>, full: bool, cost: GcCost) -> Result<GcReport> {
        let tables = match table {
            Some(name) => vec![self.table(name)?],
            None => {
                let metas = self.tables();
                let mut v = Vec::with_capacity(metas.len());
                for m in metas {
                    if let Ok(ts) = self.inner.table_state(m.id) {
                        v.push(ts);
                    }
                }
                v
            }
        };
        let percent = if full { 100 } else { GC_MAX_LIVE_PERCENT };
        let mut total = GcReport::default();
        // Heads still in the delta buffer cannot move: flush them first.
        self.inner.flush()?;
        for ts in tables {
            let r = self.collect_garbage(&ts, percent, cost)?;
            total.relocated += r.relocated;
            total.tuples_removed += r.tuples_removed;
            total.pages_freed += r.pages_freed;
            total.versions_reclaimed += r.versions_reclaimed;
            total.skipped += r.skipped;
            total.pages_scanned += r.pages_scanned;
            total.pages_skipped += r.pages_skipped;
        }
        // Pages freed by earlier runs whose readers have ended.
        self.inner.reclaim()?;
        Ok(total)
    }

    /// One GC run over `ts` (see the module docs).
    pub fn collect_garbage(
        &self,
        ts: &Arc<TableState>,
        max_live_percent: u8,
        cost: GcCost,
    ) -> Result<GcReport> {
        let inner = &self.inner;
        inner.check_ok()?;
        let _one = inner.gc_running.lock();
        let _timed = Running::start(inner);
        let changes = ts
            .changes_since_gc
            .load(std::sync::atomic::Ordering::Relaxed);
        let horizon = inner.txm.horizon();
        // A maintenance TxId: the run holds back no other horizon.
        let tx = self.begin_as(inner.txm.begin_maintenance(), Isolation::Snapshot)?;
        let req = NdpRequest {
            filter: None,
            conjuncts: Vec::new(),
            op: NdpOp::Gc {
                horizon,
                max_live_percent,
                cost_delay_us: cost.delay.as_micros().min(1_000_000) as u32,
                cost_limit: cost.limit,
            },
            pes: 1,
            preload: false,
        };
        let mut inv = tx.invocation(ts, &req, &[]);
        inv.space = inner.alloc_space(64);
        // While a base backup is kept, a restore needs this run's new
        // pages: Start-NDP names the overflow log they go to.
        let start_ndp = inner
            .wal
            .retained_from()
            .map(|_| inner.log_start_ndp(tx.id(), &inv).0);
        let mut report = NdpReport::default();
        let out = tx.ndp_call(ts, inv, &mut report)?;
        let mut result = ModifyResult::decode(&mut Reader::new(&out.result)).map_err(decode_err)?;
        let pages_ok = out.check_pages(&mut result);
        inner.free_space(&std::mem::take(&mut result.unused));
        pages_ok?;
        if let JobState::Failed(code, message) = &out.status.state {
            inner.free_space(&result.delta.l2p);
            return Err(Error::new(
                SqlState::from_code(code),
                format!("garbage collection on the device: {message}"),
            ));
        }
        let overflow = match start_ndp {
            Some(start) if !result.delta.l2p.is_empty() => {
                let written = overflow_log::write(
                    &inner.dir,
                    &inner.device,
                    tx.id(),
                    ts.id,
                    start,
                    &result.delta.l2p,
                );
                match written {
                    Ok(log) => Some(log),
                    Err(e) => {
                        let _ = overflow_log::remove(&inner.dir, start);
                        inner.free_space(&result.delta.l2p);
                        return Err(e);
                    }
                }
            }
            _ => None,
        };
        let applied = inner.apply_gc(ts, tx.id(), result, overflow);
        drop(tx);
        // A run with new pages always logs its Gc record when it succeeds.
        let r = match (applied, overflow) {
            (Ok(r), Some(log)) => {
                inner.overflow_committed.lock().push(log.start);
                r
            }
            (applied, log) => {
                if let Some(log) = log {
                    let _ = overflow_log::remove(&inner.dir, log.start);
                }
                applied?
            }
        };
        ts.changes_since_gc
            .fetch_sub(changes, std::sync::atomic::Ordering::Relaxed);
        ts.gc_horizon
            .fetch_max(horizon.0, std::sync::atomic::Ordering::Relaxed);
        EngineCounters::inc(&inner.counters.gc_runs);
        let c = &inner.counters;
        use std::sync::atomic::Ordering::Relaxed;
        c.gc_versions_reclaimed
            .fetch_add(r.versions_reclaimed, Relaxed);
        c.gc_pages_freed.fetch_add(r.pages_freed, Relaxed);
        c.gc_versions_relocated.fetch_add(r.relocated, Relaxed);
        c.gc_tuples_removed.fetch_add(r.tuples_removed, Relaxed);
        c.gc_pages_scanned.fetch_add(r.pages_scanned, Relaxed);
        c.gc_pages_skipped.fetch_add(r.pages_skipped, Relaxed);
        Ok(r)
    }
}

impl Database {
    /// Checks the space accounting (for tests and tools; meant right
    /// after a `VACUUM FULL` with no transaction running): every page of
    /// the store is free, released or mapped — none is lost — and every
    /// mapped page holds the newest version of some tuple (GC left no
    /// page behind that nothing needs).
    pub fn verify_no_leaked_pages(&self) -> Result<()> {
        let inner = &self.inner;
        let (free, released, end) = inner.space.counts();
        let mapped = inner.l2p.len() as u64;
        if free + released + mapped != end {
            return Err(Error::new(
                SqlState::DATA_CORRUPTED,
                format!(
                    "{free} free + {released} released + {mapped} mapped pages, but the store has {end}"
                ),
            ));
        }
        let mut with_heads: FxHashSet<Lpn> = FxHashSet::default();
        for ts in inner.all_tables() {
            for (_, head) in ts.vids.entries() {
                with_heads.insert(head.lpn());
            }
        }
        let leaked: Vec<Lpn> = inner
            .l2p
            .lpns()
            .into_iter()
            .filter(|l| !with_heads.contains(l))
            .collect();
        if !leaked.is_empty() {
            return Err(Error::new(
                SqlState::DATA_CORRUPTED,
                format!(
                    "{} mapped pages hold no newest version (e.g. LPN {})",
                    leaked.len(),
                    leaked[0].0
                ),
            ));
        }
        Ok(())
    }
}

impl Engine {
    /// Page space the needed versions of all tables take, as each table's
    /// last GC run measured it (tables never collected count 0).
    pub(crate) fn storage_live_bytes(&self) -> u64 {
        self.gc.lock().live_bytes.values().sum()
    }

    pub(crate) fn gc_micros(&self) -> u64 {
        self.gc.lock().micros()
    }

    /// Validates and applies a GC job's result (see the module docs).
    fn apply_gc(
        &self,
        ts: &TableState,
        gc_tx: ndpdb_formats::TxId,
        result: ModifyResult,
        overflow: Option<OverflowRef>,
    ) -> Result<GcReport> {
        let table = ts.id;
        let mut report = GcReport {
            pages_scanned: result.pages_scanned,
            pages_skipped: result.pages_skipped,
            ..GcReport::default()
        };
        // Victim pages that must stay: a version on them is still needed.
        let mut keep: FxHashSet<Lpn> = FxHashSet::default();
        let mut locked = Vec::with_capacity(result.delta.vids.len());
        for d in &result.delta.vids {
            if self.locks.try_acquire(gc_tx, (table, d.vid)) {
                locked.push(*d);
            } else {
                keep.insert(d.pred.lpn());
            }
        }
        let keys: Vec<_> = locked.iter().map(|d| (table, d.vid)).collect();
        let mut moved_out: FxHashSet<Lpn> = FxHashSet::default();
        let applied = (|| -> Result<Vec<(Lpn, Ppn)>> {
            if !result.delta.l2p.is_empty() {
                self.map_ndp_pages(&result.delta.l2p)?;
            }
            let gate = self.checkpoint_gate.read();
            let lsn = {
                let mut delta = self.delta.write();
                let mut vids = Vec::with_capacity(locked.len());
                // A device job that captured the heads before this apply
                // would certify against the old ones: while one runs on
                // the table, no head moves (a job capturing after this
                // point sees the moves in the passed-along ΔVIDs).
                let device_writing = ts.device_writers_running();
                for d in &locked {
                    if device_writing || ts.vids.head(d.vid) != d.pred {
                        keep.insert(d.pred.lpn());
                        continue;
                    }
                    ts.vids.set(d.vid, d.new);
                    moved_out.insert(d.pred.lpn());
                    delta.push_delta_vid(VidEntry {
                        table,
                        vid: d.vid,
                        head: d.new,
                    });
                    if d.new.is_null() {
                        report.tuples_removed += 1;
                    } else {
                        report.relocated += 1;
                    }
                    vids.push(*d);
                }
                // A victim an earlier run released (and that may be free
                // and written again by now) is not released twice: it is
                // pending, or its LPN is unmapped.
                let freed: Vec<(Lpn, Ppn)> = result
                    .victims
                    .iter()
                    .filter(|(l, p)| {
                        !keep.contains(l)
                            && !self.space.is_pending(*l)
                            && self.l2p.get(*l) == Some(*p)
                    })
                    .copied()
                    .collect();
                if vids.is_empty() && freed.is_empty() && result.delta.l2p.is_empty() {
                    return Ok(Vec::new());
                }
                let lsn = self.wal.append(&[WalRecord::Gc {
                    table,
                    overflow: overflow.map(|o| (o.start, o.bytes, o.crc)),
                    delta: DeltaMaps {
                        l2p: result.delta.l2p.clone(),
                        vids,
                    },
                    freed: freed.clone(),
                }]);
                (lsn, freed)
            };
            drop(gate);
            let (lsn, freed) = lsn;
            if let Err(e) = self.wal.sync(lsn) {
                self.fail();
                return Err(e.into());
            }
            Ok(freed)
        })();
        self.locks.release_all(gc_tx, keys.iter());
        let freed = applied?;
        report.skipped = result.delta.vids.len() as u64 - report.relocated - report.tuples_removed;
        report.pages_freed = freed.len() as u64;
        if !result.victims.is_empty() {
            // The device counts garbage on all victims; scale to the freed.
            report.versions_reclaimed =
                result.garbage_versions * freed.len() as u64 / result.victims.len() as u64;
        }
        report.versions_reclaimed += report.tuples_removed;
        // A victim a head pointed into until this apply waits for the
        // transactions running now (they may have read that head); one
        // whose versions were all superseded below the horizon can be
        // reached by none of them.
        let (moved, cold): (Vec<_>, Vec<_>) =
            freed.iter().partition(|(l, _)| moved_out.contains(l));
        self.space.release(self.txm.next_txid(), &moved, &[]);
        self.space.release(ndpdb_formats::TxId(0), &cold, &[]);
        self.gc.lock().live_bytes.insert(table, result.live_bytes);
        Ok(report)
    }
}

impl Vacuum for Engine {
    fn config(&self) -> &Config {
        &self.config
    }

    fn autovacuum(&self) -> &Arc<Autovacuum> {
        &self.autovacuum
    }

    fn check_ok(&self) -> Result<()> {
        Engine::check_ok(self)
    }

    fn txm(&self) -> &TxManager {
        &self.txm
    }

    fn tables(&self) -> Vec<Arc<TableState>> {
        self.all_tables()
    }

    fn collect_garbage(engine: &Arc<Self>, ts: &Arc<TableState>, cost: GcCost) -> Result<()> {
        Database::internal(engine.clone())
            .collect_garbage(ts, GC_MAX_LIVE_PERCENT, cost)
            .map(|_| ())
    }

    fn reclaim(&self) -> Result<()> {
        Engine::reclaim(self)
    }

    fn counters(&self) -> &EngineCounters {
        &self.counters
    }
}
