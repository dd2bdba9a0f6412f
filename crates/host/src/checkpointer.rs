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
//!            at a raised nice value (`pk_index_writer_nice`)
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
        if checkpoint(&inner).is_err() {
            EngineCounters::inc(&inner.counters.checkpoint_failures);
        }
    }
}

/// A background checkpoint: the record on this thread, at the sessions'
/// priority (commits wait for its gate), the PK index files on a thread
/// at `pk_index_writer_nice`, sent to the disk at a spread pace (a WAL
/// sync waits for the writes in flight ahead of it).
fn checkpoint(inner: &DbInner) -> Result<()> {
    let (logged, removed) = inner.checkpoint_record()?;
    at_nice(inner.config.pk_index_writer_nice, "ndpdb-pk-writer", || {
        inner.save_pk_indexes(logged.next_txid, Pace::Spread)
    });
    removed
}

/// Runs `work` on a thread of its own whose nice value is raised to
/// `nice` (Linux keeps one per thread; a thread it starts inherits it),
/// and waits for it. Raising a nice value needs no privilege, lowering it
/// back would, hence the thread. On other systems, where the value
/// belongs to the process, and when no thread can be started, `work`
/// runs on the caller at the caller's priority.
pub(crate) fn at_nice<T: Send>(nice: i32, name: &str, work: impl FnOnce() -> T + Send) -> T {
    if nice <= 0 || !cfg!(target_os = "linux") {
        return work();
    }
    let mut work = Some(work);
    let ran = std::thread::scope(|s| {
        let slot = &mut work;
        let spawned = std::thread::Builder::new()
            .name(name.into())
            .spawn_scoped(s, move || {
                raise_nice(nice);
                slot.take().map(|w| w())
            });
        spawned.ok().map(|h| h.join())
    });
    match ran {
        Some(Ok(Some(out))) => out,
        Some(Err(panic)) => std::panic::resume_unwind(panic),
        // No thread started: the work is still here.
        _ => match work.take() {
            Some(w) => w(),
            None => unreachable!("a started thread takes the work"),
        },
    }
}

/// Raises the calling thread's nice value to `nice` (never lowers it).
fn raise_nice(nice: i32) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: getpriority and setpriority read only their arguments;
        // `who` 0 is the calling thread on Linux. A failure leaves the
        // value as it was, which is only a missed optimisation.
        unsafe {
            let current = libc::getpriority(libc::PRIO_PROCESS, 0);
            if current < nice {
                libc::setpriority(libc::PRIO_PROCESS, 0, nice);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn nice_here() -> i32 {
        // SAFETY: reads only its arguments; `who` 0 is this thread.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }
    }

    #[test]
    fn work_runs_at_the_raised_nice_value_and_the_caller_keeps_its_own() {
        let before = nice_here();
        let caller = std::thread::current().id();
        let want = (before + 5).min(19);
        let (nice, thread, name) = at_nice(want, "nice-test", || {
            let t = std::thread::current();
            (nice_here(), t.id(), t.name().map(String::from))
        });
        assert_eq!(nice, want);
        assert_ne!(thread, caller);
        assert_eq!(name.as_deref(), Some("nice-test"));
        assert_eq!(nice_here(), before);
    }

    #[test]
    fn nice_zero_runs_the_work_on_the_caller() {
        let caller = std::thread::current().id();
        assert_eq!(at_nice(0, "unused", || std::thread::current().id()), caller);
    }

    #[test]
    fn a_panic_in_the_work_reaches_the_caller() {
        let caught = std::panic::catch_unwind(|| at_nice(5, "nice-panic", || panic!("boom")));
        let payload = caught.expect_err("the panic is passed on");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
    }
}
