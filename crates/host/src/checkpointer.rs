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
//!          · PK index files and manifest (commits go on), on a thread
//!            at nice 10
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
//! Merging a large PK index's delta into a new base (ORDER-LINE's at 10
//! warehouses, 1–1.4 CPU-seconds) would take a CPU from the sessions
//! meanwhile: TPC-C's rate fell by a third for the 1–2 s it took. The
//! files are written on a thread of their own at nice 10
//! ([`save_pk_indexes_in_background`]), which gives way to the sessions
//! and still runs ahead of analytical sessions under SCHED_IDLE.
//!
//! Like the autovacuum worker, the thread holds the engine only while it
//! works (a weak reference otherwise). A checkpoint that fails is counted
//! (`wal.checkpoint_failures`) and taken again at the next request; one
//! that failed writing the WAL has failed the engine already.

use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

use crate::database::DbInner;
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
        self.state.lock().stopped = true;
        self.wake.notify_all();
        let handle = self.thread.lock().take();
        if let Some(h) = handle {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
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
        if inner.checkpoint().is_err() {
            EngineCounters::inc(&inner.counters.checkpoint_failures);
        }
    }
}

/// Nice value of the thread that writes the PK index files.
const PK_SAVE_NICE: i32 = 10;

/// `DbInner::save_pk_indexes` on a thread at nice [`PK_SAVE_NICE`];
/// returns when it is done. The caller's own priority stays as it is
/// (raising a nice value again needs a privilege).
pub(crate) fn save_pk_indexes_in_background(inner: &DbInner, next_txid: ndpdb_formats::TxId) {
    std::thread::scope(|s| {
        let saver = std::thread::Builder::new()
            .name("ndpdb-pk-save".into())
            .spawn_scoped(s, || {
                lower_priority(PK_SAVE_NICE);
                inner.save_pk_indexes(next_txid)
            });
        match saver {
            Ok(saver) => {
                if let Err(panic) = saver.join() {
                    std::panic::resume_unwind(panic)
                }
            }
            // No thread to be had: written at the caller's priority.
            Err(_) => inner.save_pk_indexes(next_txid),
        }
    })
}

/// Sets the calling thread's nice value (Linux: `setpriority` on
/// thread 0 is this thread alone). Elsewhere, or refused: unchanged.
fn lower_priority(nice: i32) {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority reads only its arguments.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, nice);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}
