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
use std::sync::Arc;
use std::time::{Duration, Instant};

use ndpdb_formats::{TableId, Vid};

use crate::bucket::{Bucket, DeviceTag, Slot};
use crate::error::{Result, SltError};
use crate::region::Region;
use crate::words::{RemoteWords, Words};

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
    words: Words,
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
        let words = region.words().len() as u64;
        let n = Self::check_header(region.words()[0].load(Ordering::Acquire))?;
        if n + 1 != words {
            return Err(SltError::Corrupted(format!(
                "header claims {n} buckets in a region of {words} words"
            )));
        }
        Ok(Self::with_words(Words::Local(region), n))
    }

    /// Attaches to a table in another process's memory that only messages
    /// reach (a device on another machine); its header is checked.
    pub fn remote(words: Arc<dyn RemoteWords>) -> Result<SharedLockTable> {
        let n = Self::check_header(words.load(0)?)?;
        Ok(Self::with_words(Words::Remote(words), n))
    }

    /// The bucket count a header word states, if it is a valid header.
    fn check_header(header: u128) -> Result<u64> {
        let (magic, n) = (header as u64, (header >> 64) as u64);
        if magic != MAGIC {
            return Err(SltError::Corrupted("bad header magic".into()));
        }
        if !n.is_power_of_two() || n > MAX_BUCKETS {
            return Err(SltError::Corrupted(format!("header claims {n} buckets")));
        }
        Ok(n)
    }

    /// Whether this table is reached by messages rather than mapped.
    pub fn is_remote(&self) -> bool {
        matches!(self.words, Words::Remote(_))
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
        Ok(Self::with_words(Words::Local(region), n))
    }

    fn with_words(words: Words, n: u64) -> SharedLockTable {
        SharedLockTable {
            words,
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
        self.words.bytes()
    }

    /// The bucket a key hashes to.
    pub fn index(&self, key: LockKey) -> usize {
        let k = ((key.0 .0 as u64) << 40) ^ key.1 .0;
        let h = k.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((h ^ (h >> 29)) & self.mask) as usize
    }

    /// The word of bucket `idx`.
    fn word_of(&self, idx: usize) -> usize {
        1 + (idx & self.mask as usize)
    }

    /// The local word of bucket `idx` (tests that forge shared memory).
    #[cfg(test)]
    pub(crate) fn word(&self, idx: usize) -> &portable_atomic::AtomicU128 {
        self.words.local(self.word_of(idx))
    }

    /// The bucket at `idx`, validated (shared memory is untrusted).
    pub fn load_index(&self, idx: usize) -> Result<Bucket> {
        Self::checked(idx, Bucket(self.words.load(self.word_of(idx))?))
    }

    fn checked(idx: usize, b: Bucket) -> Result<Bucket> {
        if b.is_compact() {
            Ok(b)
        } else {
            Err(SltError::Corrupted(format!(
                "bucket {idx} has a gap: {b:?}"
            )))
        }
    }

    /// Every bucket that is not empty, as (index, bucket), read in one
    /// pass (one message when the table is remote).
    pub fn occupied(&self) -> Result<Vec<(usize, Bucket)>> {
        let n = self.bucket_count();
        self.words
            .occupied(n)?
            .into_iter()
            .map(|(i, w)| {
                if i >= n as u64 {
                    return Err(SltError::Corrupted(format!("bucket {i} of a table of {n}")));
                }
                Ok((i as usize, Self::checked(i as usize, Bucket(w))?))
            })
            .collect()
    }

    /// The raw word at `word` (0: the header): what the owner of a table
    /// answers a remote SLT_LOAD with. `None` past the table's end.
    pub fn word_load(&self, word: u64) -> Result<Option<u128>> {
        if word > self.mask + 1 {
            return Ok(None);
        }
        self.words.load(word as usize).map(Some)
    }

    /// Compare-and-swap at `word` on behalf of a remote actor (SLT_CAS).
    /// The header cannot be changed; a bucket value that is not compact is
    /// refused as corrupt. `None` past the table's end.
    pub fn word_compare_exchange(
        &self,
        word: u64,
        old: u128,
        new: u128,
    ) -> Result<Option<Result<(), u128>>> {
        if word == 0 || word > self.mask + 1 {
            return Ok(None);
        }
        Self::checked(word as usize - 1, Bucket(new))?;
        self.count_cas(self.words.compare_exchange(word as usize, old, new)?)
            .map(Some)
    }

    fn count_cas(&self, r: Result<(), u128>) -> Result<Result<(), u128>> {
        self.cas_attempts.fetch_add(1, Ordering::Relaxed);
        if r.is_err() {
            self.cas_failures.fetch_add(1, Ordering::Relaxed);
        }
        Ok(r)
    }

    pub fn load(&self, key: LockKey) -> Result<Bucket> {
        self.load_index(self.index(key))
    }

    /// CAS on bucket `idx`; on failure, the bucket it holds instead.
    fn cas(&self, idx: usize, old: Bucket, new: Bucket) -> Result<Result<(), Bucket>> {
        let r = self
            .words
            .compare_exchange(self.word_of(idx), old.0, new.0)?;
        Ok(self.count_cas(r)?.map_err(Bucket))
    }

    /// Applies `f` to bucket `idx` with a CAS loop. `f` returns the new
    /// bucket and a result, or `Err` to stop without writing. A failed
    /// CAS returns the current bucket, so a retry needs no second load
    /// (one message per attempt when the table is remote).
    pub(crate) fn update<T>(
        &self,
        idx: usize,
        f: impl FnMut(Bucket) -> Result<(Option<Bucket>, T)>,
    ) -> Result<T> {
        self.update_guessing(idx, None, f)
    }

    /// [`Self::update`] starting from `guess` instead of a load when the
    /// table is remote: a right guess saves the load's round trip, a wrong
    /// one costs nothing more (the failed CAS brings the bucket back, and
    /// a guess `f` refuses or leaves unchanged is replaced by a load).
    pub(crate) fn update_guessing<T>(
        &self,
        idx: usize,
        guess: Option<Bucket>,
        mut f: impl FnMut(Bucket) -> Result<(Option<Bucket>, T)>,
    ) -> Result<T> {
        let guess = guess.filter(|_| self.is_remote());
        let mut guessed = guess.is_some();
        let mut old = match guess {
            Some(g) => g,
            None => self.load_index(idx)?,
        };
        loop {
            let step = f(old);
            let decided = match &step {
                Ok((None, _)) => true,
                Ok((Some(new), _)) => *new == old,
                Err(_) => true,
            };
            if guessed && decided {
                // Only a CAS checks a guess: decide on the real bucket.
                guessed = false;
                old = self.load_index(idx)?;
                continue;
            }
            let (new, out) = step?;
            match new {
                None => return Ok(out),
                Some(new) if new == old => return Ok(out),
                Some(new) => match self.cas(idx, old, new)? {
                    Ok(()) => return Ok(out),
                    Err(now) => {
                        guessed = false;
                        old = Self::checked(idx, now)?;
                    }
                },
            }
        }
    }

    /// Appends `slot` to bucket `idx` unless it is already queued there;
    /// returns its position, or `None` when the queue is full for its
    /// kind (device requests leave the last slot to the host).
    pub fn enqueue_index(&self, idx: usize, slot: Slot) -> Result<Option<usize>> {
        // Most buckets are free.
        self.update_guessing(idx, Some(Bucket::EMPTY), |b| {
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
        // Most often the host's entry is alone in its bucket.
        let alone = Bucket::EMPTY.push(Slot::Host).map(|(b, _)| b);
        self.update_guessing(idx, alone.filter(|_| nth == 0), |b| match b.nth_host(nth) {
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

    /// A remote table over the words of a local one: what a device
    /// answers SLT_LOAD / SLT_CAS / SLT_OCCUPIED with.
    struct Forward(Arc<SharedLockTable>, AtomicU64);

    impl RemoteWords for Forward {
        fn load(&self, word: u64) -> Result<u128> {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.0
                .word_load(word)?
                .ok_or_else(|| SltError::Unavailable(format!("word {word}")))
        }
        fn compare_exchange(&self, word: u64, old: u128, new: u128) -> Result<Result<(), u128>> {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.0
                .word_compare_exchange(word, old, new)?
                .ok_or_else(|| SltError::Unavailable(format!("word {word}")))
        }
        fn occupied(&self) -> Result<Vec<(u64, u128)>> {
            Ok(self
                .0
                .occupied()?
                .into_iter()
                .map(|(i, b)| (i as u64, b.0))
                .collect())
        }
    }

    #[test]
    fn a_remote_table_shares_the_owners_buckets() {
        let owner = Arc::new(SharedLockTable::in_process(64).unwrap());
        let forward = Arc::new(Forward(owner.clone(), AtomicU64::new(0)));
        let remote = SharedLockTable::remote(forward.clone()).unwrap();
        // A host entry taken and dropped on a free bucket: one message each
        // (the guesses "free" and "alone" save the loads).
        let before = forward.1.load(Ordering::Relaxed);
        let free = remote.index((TableId(9), Vid(9)));
        remote.enqueue_index(free, Slot::Host).unwrap();
        remote.remove_host_entry_index(free, 0).unwrap();
        assert_eq!(forward.1.load(Ordering::Relaxed) - before, 2);
        // The host side's lock on a free bucket: its entry heads the
        // queue, known without a load.
        let before = forward.1.load(Ordering::Relaxed);
        let mut host = crate::HostSide::new();
        host.request(&remote, free, ndpdb_formats::TxId(5)).unwrap();
        assert!(host
            .slt_granted(&remote, free, ndpdb_formats::TxId(5))
            .unwrap());
        host.leave(&remote, free, ndpdb_formats::TxId(5)).unwrap();
        assert_eq!(forward.1.load(Ordering::Relaxed) - before, 2);
        assert!(owner.load_index(free).unwrap().is_empty());
        assert!(remote.is_remote() && remote.bucket_count() == 64 && remote.bytes() == 0);
        let k = (TableId(2), Vid(11));
        let i = remote.index(k);
        assert_eq!(i, owner.index(k));
        // The owner's device job holds the key; the remote host queues.
        owner
            .acquire_device(k, tag(4), Duration::from_secs(1))
            .unwrap();
        assert_eq!(remote.enqueue_index(i, Slot::Host).unwrap(), Some(1));
        assert_eq!(
            remote.occupied().unwrap(),
            vec![(i, owner.load(k).unwrap())]
        );
        assert_eq!(
            remote.release_index(i, Slot::Device(tag(4))).unwrap(),
            Slot::Host
        );
        assert_eq!(owner.load(k).unwrap().head(), Slot::Host);
        // A CAS that lost a race retries on the value it got back.
        owner.enqueue_index(i, Slot::Device(tag(5))).unwrap();
        assert_eq!(
            remote.remove_host_entry_index(i, 0).unwrap(),
            Slot::Device(tag(5))
        );
        // The header cannot be written and a gap is refused remotely.
        assert_eq!(owner.word_compare_exchange(0, 0, 1).unwrap(), None);
        assert!(owner.word_compare_exchange(1, 0, 1 << 16).is_err());
        assert!(owner.word_load(64).unwrap().is_some(), "the last bucket");
        assert_eq!(owner.word_load(65).unwrap(), None);
        // A header that is not one is refused at attach.
        struct Junk;
        impl RemoteWords for Junk {
            fn load(&self, _: u64) -> Result<u128> {
                Ok(7)
            }
            fn compare_exchange(&self, _: u64, _: u128, _: u128) -> Result<Result<(), u128>> {
                Ok(Ok(()))
            }
            fn occupied(&self) -> Result<Vec<(u64, u128)>> {
                Ok(vec![(1 << 40, 1)])
            }
        }
        assert!(matches!(
            SharedLockTable::remote(Arc::new(Junk)),
            Err(SltError::Corrupted(_))
        ));
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
        a.words.local(0).store(7, Ordering::Release);
        assert!(matches!(
            SharedLockTable::open_shm(&name),
            Err(SltError::Corrupted(_))
        ));
    }
}
