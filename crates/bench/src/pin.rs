//! Pinning benchmark threads to CPUs, so host threads and device PEs can
//! run on disjoint CPU sets (DESIGN.md §10).

use std::sync::OnceLock;

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

/// Pins the calling thread (the `i`-th host thread) if host CPUs are set.
pub fn pin_host_thread(i: usize) {
    let cpus = host_cpus();
    if !cpus.is_empty() {
        core_affinity::set_for_current(core_affinity::CoreId {
            id: cpus[i % cpus.len()],
        });
    }
}
