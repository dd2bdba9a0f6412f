//! The host lock table (HLT, DESIGN.md §7): exclusive tuple locks with
//! FIFO wait queues, sleeping waiters, deadlock detection and lock timeout.
//!
//! ```text
//!  (table, VID) ─► holder T3 ◄─ T7 ◄─ T9      waiters sleep on a condvar and
//!                                             are woken when the holder ends
//! ```
//!
//! Every waiter waits for the holder and for everyone queued ahead of it.
//! The wait-for graph only gains edges when a transaction enqueues, so
//! checking for a cycle at that moment finds every deadlock; the requester
//! that would close the cycle is the victim (SQLSTATE 40P01). A lock
//! timeout ends a wait with 55P03. Locks are held until commit or abort.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use ndpdb_formats::{SqlState, TableId, TxId, Vid};

use crate::error::{Error, Result};

pub type LockKey = (TableId, Vid);

#[derive(Debug)]
struct Queue {
    holder: TxId,
    waiters: VecDeque<TxId>,
}

#[derive(Default)]
struct Inner {
    queues: HashMap<LockKey, Queue>,
    /// Which key each waiting transaction waits on.
    waiting_on: HashMap<TxId, LockKey>,
}

#[derive(Default)]
pub struct LockTable {
    inner: Mutex<Inner>,
    wake: Condvar,
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
    pub fn new() -> LockTable {
        LockTable::default()
    }

    /// Acquires the exclusive lock on `key` for `tx`, sleeping while
    /// others hold it.
    pub fn acquire(&self, tx: TxId, key: LockKey, timeout: Option<Duration>) -> Result<Acquired> {
        let mut g = self.inner.lock();
        if Self::grant_if_free(&mut g, tx, key) {
            return Ok(Acquired::Immediately);
        }
        if let Some(q) = g.queues.get_mut(&key) {
            q.waiters.push_back(tx);
        }
        g.waiting_on.insert(tx, key);
        if Self::closes_cycle(&g, tx) {
            Self::dequeue(&mut g, tx, key);
            return Err(
                Error::new(SqlState::DEADLOCK_DETECTED, "deadlock detected").with_detail(format!(
                    "Process of transaction {tx} waits for a lock held in a cycle of transactions."
                )),
            );
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            match deadline {
                Some(d) => {
                    if self.wake.wait_until(&mut g, d).timed_out() && !Self::holds(&g, tx, key) {
                        Self::dequeue(&mut g, tx, key);
                        return Err(Error::new(
                            SqlState::LOCK_NOT_AVAILABLE,
                            "canceling statement due to lock timeout",
                        ));
                    }
                }
                None => self.wake.wait(&mut g),
            }
            if Self::holds(&g, tx, key) {
                g.waiting_on.remove(&tx);
                return Ok(Acquired::AfterWait);
            }
        }
    }

    /// Takes the lock only if it is free (or already ours).
    pub fn try_acquire(&self, tx: TxId, key: LockKey) -> bool {
        Self::grant_if_free(&mut self.inner.lock(), tx, key)
    }

    /// Grants the lock if nobody holds it; true if `tx` holds it now.
    fn grant_if_free(g: &mut Inner, tx: TxId, key: LockKey) -> bool {
        match g.queues.get(&key) {
            None => {
                g.queues.insert(
                    key,
                    Queue {
                        holder: tx,
                        waiters: VecDeque::new(),
                    },
                );
                true
            }
            Some(q) => q.holder == tx,
        }
    }

    fn holds(g: &Inner, tx: TxId, key: LockKey) -> bool {
        g.queues.get(&key).is_some_and(|q| q.holder == tx)
    }

