//! The integrated lock table (DESIGN.md §7; update NDP §5.2–§5.3): the
//! shared lock table (SLT) as the head and the host lock table (HLT) as
//! the tail. Exclusive tuple locks with FIFO wait queues, sleeping
//! waiters, deadlock detection and lock timeout; and shared locks, in
//! the HLT only, on keys no device job takes (a foreign key's referenced
//! key: every referencing writer shares it, a deleter of the key takes
//! it exclusively).
//!
//! ```text
//!  SLT bucket of (table, VID):  [ D4 │ H │ … ]     device jobs and host-shared entries
//!                                      │
//!  HLT (table, VID) ─► holder T3 ◄─ T7 ◄─ T9      waiters sleep on a condvar and
//!                                                 are woken when the holder ends
//! ```
//!
//! A host writer first queues in the SLT (joining or appending a
//! host-shared entry, [`ndpdb_slt::HostSide`]), then in the HLT, under
//! one mutex; it holds the tuple when its host-shared entry holds the
//! bucket and it is the HLT holder. Device jobs' SLT locks are released
//! by the host ([`LockTable::release_device`]), which wakes host waiters;
//! so is every other hand-over, so no wake-up depends on polling.
//!
//! Every waiter waits for the holder and for everyone queued ahead of it.
//! Among host transactions the wait-for graph only gains edges when one
//! enqueues, so checking for a cycle at that moment finds every host-only
//! deadlock; the requester that would close it is the victim (SQLSTATE
//! 40P01). Device jobs enqueue without the host's knowledge: a host waiter
//! that has waited `deadlock_timeout` searches the whole graph, device
//! waits included ([`wait_for`]), and is the victim of a cycle it finds.
//! A lock timeout ends a wait with 55P03. Locks are held until commit or
//! abort.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};
use rustc_hash::FxHashMap;

use ndpdb_formats::{SqlState, TableId, TxId, Vid};
use ndpdb_slt::{DeviceTag, HostSide, SharedLockTable, SltError};

use crate::error::{Error, Result};
use crate::interrupt::Interrupt;

mod wait_for;

pub type LockKey = (TableId, Vid);

/// The table id of the keys that lock relation names, which no table
/// has: a CREATE or DROP of a view in a transaction holds its name's key
/// to the end, so that a second CREATE of the name waits for that
/// transaction and then looks again, as PostgreSQL's waits on the unique
/// index of its catalog's names.
pub const RELATION_NAMES: TableId = TableId(u32::MAX);

/// The key that locks relation name `name` (names hashed: two names
/// sharing a key only wait for each other).
pub fn relation_name_key(name: &str) -> LockKey {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    name.hash(&mut h);
    (RELATION_NAMES, Vid(h.finish()))
}

/// How long a lock request waits (PostgreSQL's `lock_timeout` and
/// `deadlock_timeout`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockWait {
    /// `None`: until granted or a deadlock is found.
    pub timeout: Option<Duration>,
    /// After waiting this long, and each time as long again, the waiter
    /// searches the wait-for graph across host and device.
    pub deadlock_timeout: Duration,
}

/// PostgreSQL's default `deadlock_timeout`.
pub const DEFAULT_DEADLOCK_TIMEOUT: Duration = Duration::from_secs(1);

impl Default for LockWait {
    fn default() -> LockWait {
        LockWait {
            timeout: None,
            deadlock_timeout: DEFAULT_DEADLOCK_TIMEOUT,
        }
    }
}

/// How a lock is held or asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockMode {
    Exclusive,
    /// Compatible with other shared holders; HLT only.
    Shared,
}

#[derive(Debug)]
struct Queue {
    /// One exclusive holder, or one or more shared holders.
    holders: Vec<TxId>,
    shared: bool,
    /// FIFO; a holder may wait here too, to upgrade to exclusive.
    waiters: VecDeque<(TxId, LockMode)>,
}

impl Queue {
    fn new(tx: TxId, mode: LockMode) -> Queue {
        Queue {
            holders: vec![tx],
            shared: mode == LockMode::Shared,
            waiters: VecDeque::new(),
        }
    }

    /// Whether `tx` holds the lock in a mode that covers `mode`.
    fn grants(&self, tx: TxId, mode: LockMode) -> bool {
        match mode {
            LockMode::Exclusive => !self.shared && self.holders.first() == Some(&tx),
            LockMode::Shared => self.holders.contains(&tx),
        }
    }

