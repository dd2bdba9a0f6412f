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
//!      passed → Database::collect_garbage
//!      free pages whose readers have ended (reclaim)
//!  last user handle dropped ──► stop, join (before the final checkpoint)
//! ```
//!
//! The worker holds the engine only while it works (a weak reference
//! otherwise), and the last user handle of a [`Database`] stops and joins
//! it, so dropping a database closes it at once, as before.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use rustc_hash::FxHashMap;

use ndpdb_formats::TableId;

use crate::database::{Database, DbInner, TableState};
use crate::gc::{GcCost, GC_MAX_LIVE_PERCENT};
use crate::stats::EngineCounters;

/// The worker's handle, kept by the engine.
#[derive(Default)]
pub(crate) struct Autovacuum {
    stop: Mutex<bool>,
    wake: Condvar,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Autovacuum {
    /// Starts the worker for `inner` (when its config asks for one).
    pub fn start(inner: &Arc<DbInner>) {
        if !inner.config.autovacuum {
            return;
        }
        let weak = Arc::downgrade(inner);
        let av = inner.autovacuum.clone();
        let naptime = inner.config.autovacuum_naptime;
        let spawned = std::thread::Builder::new()
            .name("ndpdb-autovacuum".into())
            .spawn(move || run(&av, weak, naptime));
        if let Ok(h) = spawned {
            *inner.autovacuum.thread.lock() = Some(h);
        }
    }

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
pub(crate) fn threshold(inner: &DbInner, ts: &TableState) -> u64 {
    let c = &inner.config;
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

fn run(av: &Autovacuum, weak: Weak<DbInner>, naptime: Duration) {
    let mut waited = 0;
    // When each table's last run started. As PostgreSQL's naptime is the
    // least time between two runs on a database, it is here between two
    // on a table: a small table that many transactions update (TPC-C's
    // DISTRICT passes its threshold of 70 versions 40 times a second) is
    // collected once a naptime, not as often as the worker can, each run
    // a device job and, when it frees anything, a WAL record and its sync.
    let mut last_run: FxHashMap<TableId, Instant> = FxHashMap::default();
    while av.nap(naptime) {
        let Some(inner) = weak.upgrade() else { return };
        let db = Database::internal(inner);
        if db.inner.check_ok().is_err() {
            return;
        }
        // The versions that woke the worker become garbage only once no
        // snapshot older than their transactions is in use: let the
        // transactions running now end (short ones do within
        // milliseconds; a long one is waited for at most a naptime).
        // A commit still under way (its versions are counted before it
        // ends) or a long transaction: try again next time, a few times.
        let target = db.inner.txm.next_txid();
        let deadline = Instant::now() + naptime;
        let mut poll = FIRST_HORIZON_POLL;
        while db.inner.txm.horizon() < target {
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
        if db.inner.txm.horizon() < target && waited < PATIENCE {
            waited += 1;
            continue;
        }
        waited = 0;
        for ts in db.inner.all_tables() {
            if av.stopped() {
                return;
            }
            if ts.changes_since_gc.load(Ordering::Relaxed) < threshold(&db.inner, &ts) {
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
            if db.inner.txm.horizon().0 <= ts.gc_horizon.load(Ordering::Relaxed) {
                continue;
            }
            last_run.insert(id, Instant::now());
            let cost = GcCost {
                delay: db.inner.config.autovacuum_cost_delay,
                limit: db.inner.config.autovacuum_cost_limit,
            };
            if db.collect_garbage(&ts, GC_MAX_LIVE_PERCENT, cost).is_err() {
                EngineCounters::inc(&db.inner.counters.gc_failures);
            }
        }
        if db.inner.reclaim().is_err() {
            EngineCounters::inc(&db.inner.counters.gc_failures);
        }
    }
}
