//! Background checkpoints, as PostgreSQL's checkpointer process takes
//! them: a commit that carries the WAL past `checkpoint_wal_bytes` since
//! the last checkpoint only asks for one, and a thread of the engine's
//! own takes it.
//!
//! ```text
//!  commit ──► after_commit: WAL past checkpoint_wal_bytes? ──► request()
//!                                                                │ (requests made while
//!  checkpointer thread: wait ◄──────────────────────────────────┘  one runs: one more)
//!      still past the threshold? ──► DbInner::checkpoint
//!          flush (commits go on) · gate: flush the rest, log the record
//!          · PK index files and manifest (commits go on), sent to
//!            the disk at a spread pace (`Pace::Spread`)
//!  last user handle dropped ──► stop, join (before the final checkpoint)
//! ```
//!
//! Before, the committing session took the checkpoint itself, and every
//! session that committed before the record was logged took one more:
//! at 10 TPC-C warehouses all four clients wrote the PK index files one
//! after another (ORDER-LINE's base, 1.5–1.9 s each), and no transaction
//! committed meanwhile. Now no session waits for a checkpoint but for the
//! gate, while the remainder of the delta buffer is flushed and the
//! record logged (tens of milliseconds).
//!
//! Like the autovacuum worker, the thread holds the engine only while it
//! works (a weak reference otherwise). A checkpoint that fails is counted
//! (`wal.checkpoint_failures`) and taken again at the next request; one
//! that failed writing the WAL has failed the engine already.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

use crate::database::DbInner;
use crate::error::Result;
use crate::pk_index::Pace;
use crate::stats::EngineCounters;

#[derive(Default)]
struct State {
    requested: bool,
    stopped: bool,
}

/// The checkpointer's handle, kept by the engine.
#[derive(Default)]
pub(crate) struct Checkpointer {
    state: Mutex<State>,
    wake: Condvar,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Set when someone waits for the files a spread checkpoint is
    /// writing (a shutdown, a checkpoint taken in the foreground).
    hurry: AtomicBool,
}

impl Checkpointer {
    /// Starts the thread for `inner`.
    pub fn start(inner: &Arc<DbInner>) {
        let weak = Arc::downgrade(inner);
        let cp = inner.checkpointer.clone();
        let spawned = std::thread::Builder::new()
            .name("ndpdb-checkpointer".into())
            .spawn(move || run(&cp, weak));
        if let Ok(h) = spawned {
            *inner.checkpointer.thread.lock() = Some(h);
        }
    }

    /// Asks for a checkpoint; false when no thread takes it (none was
    /// started, or it stopped): the caller then takes it itself.
    pub fn request(&self) -> bool {
        if self.thread.lock().is_none() {
            return false;
        }
        let mut s = self.state.lock();
        if s.stopped {
            return false;
        }
        s.requested = true;
        self.wake.notify_one();
        true
    }

    /// Stops the thread and waits for it (it finishes a checkpoint under
    /// way).
    pub fn stop(&self) {
        // Stopped before hurried: a checkpoint that starts after its
        // hurry flag is cleared sees one or the other.
        self.state.lock().stopped = true;
        self.hurry();
        self.wake.notify_all();
        let handle = self.thread.lock().take();
        if let Some(h) = handle {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
    }

    /// Makes a spread checkpoint under way finish at the disk's speed.
    pub fn hurry(&self) {
        self.hurry.store(true, Ordering::Relaxed);
    }

    /// Waits for a request; false once stopped.
    fn next(&self) -> bool {
        let mut s = self.state.lock();
        while !s.requested && !s.stopped {
            self.wake.wait(&mut s);
        }
        s.requested = false;
        !s.stopped
    }
}

fn run(cp: &Checkpointer, weak: Weak<DbInner>) {
    while cp.next() {
        let Some(inner) = weak.upgrade() else { return };
        if inner.check_ok().is_err() {
            return;
        }
        // Requests made before the last checkpoint's record was logged
        // are answered by it.
        if inner.wal.bytes_since_checkpoint() < inner.config.checkpoint_wal_bytes {
            continue;
        }
        if checkpoint(&inner, cp).is_err() {
            EngineCounters::inc(&inner.counters.checkpoint_failures);
        }
    }
}

/// A background checkpoint: the record, then the PK index files sent to
/// the disk at a spread pace (a WAL sync waits for the writes in flight
/// ahead of it, and nothing waits for this checkpoint).
fn checkpoint(inner: &DbInner, cp: &Checkpointer) -> Result<()> {
    cp.hurry.store(false, Ordering::Relaxed);
    if cp.state.lock().stopped {
        return Ok(());
    }
    let (logged, removed) = inner.checkpoint_record()?;
    inner.save_pk_indexes(logged.next_txid, Pace::Spread { hurry: &cp.hurry });
    removed
}