    /// Everyone `t` waits for: the holders other than itself and the
    /// waiters queued ahead of it.
    fn ahead_of(&self, t: TxId) -> impl Iterator<Item = TxId> + '_ {
        self.holders.iter().copied().filter(move |h| *h != t).chain(
            self.waiters
                .iter()
                .map(|(w, _)| *w)
                .take_while(move |w| *w != t),
        )
    }
}

#[derive(Default)]
struct Inner {
    queues: FxHashMap<LockKey, Queue>,
    /// Which key each waiting transaction waits on.
    waiting_on: FxHashMap<TxId, LockKey>,
    /// Host-shared entries and their groups.
    host_side: HostSide,
    /// Keys (held or awaited) per transaction and SLT bucket: a
    /// transaction leaves a bucket's group when its last key there goes.
    slt_refs: FxHashMap<(TxId, usize), u32>,
    /// The key each blocked request waits for — in the HLT, its SLT
    /// bucket or both — until the request returns.
    blocked: FxHashMap<TxId, LockKey>,
    /// The host transaction each device tag in use locks for.
    device_owners: FxHashMap<u16, TxId>,
    /// Device tags whose transaction is committing with controlled lock
    /// violation: host waiters may take their SLT buckets.
    violable: rustc_hash::FxHashSet<u16>,
    /// The shared lock table (swapped when a restarted device is
    /// reattached).
    slt: Option<Arc<SharedLockTable>>,
    /// Tags in use when the device restarted: their jobs and locks died
    /// with it, and so did their transactions' work on the device.
    stale_tags: rustc_hash::FxHashSet<u16>,
}

#[derive(Default)]
pub struct LockTable {
    inner: Mutex<Inner>,
    wake: Condvar,
    /// The table for readers outside the lock manager (bucket indexes,
    /// counters); the same as `Inner::slt`.
    slt: RwLock<Option<Arc<SharedLockTable>>>,
}

fn deadlock(tx: TxId) -> Error {
    Error::new(SqlState::DEADLOCK_DETECTED, "deadlock detected").with_detail(format!(
        "Process of transaction {tx} waits for a lock held in a cycle of transactions."
    ))
}

fn slt_error(e: SltError) -> Error {
    Error::new(e.sqlstate(), e.to_string())
}

/// Outcome of a successful acquire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquired {
    /// Granted without waiting (or already held).
    Immediately,
    /// Granted after waiting for another transaction to finish.
    AfterWait,
}

impl LockTable {
    /// The host lock table alone (no device can lock tuples).
    pub fn new() -> LockTable {
        LockTable::default()
    }

    /// The integrated lock table over `slt`.
    pub fn with_slt(slt: Arc<SharedLockTable>) -> LockTable {
        LockTable {
            inner: Mutex::new(Inner {
                slt: Some(slt.clone()),
                ..Inner::default()
            }),
            wake: Condvar::new(),
            slt: RwLock::new(Some(slt)),
        }
    }

    pub fn slt(&self) -> Option<Arc<SharedLockTable>> {
        self.slt.read().clone()
    }

    /// Moves the host's locks to `new`, the lock table of a restarted
    /// device (its own jobs and their locks died with it). Each bucket
    /// where host transactions queue gets one host-shared entry holding
    /// it, and their groups merge into one (no device entry separates
    /// them any more; the HLT keeps their order per tuple). The tags in
    /// use become stale: their transactions cannot commit
    /// ([`LockTable::tag_is_stale`]); releasing their keys releases what
    /// their jobs locked in the new table, if anything (a lock that died
    /// with the old one is simply not there). Every waiter is woken to
    /// look again.
    ///
    /// `open` yields the new table and runs under the lock manager's
    /// mutex, so no host lock operation falls between the device's
    /// restart being accepted and the table being in place.
    pub fn swap_slt_with(
        &self,
        open: impl FnOnce() -> Result<Option<Arc<SharedLockTable>>>,
    ) -> Result<()> {
        let mut g = self.inner.lock();
        let new = open()?;
        if let (Some(old), Some(n)) = (&g.slt, &new) {
            if old.bucket_count() != n.bucket_count() {
                return Err(Error::new(
                    SqlState::CONNECTION_FAILURE,
                    format!(
                        "the restarted device's shared lock table has {} buckets, the host's {}: restart it with --slt-buckets {}",
                        n.bucket_count(),
                        old.bucket_count(),
                        old.bucket_count()
                    ),
                ));
            }
        }
        match &new {
            Some(n) => g.host_side.rebuild_on(n).map_err(slt_error)?,
            None => {
                g.host_side = HostSide::new();
                g.slt_refs.clear();
            }
        }
        let tags: Vec<u16> = g.device_owners.keys().copied().collect();
        g.stale_tags.extend(tags);
        g.violable.clear();
        g.slt = new.clone();
        *self.slt.write() = new;
        drop(g);
        self.wake.notify_all();
        Ok(())
    }

