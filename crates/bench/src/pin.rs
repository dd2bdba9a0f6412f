//! Pinning benchmark threads to CPUs, so host threads and device PEs can
//! run on disjoint CPU sets (DESIGN.md §10).
//!
//! ```text
//!  --host-cpus 0     embedded ndpdb   the client thread (its statements run on it)
//!                    ndpdb serve      the connection's thread  ┐ by
//!                    PostgreSQL       the backend process      ┘ pg_backend_pid()
//! ```
//!
//! A session of a server is pinned where its statements run, as an
//! embedded session is, so the same flag places the same work on every
//! target. The server must run on this machine: `pg_backend_pid()` names
//! a process or thread here.

use std::sync::OnceLock;

use ndpdb_formats::SqlState;
use ndpdb_host::{Error, Result};

use crate::target::Conn;

static HOST_CPUS: OnceLock<Vec<usize>> = OnceLock::new();

/// Sets the CPUs host benchmark threads run on (first call wins).
pub fn set_host_cpus(cpus: &[usize]) {
    let _ = HOST_CPUS.set(cpus.to_vec());
}

pub fn host_cpus() -> Vec<usize> {
    HOST_CPUS.get().cloned().unwrap_or_default()
}

/// Runs `f` on a thread allowed on every CPU of the machine, whatever
/// the caller is pinned to (threads it starts inherit that): host-only
/// scans run their workers unpinned, as PostgreSQL's parallel workers do.
pub fn unpinned<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET and
            // sched_setaffinity only touch the set passed to them.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                let n = std::thread::available_parallelism().map_or(1, |n| n.get());
                let all = (libc::sysconf(libc::_SC_NPROCESSORS_CONF).max(1) as usize).max(n);
                for cpu in 0..all.min(libc::CPU_SETSIZE as usize) {
                    libc::CPU_SET(cpu, &mut set);
                }
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            }
            f()
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// The host CPU of the `i`-th host thread or session, if host CPUs are set.
fn host_cpu(i: usize) -> Option<usize> {
    let cpus = host_cpus();
    (!cpus.is_empty()).then(|| cpus[i % cpus.len()])
}

/// Pins what serves the `i`-th host session of a server target — the
/// PostgreSQL backend or `ndpdb serve`'s connection thread, found by
/// `pg_backend_pid()` — to that session's host CPU, if host CPUs are set.
/// An embedded session runs on its client thread:
/// [`pin_host_thread`] on that thread places it.
pub fn pin_session(conn: &mut Conn, i: usize) -> Result<()> {
    match host_cpu(i) {
        Some(cpu) => pin_session_to(conn, cpu),
        None => Ok(()),
    }
}

/// Pins what serves a server session to `cpu` (nothing for an embedded
/// session).
fn pin_session_to(conn: &mut Conn, cpu: usize) -> Result<()> {
    match conn {
        Conn::Embedded(_) => Ok(()),
        Conn::Wire(_) => confine(conn, &[cpu]),
    }
}

/// Confines a session to `cpus` from now on, where its statements run:
/// an embedded session's client thread — call this on that thread; the
/// scan workers and device jobs it starts inherit the set — or a
/// server's backend or connection thread. PostgreSQL's parallel workers,
/// started by the postmaster, are not confined.
pub fn confine(conn: &mut Conn, cpus: &[usize]) -> Result<()> {
    if cpus.is_empty() {
        return Ok(());
    }
    let pid = match conn {
        Conn::Embedded(_) => 0,
        Conn::Wire(_) => conn.query_i64("SELECT pg_backend_pid()::bigint")? as i32,
    };
    set_affinity(pid, cpus)
}

/// Pins `pid` (0: the calling thread; else a thread or a process of
/// this machine) to `cpus`.
fn set_affinity(pid: i32, cpus: &[usize]) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET and
        // sched_setaffinity only touch the set passed to them.
        let rc = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &cpu in cpus {
                libc::CPU_SET(cpu.min(libc::CPU_SETSIZE as usize - 1), &mut set);
            }
            libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set)
        };
        if rc != 0 {
            return Err(Error::new(
                SqlState::INSUFFICIENT_PRIVILEGE,
                format!(
                    "cannot pin pid {pid} to CPUs {cpus:?}: {}",
                    std::io::Error::last_os_error()
                ),
            ));
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (pid, cpus);
        Err(Error::new(
            SqlState::FEATURE_NOT_SUPPORTED,
            "sessions are pinned to CPUs on Linux only",
        ))
    }
}

/// Pins the calling thread (the `i`-th host thread) if host CPUs are set.
pub fn pin_host_thread(i: usize) {
    if let Some(id) = host_cpu(i) {
        core_affinity::set_for_current(core_affinity::CoreId { id });
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::target::{endpoint, Backend, Target};

    /// The CPUs `pid` may run on.
    fn affinity(pid: i32) -> Vec<usize> {
        // SAFETY: sched_getaffinity writes only the set passed to it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(
                libc::sched_getaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
                0
            );
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect()
        }
    }

    /// `--host-cpus` on a server target: the connection thread that runs
    /// the session's statements is pinned, the bench's own thread is not.
    #[test]
    fn a_server_session_is_pinned_where_its_statements_run() {
        let config = ndpdb_host::Config::default();
        let backend = Backend::Wire(endpoint(&Target::NdpdbServer(None), config, None).unwrap());
        let mut conn = backend.connect().unwrap();
        let mine = affinity(0);
        let pid = conn.query_i64("SELECT pg_backend_pid()::bigint").unwrap() as i32;
        let cpu = *affinity(pid).last().unwrap();
        pin_session_to(&mut conn, cpu).unwrap();
        assert_eq!(affinity(pid), vec![cpu]);
        assert_eq!(affinity(0), mine, "the client thread is left as it was");
        // The session still answers from the pinned thread.
        assert_eq!(conn.query_i64("SELECT (40 + 2)::bigint").unwrap(), 42);
        assert_eq!(
            conn.query_i64("SELECT pg_backend_pid()::bigint").unwrap() as i32,
            pid
        );
    }

    /// `--olap-cpus`: an embedded session is confined on its own thread,
    /// and the threads it starts (scan workers, device jobs) inherit it.
    #[test]
    fn an_embedded_session_confined_keeps_its_threads_on_the_set() {
        let dir = tempfile::tempdir().unwrap();
        let db = ndpdb_embedded::open_with(dir.path(), ndpdb_host::Config::default()).unwrap();
        let mut conn = Backend::Embedded(db).connect().unwrap();
        let outside = affinity(0);
        let cpu = *outside.last().unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                confine(&mut conn, &[cpu]).unwrap();
                assert_eq!(affinity(0), vec![cpu]);
                let child = std::thread::spawn(|| affinity(0)).join().unwrap();
                assert_eq!(child, vec![cpu]);
                assert_eq!(conn.query_i64("SELECT (40 + 2)::bigint").unwrap(), 42);
            });
        });
        assert_eq!(
            affinity(0),
            outside,
            "only the session's thread is confined"
        );
    }
}
