//! The shared lock table: a hash table of 16-byte lock queues in a shared
//! region, changed only by 128-bit compare-and-swap (DESIGN.md §7;
//! update NDP §5.1, Fig. 11; cache-coherent SLT §3).
//!
//! ```text
//!   word 0: header  magic "NDPSLT01" | bucket count
//!   word 1 + hash(table, VID) mod buckets:  [holder, waiter, …, host-reserved]
//! ```
//!
//! Every operation is load → pure bucket transition → CAS, retried when
//! another actor changed the bucket in between. Two keys that hash to one
//! bucket share a lock: a false conflict, never a correctness problem.
//! Device PEs poll with backoff; host waiters are woken by the host lock
//! manager, which performs every release (see [`crate::host`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use portable_atomic::AtomicU128;

use ndpdb_formats::{TableId, Vid};

use crate::bucket::{Bucket, DeviceTag, Slot};
use crate::error::{Result, SltError};
use crate::region::Region;

/// A tuple lock key.
pub type LockKey = (TableId, Vid);

const MAGIC: u64 = u64::from_le_bytes(*b"NDPSLT01");
/// The largest table accepted (1 Gi buckets = 16 GiB).
const MAX_BUCKETS: u64 = 1 << 30;

/// Counters of the sync plane.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SltStats {
    pub cas_attempts: u64,
    pub cas_failures: u64,
}

/// Outcome of withdrawing a device request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Withdrawn {
    Withdrawn,
    /// It had become the holder: the job keeps the lock.
    Granted,
    NotQueued,
}

/// How a device request was granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceGrant {
    Immediately,
    AfterWait,
}

pub struct SharedLockTable {
    region: Region,
    mask: u64,
    cas_attempts: AtomicU64,
    cas_failures: AtomicU64,
}

impl SharedLockTable {
    /// A table of at least `buckets` buckets in process memory.
    pub fn in_process(buckets: usize) -> Result<SharedLockTable> {
        let n = Self::bucket_count_for(buckets)?;
        Self::init(Region::anonymous(n as usize + 1)?, n)
    }

    /// Creates the table in `/dev/shm/<name>` for a device in its own process.
    pub fn create_shm(name: &str, buckets: usize) -> Result<SharedLockTable> {
        let n = Self::bucket_count_for(buckets)?;
        Self::init(Region::create_shm(name, n as usize + 1)?, n)
    }

    /// Creates the table of this device process in `/dev/shm` under a
    /// fresh name (`ndpdb-slt-<pid>-<nanos>`, so a host of an earlier run
    /// cannot mistake it for the one it mapped), after removing the
    /// regions of device processes that died without cleaning up.
    /// Returns the table and the name hosts map it by.
    pub fn create_for_device(buckets: usize) -> Result<(SharedLockTable, String)> {
        remove_dead_regions();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let name = format!("{DEVICE_REGION_PREFIX}{}-{nanos}", std::process::id());
        Ok((Self::create_shm(&name, buckets)?, name))
    }

    /// Attaches to a table another process created; its header is checked.
    pub fn open_shm(name: &str) -> Result<SharedLockTable> {
        let region = Region::open_shm(name)?;
        let header = region.words()[0].load(Ordering::Acquire);
        let (magic, n) = (header as u64, (header >> 64) as u64);
        if magic != MAGIC {
            return Err(SltError::Corrupted("bad header magic".into()));
        }
        if !n.is_power_of_two() || n > MAX_BUCKETS || n + 1 != region.words().len() as u64 {
            return Err(SltError::Corrupted(format!(
                "header claims {n} buckets in a region of {} words",
                region.words().len()
            )));
        }
        Ok(Self::with_region(region, n))
    }

    fn bucket_count_for(buckets: usize) -> Result<u64> {
        let n = (buckets.max(1) as u64).next_power_of_two();
        if n > MAX_BUCKETS {
            return Err(SltError::Unsupported(format!(
                "{buckets} buckets (at most {MAX_BUCKETS})"
            )));
        }
        Ok(n)
    }

