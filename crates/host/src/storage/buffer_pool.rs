//! Host buffer pool: device pages cached under a byte budget.
//!
//! Pages are immutable once on the device (append-only storage), so a
//! cached page is shared as an `Arc` and never written back. Misses are
//! served by READ_PAGE through the link, outside the pool's lock, and the
//! page's checksum is verified before it is cached.
//!
//! Eviction is PostgreSQL's clock sweep with usage counts: a frame's
//! count rises with each use, up to [`MAX_USAGE`], and the hand lowers it
//! by one as it passes; the first frame it finds at zero is the victim.
//!
//! ```text
//!  insert (a miss) ──► usage 1        point read of a cached page ──► usage + 1 (≤ 5)
//!  scan hit        ──► usage ≥ 1      hand passes a frame        ──► usage − 1, or evict at 0
//! ```
//!
//! So a page read once — by an analytical join's key lookups, say — goes
//! the second time the hand reaches it, while a page OLTP reads again and
//! again (items, hot stock and customer pages) holds a count of 5 and
//! stays four passes longer. A second-chance bit could not tell them
//! apart: both stayed two passes, and a stream of one-off reads pushed
//! out hot pages as fast as it came in. A table scan's hits count as one
//! use at most, so a scan never makes the pages it streams past look hot.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use rustc_hash::FxHashMap;

use ndpdb_formats::page::{PageRef, PAGE_SIZE};
use ndpdb_formats::Ppn;
use ndpdb_link::DeviceClient;

use crate::error::Result;

/// A cached page image: shared, cheap to clone; pages read in one
/// READ_PAGES are views of the one frame they arrived in.
pub type Page = bytes::Bytes;

/// The highest usage count (PostgreSQL's `BM_MAX_USAGE_COUNT`).
pub const MAX_USAGE: u8 = 5;

struct Frame {
    ppn: Ppn,
    page: Page,
}

struct Inner {
    index: FxHashMap<Ppn, usize>,
    frames: Vec<Frame>,
    /// Each frame's uses not yet swept away (1 on insert, + 1 per point
    /// read), apart from the frames: the hand walks a byte per frame.
    usage: Vec<u8>,
    hand: usize,
}

pub struct BufferPool {
    capacity: usize,
    inner: Mutex<Inner>,
    pub hits: AtomicU64,
    /// Pages read from the device: point reads that missed and the pages
    /// scans read past the pool.
    pub misses: AtomicU64,
    /// The part of `misses` that scans read past the pool.
    pub scan_reads: AtomicU64,
    pub evictions: AtomicU64,
}