    /// Whether `tag`'s jobs ran on a device incarnation that is gone.
    pub fn tag_is_stale(&self, tag: DeviceTag) -> bool {
        self.inner.lock().stale_tags.contains(&tag.raw())
    }

    /// Names `owner` as the transaction `tag`'s device jobs lock for (the
    /// deadlock search follows their waits to it); `None` when the tag is
    /// released.
    pub fn set_device_owner(&self, tag: DeviceTag, owner: Option<TxId>) {
        let mut g = self.inner.lock();
        match owner {
            Some(tx) => g.device_owners.insert(tag.raw(), tx),
            None => {
                g.stale_tags.remove(&tag.raw());
                g.device_owners.remove(&tag.raw())
            }
        };
    }

    /// Lets host waiters take the SLT buckets `tag` holds (controlled
    /// lock violation, update NDP §5.4: its transaction has validated and
    /// applied its ΔMaps and commits), or stops that; wakes every waiter.
    pub fn set_violable(&self, tag: DeviceTag, on: bool) {
        let mut g = self.inner.lock();
        if on {
            g.violable.insert(tag.raw());
        } else {
            g.violable.remove(&tag.raw());
        }
        drop(g);
        self.wake.notify_all();
    }

    /// Queues `tx` in `key`'s SLT bucket (once per bucket).
    fn slt_enter(&self, g: &mut Inner, tx: TxId, key: LockKey) -> Result<()> {
        let Some(slt) = g.slt.clone() else {
            return Ok(());
        };
        let idx = slt.index(key);
        let refs = g.slt_refs.entry((tx, idx)).or_insert(0);
        *refs += 1;
        if *refs == 1 {
            if let Err(e) = g.host_side.request(&slt, idx, tx) {
                g.slt_refs.remove(&(tx, idx));
                return Err(slt_error(e));
            }
        }
        Ok(())
    }

    /// Drops one of `tx`'s keys in `key`'s bucket; true if waiters may go.
    fn slt_leave(&self, g: &mut Inner, tx: TxId, key: LockKey) -> Result<bool> {
        let Some(slt) = g.slt.clone() else {
            return Ok(false);
        };
        let idx = slt.index(key);
        let Some(refs) = g.slt_refs.get_mut(&(tx, idx)) else {
            return Ok(false);
        };
        *refs -= 1;
        if *refs > 0 {
            return Ok(false);
        }
        g.slt_refs.remove(&(tx, idx));
        g.host_side.leave(&slt, idx, tx).map_err(slt_error)
    }

    /// Whether `tx`'s host-shared entry holds `key`'s bucket, or may take
    /// it past device jobs whose transactions permit lock violation.
    fn slt_granted(&self, g: &Inner, tx: TxId, key: LockKey) -> Result<bool> {
        let Some(slt) = &g.slt else {
            return Ok(true);
        };
        let idx = slt.index(key);
        if g.host_side.slt_granted(slt, idx, tx).map_err(slt_error)? {
            return Ok(true);
        }
        if g.violable.is_empty() {
            return Ok(false);
        }
        g.host_side
            .slt_granted_violating(slt, idx, tx, |t| g.violable.contains(&t.raw()))
            .map_err(slt_error)
    }

    /// Acquires the exclusive lock on `key` for `tx`, sleeping while
    /// others (host transactions or device jobs) hold it.
    pub fn acquire(&self, tx: TxId, key: LockKey, timeout: Option<Duration>) -> Result<Acquired> {
        let wait = LockWait {
            timeout,
            ..LockWait::default()
        };
        self.acquire_in(tx, key, wait, true, None)
    }

    /// [`Self::acquire`]; with `use_slt = false` only the HLT is used —
    /// for a key whose SLT bucket one of `tx`'s own update jobs holds.
    /// A wait also ends when `interrupt` fires (checked every 50 ms).
    pub fn acquire_in(
        &self,
        tx: TxId,
        key: LockKey,
        wait: LockWait,
        use_slt: bool,
        interrupt: Option<&Interrupt>,
    ) -> Result<Acquired> {
        self.acquire_mode(tx, key, LockMode::Exclusive, wait, use_slt, interrupt)
    }