    fn init(region: Region, n: u64) -> Result<SharedLockTable> {
        region.words()[0].store(MAGIC as u128 | (n as u128) << 64, Ordering::Release);
        Ok(Self::with_region(region, n))
    }

    fn with_region(region: Region, n: u64) -> SharedLockTable {
        SharedLockTable {
            region,
            mask: n - 1,
            cas_attempts: AtomicU64::new(0),
            cas_failures: AtomicU64::new(0),
        }
    }

    pub fn bucket_count(&self) -> usize {
        self.mask as usize + 1
    }

    /// Bytes of shared memory the table occupies.
    pub fn bytes(&self) -> usize {
        self.region.bytes()
    }

    /// The bucket a key hashes to.
    pub fn index(&self, key: LockKey) -> usize {
        let k = ((key.0 .0 as u64) << 40) ^ key.1 .0;
        let h = k.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((h ^ (h >> 29)) & self.mask) as usize
    }

    pub(crate) fn word(&self, idx: usize) -> &AtomicU128 {
        &self.region.words()[1 + (idx & self.mask as usize)]
    }

    /// The bucket at `idx`, validated (shared memory is untrusted).
    pub fn load_index(&self, idx: usize) -> Result<Bucket> {
        let b = Bucket(self.word(idx).load(Ordering::Acquire));
        if b.is_compact() {
            Ok(b)
        } else {
            Err(SltError::Corrupted(format!(
                "bucket {idx} has a gap: {b:?}"
            )))
        }
    }

    pub fn load(&self, key: LockKey) -> Result<Bucket> {
        self.load_index(self.index(key))
    }

