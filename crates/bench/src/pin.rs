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

/// Pins the calling thread (the `i`-th host thread) if host CPUs are set.
pub fn pin_host_thread(i: usize) {
    let cpus = host_cpus();
    if !cpus.is_empty() {
        core_affinity::set_for_current(core_affinity::CoreId {
            id: cpus[i % cpus.len()],
        });
    }
}