    /// Acquires `key` in `mode`: shared locks are HLT only (`use_slt` is
    /// ignored for them), for keys no device job locks. An exclusive
    /// request of a shared holder upgrades once the other sharers leave.
    pub fn acquire_mode(
        &self,
        tx: TxId,
        key: LockKey,
        mode: LockMode,
        wait: LockWait,
        use_slt: bool,
        interrupt: Option<&Interrupt>,
    ) -> Result<Acquired> {
        let use_slt = use_slt && mode == LockMode::Exclusive;
        let mut g = self.inner.lock();
        let already = Self::holds_any(&g, tx, key);
        if !already && use_slt {
            self.slt_enter(&mut g, tx, key)?;
        }
        let slt_ok = |g: &Inner| -> Result<bool> {
            if use_slt {
                self.slt_granted(g, tx, key)
            } else {
                Ok(true)
            }
        };
        // A lock table that cannot be read (a remote one whose device is
        // down) fails the request, which then leaves every queue it
        // joined: nothing of it may stay behind to block others.
        let failed = |g: &mut Inner, e: Error| -> Result<Acquired> {
            if !already {
                self.give_up(g, tx, key, already, use_slt);
            }
            g.waiting_on.remove(&tx);
            g.blocked.remove(&tx);
            Err(e)
        };
        if Self::grant_if_free(&mut g, tx, key, mode) {
            match slt_ok(&g) {
                Ok(true) => return Ok(Acquired::Immediately),
                Ok(false) => {}
                Err(e) => return failed(&mut g, e),
            }
        }
        if !Self::holds_in(&g, tx, key, mode) {
            if let Some(q) = g.queues.get_mut(&key) {
                q.waiters.push_back((tx, mode));
            }
            g.waiting_on.insert(tx, key);
            if Self::closes_cycle(&g, tx) {
                self.give_up(&mut g, tx, key, already, use_slt);
                return Err(deadlock(tx));
            }
        }
        g.blocked.insert(tx, key);
        let start = Instant::now();
        let deadline = wait.timeout.map(|t| start + t);
        let deadlock_timeout = wait.deadlock_timeout.max(Duration::from_millis(1));
        let mut search_at = start + deadlock_timeout;
        const INTERRUPT_SLICE: Duration = Duration::from_millis(50);
        loop {
            let mut until = deadline.map_or(search_at, |d| d.min(search_at));
            if interrupt.is_some() {
                until = until.min(Instant::now() + INTERRUPT_SLICE);
            }
            self.wake.wait_until(&mut g, until);
            if Self::holds_in(&g, tx, key, mode) {
                match slt_ok(&g) {
                    Ok(true) => {
                        g.waiting_on.remove(&tx);
                        g.blocked.remove(&tx);
                        return Ok(Acquired::AfterWait);
                    }
                    Ok(false) => {}
                    Err(e) => return failed(&mut g, e),
                }
            }
            if let Some(Err(e)) = interrupt.map(Interrupt::check) {
                self.give_up(&mut g, tx, key, already, use_slt);
                return Err(e);
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                self.give_up(&mut g, tx, key, already, use_slt);
                return Err(Error::new(
                    SqlState::LOCK_NOT_AVAILABLE,
                    "canceling statement due to lock timeout",
                ));
            }
            if now >= search_at {
                match self.in_deadlock(&g, tx) {
                    Ok(true) => {
                        self.give_up(&mut g, tx, key, already, use_slt);
                        return Err(deadlock(tx));
                    }
                    Ok(false) => {}
                    Err(e) => return failed(&mut g, e),
                }
                search_at = now + deadlock_timeout;
            }
        }
    }

    /// Whether `tx`, waiting, is in a cycle of the whole wait-for graph
    /// (found by two searches in a row, see [`wait_for`]).
    fn in_deadlock(&self, g: &Inner, tx: TxId) -> Result<bool> {
        Ok(self.cycle(g, tx)?.is_some())
    }

    /// A cycle through `tx` found by two searches in a row.
    fn cycle(&self, g: &Inner, tx: TxId) -> Result<Option<Vec<TxId>>> {
        let slt = g.slt.as_deref();
        if wait_for::WaitFor::read(g, slt)?
            .cycle_through(tx)?
            .is_none()
        {
            return Ok(None);
        }
        wait_for::WaitFor::read(g, slt)?.cycle_through(tx)
    }