    fn cas(&self, idx: usize, old: Bucket, new: Bucket) -> bool {
        self.cas_attempts.fetch_add(1, Ordering::Relaxed);
        let ok = self
            .word(idx)
            .compare_exchange(old.0, new.0, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if !ok {
            self.cas_failures.fetch_add(1, Ordering::Relaxed);
        }
        ok
    }

    /// Applies `f` to bucket `idx` with a CAS loop. `f` returns the new
    /// bucket and a result, or `Err` to stop without writing.
    pub(crate) fn update<T>(
        &self,
        idx: usize,
        mut f: impl FnMut(Bucket) -> Result<(Option<Bucket>, T)>,
    ) -> Result<T> {
        loop {
            let old = self.load_index(idx)?;
            let (new, out) = f(old)?;
            match new {
                None => return Ok(out),
                Some(new) if new == old => return Ok(out),
                Some(new) => {
                    if self.cas(idx, old, new) {
                        return Ok(out);
                    }
                }
            }
        }
    }

    /// Appends `slot` to bucket `idx` unless it is already queued there;
    /// returns its position, or `None` when the queue is full for its
    /// kind (device requests leave the last slot to the host).
    pub fn enqueue_index(&self, idx: usize, slot: Slot) -> Result<Option<usize>> {
        self.update(idx, |b| {
            if let (Slot::Device(_), Some(p)) = (slot, b.position(slot)) {
                return Ok((None, Some(p)));
            }
            Ok(match b.push(slot) {
                Some((nb, pos)) => (Some(nb), Some(pos)),
                None => (None, None),
            })
        })
    }

    /// The holder of bucket `idx` releases it; returns the new holder.
    pub fn release_index(&self, idx: usize, holder: Slot) -> Result<Slot> {
        self.update(idx, |b| {
            if b.head() != holder {
                return Err(SltError::NotHolder(format!(
                    "{holder:?} releasing bucket {idx} held by {:?}",
                    b.head()
                )));
            }
            let nb = b.pop_head();
            Ok((Some(nb), nb.head()))
        })
    }

    /// A waiting device request gives up. A request that was granted in
    /// the meantime stays (the job holds the lock and the host releases
    /// it with the job's others, waking host waiters): every change of a
    /// bucket's head to a host entry goes through the host.
    pub fn withdraw_device_index(&self, idx: usize, tag: DeviceTag) -> Result<Withdrawn> {
        self.update(idx, |b| {
            Ok(match b.position(Slot::Device(tag)) {
                Some(0) => (None, Withdrawn::Granted),
                Some(p) => (Some(b.remove_at(p)), Withdrawn::Withdrawn),
                None => (None, Withdrawn::NotQueued),
            })
        })
    }

    /// Removes the `nth` host-shared entry of bucket `idx` (its group of
    /// host transactions emptied); returns the holder afterwards.
    pub fn remove_host_entry_index(&self, idx: usize, nth: usize) -> Result<Slot> {
        self.update(idx, |b| match b.nth_host(nth) {
            Some(p) => {
                let nb = b.remove_at(p);
                Ok((Some(nb), nb.head()))
            }
            None => Err(SltError::NotHolder(format!(
                "bucket {idx} has no host entry #{nth}: {b:?}"
            ))),
        })
    }

    /// Device side: queue `tag` on `key`'s bucket and poll (with backoff)
    /// until it holds the lock or `timeout` passes (then the request is
    /// withdrawn). A full queue is retried until the timeout as well.
    pub fn acquire_device(
        &self,
        key: LockKey,
        tag: DeviceTag,
        timeout: Duration,
    ) -> Result<DeviceGrant> {
        self.acquire_device_unless(key, tag, timeout, &|| false)
    }

    /// [`Self::acquire_device`] that also gives up (withdrawing its request)
    /// as soon as `stop` returns true — a job whose other PEs failed.
    pub fn acquire_device_unless(
        &self,
        key: LockKey,
        tag: DeviceTag,
        timeout: Duration,
        stop: &dyn Fn() -> bool,
    ) -> Result<DeviceGrant> {
        let idx = self.index(key);
        let start = Instant::now();
        let mut backoff = Backoff::default();
        let pos = loop {
            if let Some(p) = self.enqueue_index(idx, Slot::Device(tag))? {
                break p;
            }
            if start.elapsed() >= timeout {
                return Err(SltError::Timeout);
            }
            if stop() {
                return Err(SltError::Cancelled);
            }
            backoff.snooze();
        };
        if pos == 0 {
            return Ok(DeviceGrant::Immediately);
        }
        loop {
            match self.load_index(idx)?.position(Slot::Device(tag)) {
                Some(0) => return Ok(DeviceGrant::AfterWait),
                Some(_) => {}
                None => {
                    return Err(SltError::Corrupted(format!(
                        "queued request of device tag {} vanished from bucket {idx}",
                        tag.raw()
                    )))
                }
            }
            let stopped = stop();
            if stopped || start.elapsed() >= timeout {
                return match self.withdraw_device_index(idx, tag)? {
                    // Granted between the check and the withdrawal.
                    Withdrawn::Granted => Ok(DeviceGrant::AfterWait),
                    _ if stopped => Err(SltError::Cancelled),
                    _ => Err(SltError::Timeout),
                };
            }
            backoff.snooze();
        }
    }

    pub fn stats(&self) -> SltStats {
        SltStats {
            cas_attempts: self.cas_attempts.load(Ordering::Relaxed),
            cas_failures: self.cas_failures.load(Ordering::Relaxed),
        }
    }
}

/// Spin, then yield, then sleep briefly: how a PE polls a bucket.
#[derive(Default)]
pub struct Backoff {
    step: u32,
}

impl Backoff {
    pub fn snooze(&mut self) {
        if self.step < 7 {
            for _ in 0..(1u32 << self.step) {
                std::hint::spin_loop();
            }
        } else if self.step < 12 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(20));
        }
        self.step = self.step.saturating_add(1);
    }
}

/// Names of the regions [`SharedLockTable::create_for_device`] creates.
const DEVICE_REGION_PREFIX: &str = "ndpdb-slt-";

