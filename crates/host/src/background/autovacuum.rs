//! Background garbage collection (DESIGN.md §8a), PostgreSQL's
//! autovacuum rule: a table is collected once the versions written to it
//! since its last run pass `autovacuum_threshold + autovacuum_scale_factor
//! × its tuples`.
//!
//! ```text
//!  commit ──► TableState::changes_since_gc += versions written
//!             (passing the threshold wakes the worker at once)
//!  worker (every autovacuum_naptime, or woken):
//!      wait for the transactions running now (horizon polls 1 → 64 ms)
//!      for each table past its threshold, not collected within the
//!      last naptime, and whose last run's horizon the horizon has
//!      passed → Vacuum::collect_garbage (crate::gc)
//!      free pages whose readers have ended (reclaim)
//!  last user handle dropped ──► stop, join (before the final checkpoint)
//! ```
//!
//! The worker holds the engine only while it works (a weak reference
//! otherwise), and the last user handle of a database stops and joins
//! it, so dropping a database closes it at once, as before. It reaches
//! the engine through [`Vacuum`], which `crate::gc` implements: this file
//! knows the rule, not how a run goes.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use rustc_hash::FxHashMap;

use ndpdb_formats::TableId;

use crate::config::Config;
use crate::db::TableState;
use crate::error::Result;
use crate::gc::GcCost;
use crate::mvcc::snapshot::TxManager;
use crate::stats::EngineCounters;

/// What the worker needs of the engine it collects garbage for.
pub(crate) trait Vacuum: Send + Sync + 'static {
    fn config(&self) -> &Config;
    /// The worker's handle, kept by the engine.
    fn autovacuum(&self) -> &Arc<Autovacuum>;
    /// Fails once the engine has failed (the worker then ends).
    fn check_ok(&self) -> Result<()>;
    fn txm(&self) -> &TxManager;
    fn tables(&self) -> Vec<Arc<TableState>>;
    /// One GC run on `ts` at the autovacuum's share of live slots, paced
    /// by `cost`.
    fn collect_garbage(engine: &Arc<Self>, ts: &Arc<TableState>, cost: GcCost) -> Result<()>;
    /// Frees the released pages nobody can read any more.
    fn reclaim(&self) -> Result<()>;
    fn counters(&self) -> &EngineCounters;
}

/// The worker's handle, kept by the engine.
#[derive(Default)]
pub(crate) struct Autovacuum {
    stop: Mutex<bool>,
    wake: Condvar,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// Starts the worker for `engine` (when its config asks for one).
pub(crate) fn start<E: Vacuum>(engine: &Arc<E>) {
    if !engine.config().autovacuum {
        return;
    }
    let weak = Arc::downgrade(engine);
    let av = engine.autovacuum().clone();
    let naptime = engine.config().autovacuum_naptime;
    let spawned = std::thread::Builder::new()
        .name("ndpdb-autovacuum".into())
        .spawn(move || run(&av, weak, naptime));
    if let Ok(h) = spawned {
        *engine.autovacuum().thread.lock() = Some(h);
    }
}

impl Autovacuum {
    fn stopped(&self) -> bool {
        *self.stop.lock()
    }

    /// Wakes the worker before its naptime ends (a table just passed its
    /// threshold).
    pub fn wake(&self) {
        let _g = self.stop.lock();
        self.wake.notify_all();
    }

    /// Stops the worker and waits for it (it finishes a run under way).
    pub fn stop(&self) {
        *self.stop.lock() = true;
        self.wake.notify_all();
        let handle = self.thread.lock().take();
        if let Some(h) = handle {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
    }

    /// Sleeps a naptime; false once stopped.
    fn nap(&self, naptime: Duration) -> bool {
        let mut stop = self.stop.lock();
        if !*stop {
            self.wake.wait_for(&mut stop, naptime);
        }
        !*stop
    }
}

/// Versions written to `ts` since its last GC run that start the next.
pub(crate) fn threshold(c: &Config, ts: &TableState) -> u64 {
    c.autovacuum_threshold + (c.autovacuum_scale_factor * ts.vids.vid_count() as f64) as u64
}

/// Naptimes the worker waits for a long transaction before it collects
/// what it can anyway.
const PATIENCE: u32 = 10;

/// The horizon is polled while the transactions running at a wake-up
/// end: at once for the short ones (milliseconds), then less and less
/// often, so a long one (an analytical query beside OLTP) costs about
/// twenty polls a second, not five hundred, each taking the transaction
/// manager's lock that every begin and commit takes.
const FIRST_HORIZON_POLL: Duration = Duration::from_millis(1);
const LAST_HORIZON_POLL: Duration = Duration::from_millis(64);

fn run<E: Vacuum>(av: &Autovacuum, weak: Weak<E>, naptime: Duration) {
    let mut waited = 0;
    // When each table's last run started. As PostgreSQL's naptime is the
    // least time between two runs on a database, it is here between two
    // on a table: a small table that many transactions update (TPC-C's
    // DISTRICT passes its threshold of 70 versions 40 times a second) is
    // collected once a naptime, not as often as the worker can, each run
    // a device job and, when it frees anything, a WAL record and its sync.
    let mut last_run: FxHashMap<TableId, Instant> = FxHashMap::default();
    while av.nap(naptime) {
        let Some(engine) = weak.upgrade() else { return };
        if engine.check_ok().is_err() {
            return;
        }
        // The versions that woke the worker become garbage only once no
        // snapshot older than their transactions is in use: let the
        // transactions running now end (short ones do within
        // milliseconds; a long one is waited for at most a naptime).
        // A commit still under way (its versions are counted before it
        // ends) or a long transaction: try again next time, a few times.
        let target = engine.txm().next_txid();
        let deadline = Instant::now() + naptime;
        let mut poll = FIRST_HORIZON_POLL;
        while engine.txm().horizon() < target {
            let now = Instant::now();
            if av.stopped() || now >= deadline {
                break;
            }
            std::thread::sleep(poll.min(deadline - now));
            poll = (poll * 2).min(LAST_HORIZON_POLL);
        }
        if av.stopped() {
            return;
        }
        if engine.txm().horizon() < target && waited < PATIENCE {
            waited += 1;
            continue;
        }
        waited = 0;
        for ts in engine.tables() {
            if av.stopped() {
                return;
            }
            if ts.changes_since_gc.load(Ordering::Relaxed) < threshold(engine.config(), &ts) {
                continue;
            }
            let id = ts.id;
            if last_run.get(&id).is_some_and(|t| t.elapsed() < naptime) {
                continue;
            }
            // Garbage is what the horizon leaves behind: below the one
            // the last run collected at, that run took all it could. A
            // long snapshot holding the horizon there makes another run
            // read every page of the table for nothing (PostgreSQL's
            // "dead but not yet removable"): wait for the horizon.
            if engine.txm().horizon().0 <= ts.gc_horizon.load(Ordering::Relaxed) {
                continue;
            }
            last_run.insert(id, Instant::now());
            let cost = GcCost {
                delay: engine.config().autovacuum_cost_delay,
                limit: engine.config().autovacuum_cost_limit,
            };
            if E::collect_garbage(&engine, &ts, cost).is_err() {
                EngineCounters::inc(&engine.counters().gc_failures);
            }
        }
        if engine.reclaim().is_err() {
            EngineCounters::inc(&engine.counters().gc_failures);
        }
    }
}
