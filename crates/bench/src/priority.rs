//! CPU priority of a benchmark's analytical sessions: the OS `nice` of
//! whatever serves them, set the same way on every target.
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

use ndpdb_formats::SqlState;
use ndpdb_host::{Error, Result};

use crate::target::Conn;

/// Sets the nice value of `pid` (0: the calling thread) to `nice`.
pub fn renice(pid: i32, nice: i32) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: setpriority reads only its arguments.
        let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, pid as libc::id_t, nice) };
        if rc != 0 {
            return Err(Error::new(
                SqlState("42501"),
                format!(
                    "cannot set the nice value of {} to {nice}: {}",
                    if pid == 0 {
                        "this thread".to_string()
                    } else {
                        format!("pid {pid}")
                    },
                    std::io::Error::last_os_error()
                ),
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

/// Runs the session's statements at `nice` from now on. An embedded
/// session's statements run on the thread that calls this.
pub fn serve_at_nice(conn: &mut Conn, nice: i32) -> Result<()> {
    if nice == 0 {
        return Ok(());
    }
    match conn {
        Conn::Embedded(_) => renice(0, nice),
        Conn::Wire(_) => {
            let pid = conn.query_i64("SELECT pg_backend_pid()::bigint")?;
            renice(pid as i32, nice)
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
}
