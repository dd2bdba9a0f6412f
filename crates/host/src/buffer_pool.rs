//! Host buffer pool: device pages cached under a byte budget.
//!
//! Pages are immutable once on the device (append-only storage), so a
//! cached page is shared as an `Arc` and never written back. Eviction is
//! CLOCK (second chance): each frame has a reference bit set on hit; the
//! hand clears bits until it finds a frame whose bit is clear. Misses are
//! served by READ_PAGE through the link, outside the pool's lock, and the
//! page's checksum is verified before it is cached.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use ndpdb_formats::page::{PageRef, PAGE_SIZE};
use ndpdb_formats::Ppn;
use ndpdb_link::DeviceClient;

use crate::error::Result;

/// A cached page image: shared, cheap to clone; pages read in one
/// READ_PAGES are views of the one frame they arrived in.
pub type Page = bytes::Bytes;

struct Frame {
    ppn: Ppn,
    page: Page,
    referenced: bool,
}

struct Inner {
    index: HashMap<Ppn, usize>,
    frames: Vec<Frame>,
    hand: usize,
}

pub struct BufferPool {
    capacity: usize,
    inner: Mutex<Inner>,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    pub evictions: AtomicU64,
}

impl BufferPool {
    pub fn new(budget_bytes: usize) -> BufferPool {
        let capacity = (budget_bytes / PAGE_SIZE).max(4);
        BufferPool {
            capacity,
            inner: Mutex::new(Inner {
                index: HashMap::with_capacity(capacity),
                frames: Vec::with_capacity(capacity),
                hand: 0,
            }),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    pub fn capacity_pages(&self) -> usize {
        self.capacity
    }

    pub fn resident_pages(&self) -> usize {
        self.inner.lock().frames.len()
    }

    fn lookup(&self, ppn: Ppn) -> Option<Page> {
        let mut g = self.inner.lock();
        let i = *g.index.get(&ppn)?;
        let f = &mut g.frames[i];
        f.referenced = true;
        Some(f.page.clone())
    }

    /// Returns the page, reading it from the device on a miss.
    pub fn get(&self, ppn: Ppn, device: &DeviceClient) -> Result<Page> {
        if let Some(p) = self.lookup(ppn) {
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

    /// The page if it is cached (counted as a hit), without reading it.
    pub fn get_cached(&self, ppn: Ppn) -> Option<Page> {
        let p = self.lookup(ppn)?;
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
            g.frames[i].referenced = true;
            return;
        }
        if g.frames.len() < self.capacity {
            let i = g.frames.len();
            g.frames.push(Frame {
                ppn,
                page,
                referenced: true,
            });
            g.index.insert(ppn, i);
            return;
        }
        loop {
            let h = g.hand;
            g.hand = (h + 1) % g.frames.len();
            if g.frames[h].referenced {
                g.frames[h].referenced = false;
                continue;
            }
            let old = g.frames[h].ppn;
            g.index.remove(&old);
            g.frames[h] = Frame {
                ppn,
                page,
                referenced: true,
            };
            g.index.insert(ppn, h);
            self.evictions.fetch_add(1, Ordering::Relaxed);
            return;
        }
    }
}
