//! Background checkpoints, as PostgreSQL's checkpointer process takes
//! them: a commit that carries the WAL past `checkpoint_wal_bytes` since
//! the last checkpoint only asks for one, and a thread of the engine's
//! own takes it.
//!
//! ```text
//!  commit ──► after_commit: WAL past checkpoint_wal_bytes? ──► request()
//!                                                                │ (requests made while
//!  checkpointer thread: wait ◄──────────────────────────────────┘  one runs: one more)
//!      still past the threshold? ──► Checkpoints::checkpoint_paced
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
//! that failed writing the WAL has failed the engine already. The thread
//! reaches the engine through [`Checkpoints`] (implemented in
//! `crate::db::checkpoint`), not the engine's type.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

use crate::error::Result;
use crate::storage::pk_index::Pace;

/// What the checkpointer needs of the engine it checkpoints.
pub(crate) trait Checkpoints: Send + Sync + 'static {
    /// The thread's handle, kept by the engine.
    fn checkpointer(&self) -> &Arc<Checkpointer>;
    /// Fails once the engine has failed (the thread then ends).
    fn check_ok(&self) -> Result<()>;
    /// Whether the WAL has grown past `checkpoint_wal_bytes` since the
    /// last checkpoint's record.
    fn checkpoint_due(&self) -> bool;
    /// A checkpoint whose PK index files go to the disk at `pace`.
    fn checkpoint_paced(&self, pace: Pace<'_>) -> Result<()>;
    /// Counts a checkpoint that failed (`wal.checkpoint_failures`).
    fn count_checkpoint_failure(&self);
}

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

/// Starts the thread for `engine`.
pub(crate) fn start<E: Checkpoints>(engine: &Arc<E>) {
    let weak = Arc::downgrade(engine);
    let cp = engine.checkpointer().clone();
    let spawned = std::thread::Builder::new()
        .name("ndpdb-checkpointer".into())
        .spawn(move || run(&cp, weak));
    if let Ok(h) = spawned {
        *engine.checkpointer().thread.lock() = Some(h);
    }
}

impl Checkpointer {
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

fn run<E: Checkpoints>(cp: &Checkpointer, weak: Weak<E>) {
    while cp.next() {
        let Some(engine) = weak.upgrade() else { return };
        if engine.check_ok().is_err() {
            return;
        }
        // Requests made before the last checkpoint's record was logged
        // are answered by it.
        if !engine.checkpoint_due() {
            continue;
        }
        if checkpoint(&*engine, cp).is_err() {
            engine.count_checkpoint_failure();
        }
    }
}

/// A background checkpoint: the record, then the PK index files sent to
/// the disk at a spread pace (a WAL sync waits for the writes in flight
/// ahead of it, and nothing waits for this checkpoint).
fn checkpoint<E: Checkpoints>(engine: &E, cp: &Checkpointer) -> Result<()> {
    cp.hurry.store(false, Ordering::Relaxed);
    if cp.state.lock().stopped {
        return Ok(());
    }
    engine.checkpoint_paced(Pace::Spread { hurry: &cp.hurry })
}