impl BufferPool {
    pub fn new(budget_bytes: usize) -> BufferPool {
        let capacity = (budget_bytes / PAGE_SIZE).max(4);
        BufferPool {
            capacity,
            inner: Mutex::new(Inner {
                index: FxHashMap::with_capacity_and_hasher(capacity, Default::default()),
                frames: Vec::with_capacity(capacity),
                usage: Vec::with_capacity(capacity),
                hand: 0,
            }),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            scan_reads: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    pub fn capacity_pages(&self) -> usize {
        self.capacity
    }

    pub fn resident_pages(&self) -> usize {
        self.inner.lock().frames.len()
    }

    /// The cached page, its usage count raised by one unless it is
    /// already `use_up_to` or more.
    fn lookup(&self, ppn: Ppn, use_up_to: u8) -> Option<Page> {
        let mut g = self.inner.lock();
        let i = *g.index.get(&ppn)?;
        if g.usage[i] < use_up_to {
            g.usage[i] += 1;
        }
        Some(g.frames[i].page.clone())
    }

    /// Returns the page, reading it from the device on a miss.
    pub fn get(&self, ppn: Ppn, device: &DeviceClient) -> Result<Page> {
        if let Some(p) = self.lookup(ppn, MAX_USAGE) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(p);
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let bytes = device.read_page(ppn)?;
        PageRef::parse_verified(&bytes)?;
        let page = Page::from(bytes);
        self.insert(ppn, page.clone());
        Ok(page)
    }

    /// The page if it is cached (counted as a hit), without reading it:
    /// a scan's look, which leaves the page's usage count at 1 or more
    /// but never raises it further.
    pub fn get_cached(&self, ppn: Ppn) -> Option<Page> {
        let p = self.lookup(ppn, 1)?;
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(p)
    }

    /// Reads pages in one READ_PAGES message for a scan, verified but not
    /// cached: a large scan streams through a ring of its own instead of
    /// evicting the pool (PostgreSQL's bulk-read strategy).
    pub fn read_for_scan(&self, ppns: Vec<Ppn>, device: &DeviceClient) -> Result<Vec<(Ppn, Page)>> {
        if ppns.is_empty() {
            return Ok(Vec::new());
        }
        self.misses.fetch_add(ppns.len() as u64, Ordering::Relaxed);
        self.scan_reads
            .fetch_add(ppns.len() as u64, Ordering::Relaxed);
        let pages = device.read_pages_shared(ppns.clone())?;
        if pages.len() != ppns.len() {
            return Err(crate::error::Error::from(ndpdb_formats::Error::corrupted(
                "READ_PAGES returned a different number of pages",
            )));
        }
        ppns.into_iter()
            .zip(pages)
            .map(|(ppn, bytes)| {
                PageRef::parse_verified(&bytes)?;
                Ok((ppn, bytes))
            })
            .collect()
    }

    /// Drops a cached page (its PPN is about to be written again: a page
    /// of an aborted update job being reused).
    pub fn forget(&self, ppn: Ppn) {
        let mut g = self.inner.lock();
        let Some(i) = g.index.remove(&ppn) else {
            return;
        };
        g.frames.swap_remove(i);
        g.usage.swap_remove(i);
        if i < g.frames.len() {
            let moved = g.frames[i].ppn;
            g.index.insert(moved, i);
        }
        if g.hand >= g.frames.len() {
            g.hand = 0;
        }
    }

    /// Caches a page (e.g. one just flushed from the delta buffer).
    pub fn insert(&self, ppn: Ppn, page: Page) {
        let mut g = self.inner.lock();
        if let Some(&i) = g.index.get(&ppn) {
            g.frames[i].page = page;
            g.usage[i] = g.usage[i].max(1);
            return;
        }
        if g.frames.len() < self.capacity {
            let i = g.frames.len();
            g.frames.push(Frame { ppn, page });
            g.usage.push(1);
            g.index.insert(ppn, i);
            return;
        }
        let g = &mut *g;
        let h = sweep(&mut g.usage, &mut g.hand);
        let old = g.frames[h].ppn;
        g.index.remove(&old);
        g.frames[h] = Frame { ppn, page };
        g.usage[h] = 1;
        g.index.insert(ppn, h);
        self.evictions.fetch_add(1, Ordering::Relaxed);
    }
}

/// The clock hand: lowers each count it passes and stops at the first
/// frame whose count is zero (its victim), leaving the hand after it.
/// Every count is lowered at most [`MAX_USAGE`] times before one reaches
/// zero, so the sweep ends.
fn sweep(usage: &mut [u8], hand: &mut usize) -> usize {
    loop {
        let h = *hand;
        *hand = if h + 1 == usage.len() { 0 } else { h + 1 };
        if usage[h] == 0 {
            return h;
        }
        usage[h] -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(frames: usize) -> BufferPool {
        BufferPool::new(frames * PAGE_SIZE)
    }

    fn page(n: u64) -> Page {
        Page::from(n.to_le_bytes().to_vec())
    }

    fn cached(pool: &BufferPool, ppn: u64) -> bool {
        pool.inner.lock().index.contains_key(&Ppn(ppn))
    }

    /// Pages `ppns`, each read once (inserted on a miss, never again).
    fn read_once(pool: &BufferPool, ppns: std::ops::Range<u64>) {
        for n in ppns {
            pool.insert(Ppn(n), page(n));
        }
    }

    /// What keeps OLTP's pages in the pool beside analytics: a page read
    /// again and again outlasts a stream of pages read once that is twice
    /// the pool, and the pages read once go first.
    #[test]
    fn a_hot_page_outlasts_a_stream_of_pages_read_once() {
        let pool = pool(8);
        pool.insert(Ppn(1), page(1));
        for _ in 0..10 {
            assert!(pool.lookup(Ppn(1), MAX_USAGE).is_some());
        }
        read_once(&pool, 100..116);
        assert!(cached(&pool, 1), "the hot page was evicted");
        assert!(!cached(&pool, 100), "a page read once outlasted its turn");
        assert_eq!(pool.evictions.load(Ordering::Relaxed), 9);
        assert_eq!(pool.resident_pages(), 8);
        // Its count runs down with each turn of the hand: a long enough
        // stream evicts it too.
        read_once(&pool, 200..264);
        assert!(!cached(&pool, 1));
    }

    /// A scan that keeps finding a page in the pool does not make it hot:
    /// it goes within two turns of the hand, like a page read once.
    #[test]
    fn scan_hits_count_once() {
        let pool = pool(8);
        pool.insert(Ppn(1), page(1));
        for _ in 0..10 {
            assert!(pool.get_cached(Ppn(1)).is_some());
        }
        assert_eq!(pool.hits.load(Ordering::Relaxed), 10);
        read_once(&pool, 100..116);
        assert!(!cached(&pool, 1));
    }

    /// With every frame at the highest count, an insert still finds a
    /// victim (the sweep lowers every count to zero at most).
    #[test]
    fn a_pool_of_hot_pages_still_takes_a_new_one() {
        let pool = pool(4);
        for n in 1..=4 {
            pool.insert(Ppn(n), page(n));
            for _ in 0..MAX_USAGE {
                pool.lookup(Ppn(n), MAX_USAGE);
            }
        }
        pool.insert(Ppn(9), page(9));
        assert!(cached(&pool, 9));
        assert_eq!(pool.resident_pages(), 4);
        assert_eq!(pool.evictions.load(Ordering::Relaxed), 1);
        assert_eq!(
            pool.get_cached(Ppn(9)).as_deref(),
            Some(&9u64.to_le_bytes()[..])
        );
    }

    /// A page written again (a flushed delta page) replaces the image in
    /// place, and a forgotten page leaves the index consistent.
    #[test]
    fn insert_again_replaces_and_forget_removes() {
        let pool = pool(4);
        read_once(&pool, 1..4);
        pool.insert(Ppn(2), page(20));
        assert_eq!(
            pool.get_cached(Ppn(2)).as_deref(),
            Some(&20u64.to_le_bytes()[..])
        );
        pool.forget(Ppn(1));
        assert!(!cached(&pool, 1));
        for n in 2..=3 {
            assert!(pool.get_cached(Ppn(n)).is_some());
        }
        assert_eq!(pool.resident_pages(), 2);
    }
}