    /// For a transaction whose update or lock job runs on the device (the
    /// caller polls it, so it waits in no host queue): whether that job
    /// should give way to end a deadlock. A cycle with a host waiter in
    /// it is that waiter's to end (it searches too); a cycle of device
    /// jobs only ends with its youngest transaction's job.
    pub fn device_job_is_deadlock_victim(&self, tx: TxId) -> Result<bool> {
        let g = self.inner.lock();
        let Some(cycle) = self.cycle(&g, tx)? else {
            return Ok(false);
        };
        if cycle.iter().any(|t| g.blocked.contains_key(t)) {
            return Ok(false);
        }
        Ok(cycle.iter().max() == Some(&tx))
    }

    /// A waiter stops waiting for `key` (timeout or deadlock victim); an
    /// HLT lock it was handed meanwhile passes on.
    fn give_up(&self, g: &mut Inner, tx: TxId, key: LockKey, already: bool, use_slt: bool) {
        // A lock held before this request (a shared holder's upgrade)
        // stays held, and its SLT entry too; one handed over meanwhile
        // passes on.
        let mut wake = if already {
            Self::dequeue(g, tx, key)
        } else {
            Self::hand_over(g, tx, key)
        };
        g.waiting_on.remove(&tx);
        g.blocked.remove(&tx);
        if !already && use_slt {
            // A failing SLT here leaves the entry; the statement fails anyway.
            wake |= self.slt_leave(g, tx, key).unwrap_or(true);
        }
        if wake {
            self.wake.notify_all();
        }
    }

    /// Takes the lock only if it is free (or already ours) — in the HLT
    /// and, with an SLT, in its bucket.
    pub fn try_acquire(&self, tx: TxId, key: LockKey) -> bool {
        let mut g = self.inner.lock();
        if Self::holds(&g, tx, key) {
            return self.slt_granted(&g, tx, key).unwrap_or(false);
        }
        if g.queues.contains_key(&key) || self.slt_enter(&mut g, tx, key).is_err() {
            return false;
        }
        if self.slt_granted(&g, tx, key).unwrap_or(false) {
            Self::grant_if_free(&mut g, tx, key, LockMode::Exclusive);
            return true;
        }
        let wake = self.slt_leave(&mut g, tx, key).unwrap_or(true);
        drop(g);
        if wake {
            self.wake.notify_all();
        }
        false
    }

    /// Releases a device job's SLT lock on `key`'s bucket (at the job's
    /// commit or abort) and wakes host waiters.
    pub fn release_device(&self, key: LockKey, tag: DeviceTag) -> Result<()> {
        self.release_device_keys(std::iter::once(key), tag)
    }

