//! Engine settings.

use std::time::Duration;

use ndpdb_link::{LinkModel, NvmProfile};

#[derive(Clone, Debug)]
pub struct Config {
    /// Byte budget of the host buffer pool (default 64 MiB).
    pub buffer_pool_bytes: usize,
    /// Delta-buffer size that triggers a flush & append (default 1 MiB).
    pub delta_buffer_bytes: usize,
    /// How long a lock request may wait; `None` waits until granted or a
    /// deadlock is found (PostgreSQL's `lock_timeout = 0`).
    pub lock_timeout: Option<Duration>,
    /// How long a lock request waits before it searches for a deadlock
    /// across host and device (PostgreSQL's `deadlock_timeout`, 1 s).
    pub deadlock_timeout: Duration,
    /// WAL size that triggers a checkpoint (default 64 MiB).
    pub checkpoint_wal_bytes: u64,
    /// Link preset of the embedded device's data plane.
    pub link: LinkModel,
    /// Processing elements of the embedded device (0 = one per CPU).
    pub device_pes: usize,
    /// CPUs the device's PEs are pinned to (empty: not pinned).
    pub device_cpus: Vec<usize>,
    /// Emulated NVM latency of the embedded device's store.
    pub device_nvm: NvmProfile,
    /// With the device store in RADOS: objects an NDP scan calls at once
    /// (each runs its share of the scan in its OSD).
    pub rados_objects_in_flight: usize,
    /// Buckets of the shared lock table (16 bytes each; rounded up to a
    /// power of two). 0 = no SLT: host locks only, no device locking.
    pub slt_buckets: usize,
    /// How long a device PE waits for one tuple lock when `lock_timeout`
    /// is unset: a backstop. Deadlocks are found by the searches that
    /// host waiters and the callers of device jobs run after
    /// `deadlock_timeout` (the job then fails with 55P03).
    pub ndp_lock_wait: Duration,
    /// Background garbage collection (PostgreSQL's `autovacuum`).
    pub autovacuum: bool,
    /// How often the background worker looks for work.
    pub autovacuum_naptime: Duration,
    /// A table is collected once the versions written to it since its
    /// last run pass `autovacuum_threshold + autovacuum_scale_factor ×
    /// its tuples` (PostgreSQL's defaults: 50 and 0.2).
    pub autovacuum_threshold: u64,
    pub autovacuum_scale_factor: f64,
    /// Background runs pause this long each time their work adds up to
    /// `autovacuum_cost_limit` (PostgreSQL's defaults: 2 ms and 200).
    pub autovacuum_cost_delay: Duration,
    pub autovacuum_cost_limit: u32,
}

impl Config {
    /// The device's PE count after resolving 0 to the CPU count.
    pub fn device_pes_effective(&self) -> usize {
        ndpdb_link::model::effective_pes(self.device_pes, &self.device_cpus)
    }
}

/// Default threads of a host scan (`SET host_workers`): PostgreSQL's
/// default parallel workers per gather.
pub const DEFAULT_HOST_WORKERS: usize = 2;

impl Default for Config {
    fn default() -> Config {
        Config {
            buffer_pool_bytes: 64 << 20,
            delta_buffer_bytes: 1 << 20,
            lock_timeout: None,
            deadlock_timeout: crate::mvcc::locks::DEFAULT_DEADLOCK_TIMEOUT,
            checkpoint_wal_bytes: 64 << 20,
            link: LinkModel::UNTHROTTLED,
            device_pes: 0,
            device_cpus: Vec::new(),
            device_nvm: NvmProfile::OFF,
            rados_objects_in_flight: 64,
            slt_buckets: 1 << 16,
            ndp_lock_wait: Duration::from_secs(5),
            autovacuum: true,
            autovacuum_naptime: Duration::from_secs(1),
            autovacuum_threshold: 50,
            autovacuum_scale_factor: 0.2,
            autovacuum_cost_delay: Duration::from_millis(2),
            autovacuum_cost_limit: 200,
        }
    }
}