    fn dequeue(g: &mut Inner, tx: TxId, key: LockKey) {
        if let Some(q) = g.queues.get_mut(&key) {
            q.waiters.retain(|w| *w != tx);
        }
        g.waiting_on.remove(&tx);
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
            if q.holder == t {
                continue;
            }
            // t waits for the holder and everyone ahead of it.
            let ahead =
                std::iter::once(q.holder).chain(q.waiters.iter().copied().take_while(|w| *w != t));
            for next in ahead {
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
    pub fn release_all(&self, tx: TxId, keys: &[LockKey]) {
        if keys.is_empty() {
            return;
        }
        let mut g = self.inner.lock();
        let mut woke = false;
        let inner = &mut *g;
        for key in keys {
            let Some(q) = inner.queues.get_mut(key) else {
                continue;
            };
            if q.holder != tx {
                q.waiters.retain(|w| *w != tx);
                continue;
            }
            match q.waiters.pop_front() {
                Some(next) => {
                    // The new holder no longer waits (it may not have woken yet).
                    q.holder = next;
                    inner.waiting_on.remove(&next);
                    woke = true;
                }
                None => {
                    inner.queues.remove(key);
                }
            }
        }
        drop(g);
        if woke {
            self.wake.notify_all();
        }
    }

    /// Number of locked keys (for tests and stats).
    pub fn locked_keys(&self) -> usize {
        self.inner.lock().queues.len()
    }

    pub fn waiting(&self) -> usize {
        self.inner.lock().waiting_on.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::thread;

    const K1: LockKey = (TableId(1), Vid(1));
    const K2: LockKey = (TableId(1), Vid(2));

    #[test]
    fn fifo_handoff_and_wakeup() {
        let lt = Arc::new(LockTable::new());
        lt.acquire(TxId(1), K1, None).unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut hs = Vec::new();
        for t in [2u64, 3] {
            let (lt2, order) = (lt.clone(), order.clone());
            hs.push(thread::spawn(move || {
                let r = lt2.acquire(TxId(t), K1, None).unwrap();
                order.lock().push(t);
                assert_eq!(r, Acquired::AfterWait);
                lt2.release_all(TxId(t), &[K1]);
            }));
            // Make the queue order deterministic.
            while lt.waiting() < (t - 1) as usize {
                thread::yield_now();
            }
        }
        lt.release_all(TxId(1), &[K1]);
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(*order.lock(), vec![2, 3]);
        assert_eq!(lt.locked_keys(), 0);
    }

    #[test]
    fn deadlock_is_detected() {
        let lt = Arc::new(LockTable::new());
        lt.acquire(TxId(1), K1, None).unwrap();
        lt.acquire(TxId(2), K2, None).unwrap();
        let lt2 = lt.clone();
        let h = thread::spawn(move || lt2.acquire(TxId(1), K2, None));
        while lt.waiting() < 1 {
            thread::yield_now();
        }
        let e = lt.acquire(TxId(2), K1, None).unwrap_err();
        assert_eq!(e.code, SqlState::DEADLOCK_DETECTED);
        lt.release_all(TxId(2), &[K2]);
        assert_eq!(h.join().unwrap().unwrap(), Acquired::AfterWait);
    }

    #[test]
    fn granted_waiter_that_has_not_woken_is_no_deadlock() {
        let lt = Arc::new(LockTable::new());
        lt.acquire(TxId(1), K1, None).unwrap();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let lt2 = lt.clone();
        let h = thread::spawn(move || {
            lt2.acquire(TxId(2), K1, None).unwrap();
            go_rx.recv().unwrap();
            lt2.release_all(TxId(2), &[K1]);
        });
        while lt.waiting() < 1 {
            thread::yield_now();
        }
        lt.release_all(TxId(1), &[K1]);
        // T2 now holds K1 (awake or not): T3 must wait, not be called a deadlock victim.
        let e = lt
            .acquire(TxId(3), K1, Some(Duration::from_millis(30)))
            .unwrap_err();
        assert_eq!(e.code, SqlState::LOCK_NOT_AVAILABLE);
        go_tx.send(()).unwrap();
        h.join().unwrap();
        assert_eq!(
            lt.acquire(TxId(3), K1, None).unwrap(),
            Acquired::Immediately
        );
    }

    #[test]
    fn lock_timeout() {
        let lt = LockTable::new();
        lt.acquire(TxId(1), K1, None).unwrap();
        let e = lt
            .acquire(TxId(2), K1, Some(Duration::from_millis(20)))
            .unwrap_err();
        assert_eq!(e.code, SqlState::LOCK_NOT_AVAILABLE);
        assert_eq!(lt.waiting(), 0);
    }
}