    /// Releases a device job's locks on `keys` (one release per SLT
    /// bucket: keys sharing a bucket share the lock) and wakes waiters.
    pub fn release_device_keys(
        &self,
        keys: impl Iterator<Item = LockKey>,
        tag: DeviceTag,
    ) -> Result<()> {
        let g = self.inner.lock();
        let Some(slt) = &g.slt else {
            return Ok(());
        };
        let mut buckets: Vec<usize> = keys.map(|k| slt.index(k)).collect();
        buckets.sort_unstable();
        buckets.dedup();
        let mut wake = false;
        let mut first_err = None;
        for idx in buckets {
            match g.host_side.release_device(slt, idx, tag) {
                Ok(w) => wake |= w,
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        drop(g);
        if wake {
            self.wake.notify_all();
        }
        first_err.map_or(Ok(()), |e| Err(slt_error(e)))
    }

    /// Releases `tx`'s HLT hold on `key` (and any request of it queued
    /// there) and grants the waiters that may go; true if one took it.
    fn hand_over(g: &mut Inner, tx: TxId, key: LockKey) -> bool {
        let Some(q) = g.queues.get_mut(&key) else {
            return false;
        };
        q.holders.retain(|h| *h != tx);
        q.waiters.retain(|(w, _)| *w != tx);
        Self::promote(g, key)
    }

    /// Grants the waiters at the front of `key`'s queue that fit beside
    /// the holders (FIFO: a waiter that must wait keeps those behind it
    /// waiting too); drops the queue when nobody is left. True if anyone
    /// was granted.
    fn promote(g: &mut Inner, key: LockKey) -> bool {
        let Some(q) = g.queues.get_mut(&key) else {
            return false;
        };
        let mut granted = Vec::new();
        while let Some(&(w, mode)) = q.waiters.front() {
            let fits = match mode {
                LockMode::Shared => q.holders.is_empty() || q.shared,
                LockMode::Exclusive => q.holders.is_empty() || q.holders == [w],
            };
            if !fits {
                break;
            }
            q.waiters.pop_front();
            if !q.holders.contains(&w) {
                q.holders.push(w);
            }
            q.shared = mode == LockMode::Shared;
            granted.push(w);
            if mode == LockMode::Exclusive {
                break;
            }
        }
        if q.holders.is_empty() && q.waiters.is_empty() {
            g.queues.remove(&key);
        }
        for w in &granted {
            // The new holder no longer waits (it may not have woken yet).
            g.waiting_on.remove(w);
        }
        !granted.is_empty()
    }

    /// Grants the lock in `mode` if that fits without waiting; true if
    /// `tx` holds it so now.
    fn grant_if_free(g: &mut Inner, tx: TxId, key: LockKey, mode: LockMode) -> bool {
        let Some(q) = g.queues.get_mut(&key) else {
            g.queues.insert(key, Queue::new(tx, mode));
            return true;
        };
        if q.grants(tx, mode) {
            return true;
        }
        match mode {
            LockMode::Shared if q.shared && q.waiters.is_empty() => {
                q.holders.push(tx);
                true
            }
            LockMode::Exclusive if q.holders == [tx] => {
                q.shared = false;
                true
            }
            _ => false,
        }
    }

    /// Whether `tx` holds `key` exclusively.
    fn holds(g: &Inner, tx: TxId, key: LockKey) -> bool {
        Self::holds_in(g, tx, key, LockMode::Exclusive)
    }

    fn holds_in(g: &Inner, tx: TxId, key: LockKey, mode: LockMode) -> bool {
        g.queues.get(&key).is_some_and(|q| q.grants(tx, mode))
    }

    fn holds_any(g: &Inner, tx: TxId, key: LockKey) -> bool {
        Self::holds_in(g, tx, key, LockMode::Shared)
    }

    /// Takes `tx`'s requests out of `key`'s queue; true if waiters
    /// behind them were granted.
    fn dequeue(g: &mut Inner, tx: TxId, key: LockKey) -> bool {
        g.waiting_on.remove(&tx);
        let Some(q) = g.queues.get_mut(&key) else {
            return false;
        };
        q.waiters.retain(|(w, _)| *w != tx);
        Self::promote(g, key)
    }

    /// Whether `start`'s new wait closes a cycle in the wait-for graph.
    fn closes_cycle(g: &Inner, start: TxId) -> bool {
        let mut stack = vec![start];
        let mut seen = HashSet::new();
        while let Some(t) = stack.pop() {
            let Some(key) = g.waiting_on.get(&t) else {
                continue;
            };
            let Some(q) = g.queues.get(key) else { continue };
            if !q.waiters.iter().any(|(w, _)| *w == t) {
                continue;
            }
            // t waits for the holders and everyone ahead of it.
            for next in q.ahead_of(t) {
                if next == start {
                    return true;
                }
                if seen.insert(next) {
                    stack.push(next);
                }
            }
        }
        false
    }

    /// Releases `tx`'s locks and hands each to its first waiter.
    pub fn release_all<'k>(&self, tx: TxId, keys: impl IntoIterator<Item = &'k LockKey>) {
        let mut keys = keys.into_iter().peekable();
        if keys.peek().is_none() {
            return;
        }
        let mut g = self.inner.lock();
        let mut woke = false;
        for key in keys {
            woke |= Self::hand_over(&mut g, tx, *key);
            // An SLT that fails here is corrupt; waiters re-check on wake.
            woke |= self.slt_leave(&mut g, tx, *key).unwrap_or(true);
        }
        drop(g);
        if woke {
            self.wake.notify_all();
        }
    }

    /// Whether a host transaction holds or awaits `key`.
    pub fn is_locked(&self, key: LockKey) -> bool {
        self.inner.lock().queues.contains_key(&key)
    }

    /// Number of locked keys (for tests and stats).
    pub fn locked_keys(&self) -> usize {
        self.inner.lock().queues.len()
    }

    /// Lock requests waiting now (for a host holder, a device job or both).
    pub fn waiting(&self) -> usize {
        self.inner.lock().blocked.len()
    }
}

#[cfg(test)]
mod tests;
