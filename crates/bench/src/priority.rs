//! CPU priority of a benchmark's analytical sessions: the OS `nice` value
//! or the scheduling policy of whatever serves them, set the same way on
//! every target.
//!
//! ```text
//!  embedded ndpdb     the client thread itself (the statement runs on it;
//!                     the device jobs and host scan workers it starts
//!                     inherit its nice value)
//!  ndpdb serve        SELECT pg_backend_pid() ─► the connection's thread
//!  PostgreSQL         SELECT pg_backend_pid() ─► the backend process
//! ```
//!
//! On Linux a thread id names one thread for `setpriority(PRIO_PROCESS)`
//! (as for `renice -p`), a process id the process's main thread; a
//! PostgreSQL backend is one thread. Raising a nice value needs no
//! privilege; the server must run on this machine, under this user or
//! with this process allowed to renice it (root).
//!
//! A nice value only weighs a thread's share of the CPU: a nice-19
//! thread still runs out its time slice when a nice-0 thread wakes
//! (Linux's EEVDF scheduler), and OLTP sessions wake thousands of times
//! a second. `SCHED_IDLE` is the stronger setting: the thread runs only
//! while no other thread is ready to run, and a waking one takes the CPU
//! from it at once. Threads it starts inherit the policy, as they do a
//! nice value. Parallel workers a PostgreSQL backend asks for are started
//! by the postmaster and keep their own priority.

use ndpdb_formats::SqlState;
use ndpdb_host::{Error, Result};

use crate::target::Conn;

/// The OS refused to `what` (`{}`: the thread or process) for `pid`:
/// 42501, with the OS's reason.
#[cfg(target_os = "linux")]
fn refused(pid: i32, what: &str) -> Error {
    let os = std::io::Error::last_os_error();
    let whom = match pid {
        0 => "this thread".to_string(),
        pid => format!("pid {pid}"),
    };
    Error::new(
        SqlState::INSUFFICIENT_PRIVILEGE,
        format!("cannot {}: {os}", what.replacen("{}", &whom, 1)),
    )
}

/// Sets the nice value of `pid` (0: the calling thread) to `nice`.
pub fn renice(pid: i32, nice: i32) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: setpriority reads only its arguments.
        let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, pid as libc::id_t, nice) };
        if rc != 0 {
            return Err(refused(
                pid,
                &format!("set the nice value of {{}} to {nice}"),
            ));
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (pid, nice);
        Err(Error::new(
            SqlState::FEATURE_NOT_SUPPORTED,
            "session priorities are set on Linux only",
        ))
    }
}

/// Puts `pid` (0: the calling thread) under the `SCHED_IDLE` policy.
pub fn set_idle(pid: i32) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: sched_setscheduler reads its arguments and `param`.
        let rc = unsafe { libc::sched_setscheduler(pid, libc::SCHED_IDLE, &param) };
        if rc != 0 {
            return Err(refused(pid, "put {} under SCHED_IDLE"));
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        Err(Error::new(
            SqlState::FEATURE_NOT_SUPPORTED,
            "session priorities are set on Linux only",
        ))
    }
}

/// Whether `pid` (0: the calling thread) runs under `SCHED_IDLE`.
pub fn is_idle(pid: i32) -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sched_getscheduler reads its argument.
        unsafe { libc::sched_getscheduler(pid) == libc::SCHED_IDLE }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        false
    }
}

/// How what serves a benchmark's analytical sessions is scheduled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Priority {
    /// As it is (nice 0, the normal policy).
    #[default]
    Normal,
    /// A raised nice value, 1–19.
    Nice(i32),
    /// `SCHED_IDLE`: only while nothing else is ready to run.
    Idle,
}

impl Priority {
    /// Applies to `pid` (0: the calling thread).
    fn apply(self, pid: i32) -> Result<()> {
        match self {
            Priority::Normal | Priority::Nice(0) => Ok(()),
            Priority::Nice(n) => renice(pid, n),
            Priority::Idle => set_idle(pid),
        }
    }

    /// " at nice 19", " under SCHED_IDLE", or nothing.
    pub fn describe(self) -> String {
        match self {
            Priority::Normal | Priority::Nice(0) => String::new(),
            Priority::Nice(n) => format!(" at nice {n}"),
            Priority::Idle => " under SCHED_IDLE".to_string(),
        }
    }
}

/// The nice value of `pid` (0: the calling thread).
pub fn nice_of(pid: i32) -> Option<i32> {
    #[cfg(target_os = "linux")]
    {
        // getpriority may return -1 as a value: errno tells.
        // SAFETY: errno is thread-local; getpriority reads its arguments.
        unsafe {
            *libc::__errno_location() = 0;
            let v = libc::getpriority(libc::PRIO_PROCESS, pid as libc::id_t);
            (*libc::__errno_location() == 0).then_some(v)
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

/// Runs the session's statements at `priority` from now on. An embedded
/// session's statements run on the thread that calls this.
pub fn serve_at(conn: &mut Conn, priority: Priority) -> Result<()> {
    if priority.describe().is_empty() {
        return Ok(());
    }
    match conn {
        Conn::Embedded(_) => priority.apply(0),
        Conn::Wire(_) => {
            let pid = conn.query_i64("SELECT pg_backend_pid()::bigint")?;
            priority.apply(pid as i32)
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// What the embedded target relies on: a thread's raised nice value
    /// holds for the threads it starts (device jobs, PEs, scan workers).
    #[test]
    fn threads_started_by_a_reniced_thread_inherit_its_nice_value() {
        std::thread::spawn(|| {
            let nice = (nice_of(0).unwrap() + 3).min(19);
            renice(0, nice).unwrap();
            assert_eq!(nice_of(0), Some(nice));
            let child = std::thread::spawn(|| nice_of(0)).join().unwrap();
            assert_eq!(child, Some(nice));
            // Lowering it again is refused without privileges; a refusal
            // is an error, never silence.
            if nice_of(0) != Some(-20) && unsafe { libc::geteuid() } != 0 {
                assert!(renice(0, -20).is_err());
            }
        })
        .join()
        .unwrap();
    }

    /// The same for SCHED_IDLE: the analytical session's scan workers and
    /// device jobs are started by its thread.
    #[test]
    fn threads_started_by_an_idle_thread_are_idle() {
        std::thread::spawn(|| {
            assert!(!is_idle(0));
            Priority::Idle.apply(0).unwrap();
            assert!(is_idle(0));
            let child = std::thread::spawn(|| is_idle(0)).join().unwrap();
            assert!(child);
        })
        .join()
        .unwrap();
        assert!(!is_idle(0), "only the thread that asked is idle");
    }
}