/// Removes `/dev/shm/ndpdb-slt-<pid>-…` regions whose process no longer
/// runs (a device killed before it could unlink its region).
pub fn remove_dead_regions() {
    let Ok(dir) = std::fs::read_dir("/dev/shm") else {
        return;
    };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(DEVICE_REGION_PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(n: u16) -> DeviceTag {
        DeviceTag::new(n).unwrap()
    }

    #[test]
    fn device_requests_queue_in_order_and_hand_over() {
        let t = SharedLockTable::in_process(1024).unwrap();
        let k = (TableId(1), Vid(7));
        let i = t.index(k);
        assert_eq!(
            t.acquire_device(k, tag(2), Duration::from_secs(1)).unwrap(),
            DeviceGrant::Immediately
        );
        // Re-requesting is idempotent.
        assert_eq!(t.enqueue_index(i, Slot::Device(tag(2))).unwrap(), Some(0));
        assert_eq!(t.enqueue_index(i, Slot::Host).unwrap(), Some(1));
        assert_eq!(t.enqueue_index(i, Slot::Device(tag(3))).unwrap(), Some(2));
        assert!(t.release_index(i, Slot::Host).is_err(), "not the holder");
        assert_eq!(
            t.release_index(i, Slot::Device(tag(2))).unwrap(),
            Slot::Host
        );
        assert_eq!(
            t.remove_host_entry_index(i, 0).unwrap(),
            Slot::Device(tag(3))
        );
        assert_eq!(
            t.acquire_device(k, tag(3), Duration::from_secs(1)).unwrap(),
            DeviceGrant::Immediately
        );
        t.release_index(i, Slot::Device(tag(3))).unwrap();
        assert!(t.load(k).unwrap().is_empty());
        assert!(t.stats().cas_attempts >= 6);
    }

    #[test]
    fn a_device_wait_times_out_and_withdraws() {
        let t = SharedLockTable::in_process(16).unwrap();
        let k = (TableId(1), Vid(1));
        let i = t.index(k);
        t.enqueue_index(i, Slot::Host).unwrap();
        let e = t
            .acquire_device(k, tag(9), Duration::from_millis(5))
            .unwrap_err();
        assert_eq!(e, SltError::Timeout);
        assert_eq!(t.load(k).unwrap().len(), 1, "request withdrawn");
    }

    #[test]
    fn a_full_queue_refuses_devices_but_not_the_host() {
        let t = SharedLockTable::in_process(16).unwrap();
        let i = 3;
        for n in 2..9 {
            assert!(t.enqueue_index(i, Slot::Device(tag(n))).unwrap().is_some());
        }
        assert_eq!(t.enqueue_index(i, Slot::Device(tag(50))).unwrap(), None);
        assert_eq!(t.enqueue_index(i, Slot::Host).unwrap(), Some(7));
    }

    #[test]
    fn corrupt_buckets_and_headers_are_errors() {
        let t = SharedLockTable::in_process(16).unwrap();
        t.word(5).store(1 << 16, Ordering::Release);
        assert!(matches!(t.load_index(5), Err(SltError::Corrupted(_))));
        assert!(matches!(
            t.enqueue_index(5, Slot::Host),
            Err(SltError::Corrupted(_))
        ));

        let name = format!("ndpdb-slt-test-{}", std::process::id());
        let a = SharedLockTable::create_shm(&name, 64).unwrap();
        let b = SharedLockTable::open_shm(&name).unwrap();
        assert_eq!(b.bucket_count(), 64);
        a.enqueue_index(9, Slot::Host).unwrap();
        assert_eq!(b.load_index(9).unwrap().head(), Slot::Host);
        a.region.words()[0].store(7, Ordering::Release);
        assert!(matches!(
            SharedLockTable::open_shm(&name),
            Err(SltError::Corrupted(_))
        ));
    }
}
