//! Engine settings.

use std::time::Duration;

use ndpdb_link::LinkModel;

#[derive(Clone, Debug)]
pub struct Config {
    /// Byte budget of the host buffer pool (default 64 MiB).
    pub buffer_pool_bytes: usize,
    /// Delta-buffer size that triggers a flush & append (default 1 MiB).
    pub delta_buffer_bytes: usize,
    /// How long a lock request may wait; `None` waits until granted or a
    /// deadlock is found (PostgreSQL's `lock_timeout = 0`).
    pub lock_timeout: Option<Duration>,
    /// WAL size that triggers a checkpoint (default 64 MiB).
    pub checkpoint_wal_bytes: u64,
    /// Link preset of the embedded device's data plane.
    pub link: LinkModel,
    /// Processing elements of the embedded device (0 = one per CPU).
    pub device_pes: usize,
    /// CPUs the device's PEs are pinned to (empty: not pinned).
    pub device_cpus: Vec<usize>,
}

impl Config {
    /// The device's PE count after resolving 0 to the CPU count.
    pub fn device_pes_effective(&self) -> usize {
        match (self.device_pes, self.device_cpus.len()) {
            (0, 0) => std::thread::available_parallelism().map_or(1, |n| n.get()),
            (0, n) => n,
            (n, _) => n,
        }
    }
}

impl Default for Config {
    fn default() -> Config {
        Config {
            buffer_pool_bytes: 64 << 20,
            delta_buffer_bytes: 1 << 20,
            lock_timeout: None,
            checkpoint_wal_bytes: 64 << 20,
            link: LinkModel::UNTHROTTLED,
            device_pes: 0,
            device_cpus: Vec::new(),
        }
    }
}
