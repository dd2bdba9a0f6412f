//! Flush & append: the delta buffer's sealed pages written to free
//! device pages, then ΔL2P and ΔVID merged into the device's maps — the
//! WAL durable first, so no page reaches the device before its log.
//!
//! ```text
//!  after_commit ─► delta buffer past delta_buffer_bytes? ─► flush
//!               ─► WAL past checkpoint_wal_bytes? ─► checkpointer.request()
//!               ─► a table past its GC threshold? ─► autovacuum.wake()
//!  flush: WAL sync ─► reclaim ─► alloc PPNs ─► WRITE_PAGES (64 at a time)
//!         ─► MERGE_MAPS (ΔL2P, ΔVID of live tables) ─► host L2P,
//!            replaced copies released, small batches into the pool
//! ```
//!
//! A device that is unreachable leaves every page in the delta buffer
//! (the next flush writes them again); any other failure fails the engine.
//! Page allocation (`alloc_ppns`) and the reclaim of released pages live
//! here too: a flush is their main user.

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use ndpdb_formats::{Lpn, Ppn, SqlState, TableId};
use ndpdb_link::VidEntry;

use super::state::{Engine, PASS_ALONG_MAX_PAGES};
use super::table::TableState;
use crate::background::autovacuum;
use crate::error::Result;
use crate::stats::EngineCounters;

impl Engine {
    /// `n` device pages to write (free ones first), none in the buffer pool.
    pub(crate) fn alloc_ppns(&self, n: usize) -> Vec<Ppn> {
        let ppns = self.space.alloc(n);
        for p in &ppns {
            // An earlier page at this PPN may still be cached.
            self.pool.forget(*p);
        }
        ppns
    }

    /// Frees the released pages nobody can read any more: their LPNs are
    /// unmapped on the device (durably) and on the host first.
    pub(crate) fn reclaim(&self) -> Result<()> {
        let oldest = self.txm.oldest_active();
        let Some(ripe) = self.space.ripe(oldest) else {
            return Ok(());
        };
        if !ripe.unmap.is_empty() {
            let unmap = ripe.unmap.iter().map(|l| (*l, Ppn::NONE)).collect();
            if let Err(e) = self.device.merge_maps(unmap, Vec::new()) {
                self.space.retry(ripe, oldest);
                return Err(e.into());
            }
            self.l2p.remove_all(&ripe.unmap);
        }
        self.space.free(ripe);
        Ok(())
    }

    /// Maps an update job's new pages on host and device. Safe before the
    /// job commits: no VID head points into them yet.
    pub(crate) fn map_ndp_pages(&self, l2p: &[(Lpn, Ppn)]) -> Result<()> {
        self.device.merge_maps(l2p.to_vec(), Vec::new())?;
        self.l2p.insert_all(l2p);
        Ok(())
    }

    /// The table's unflushed shared state: its delta-buffer pages and its
    /// ΔVID overlay (newest entry per VID), taken atomically. More than
    /// [`PASS_ALONG_MAX_PAGES`] pages are flushed instead (the device
    /// then reads them from its store), so that a job started right after
    /// a bulk commit does not carry a gigabyte of pages along.
    pub fn capture_shared(&self, table: TableId) -> Result<ndpdb_link::ndp::SharedState> {
        if self.delta.read().table_pages(table) > PASS_ALONG_MAX_PAGES {
            self.flush()?;
        }
        let captured = self.delta.read().capture(table);
        Ok(captured.into_shared())
    }

    /// Counts `n` new versions of `ts`; true when they carry it past its
    /// autovacuum threshold.
    pub(crate) fn count_changes(&self, ts: &TableState, n: u64) -> bool {
        let before = ts.changes_since_gc.fetch_add(n, Ordering::Relaxed);
        let limit = autovacuum::threshold(&self.config, ts);
        before < limit && before + n >= limit
    }

    /// Background-style maintenance after a commit.
    pub(crate) fn after_commit(&self) -> Result<()> {
        if self.delta.read().bytes() >= self.config.delta_buffer_bytes {
            // A flush already under way takes this commit's pages too.
            if let Some(guard) = self.flush_lock.try_lock() {
                self.flush_holding(guard)?;
            }
        }
        if self.wal.bytes_since_checkpoint() >= self.config.checkpoint_wal_bytes
            && !self.checkpointer.request()
        {
            self.checkpoint()?;
        }
        // After the flush: GC then finds the new heads on device pages.
        if self.gc_due.swap(false, Ordering::AcqRel) {
            self.autovacuum.wake();
        }
        Ok(())
    }

    pub fn flush(&self) -> Result<()> {
        self.flush_holding(self.flush_lock.lock())
    }

    /// Flush & append while holding the flush lock.
    fn flush_holding(&self, _flush: parking_lot::MutexGuard<'_, ()>) -> Result<()> {
        self.check_ok()?;
        let batch = self.delta.write().take_for_flush();
        if batch.pages.is_empty() && batch.delta_vid.is_empty() {
            return Ok(());
        }
        let result = (|| -> Result<Vec<(Lpn, Ppn)>> {
            // WAL before data.
            self.wal.sync(self.wal.current_lsn())?;
            self.reclaim()?;
            let ppns = self.alloc_ppns(batch.pages.len());
            let l2p: Vec<(Lpn, Ppn)> = batch
                .pages
                .iter()
                .zip(ppns)
                .map(|((lpn, _), ppn)| (*lpn, ppn))
                .collect();
            for chunk in batch.pages.chunks(64).zip(l2p.chunks(64)) {
                let pages: Vec<(Ppn, &[u8])> = chunk
                    .0
                    .iter()
                    .zip(chunk.1)
                    .map(|((_, image), (_, ppn))| (*ppn, &image[..]))
                    .collect();
                self.device.write_page_images(&pages)?;
            }
            let live: HashSet<TableId> = self.tables.read().keys().copied().collect();
            let vids: Vec<VidEntry> = batch
                .delta_vid
                .iter()
                .filter(|e| live.contains(&e.table))
                .copied()
                .collect();
            self.device.merge_maps(l2p.clone(), vids)?;
            Ok(l2p)
        })();
        let l2p = match result {
            Ok(l) => l,
            // The device is unreachable (or restarted): every page stays in
            // the delta buffer and the next flush writes it again. Pages
            // this attempt wrote are not referenced by the host's maps; a
            // map merge the device applied without answering is written
            // over by the retry.
            Err(e) if e.code == SqlState::CONNECTION_FAILURE => {
                EngineCounters::inc(&self.counters.flushes_deferred);
                return Err(e);
            }
            Err(e) => {
                self.fail();
                return Err(e);
            }
        };
        {
            let mut d = self.delta.write();
            // Older copies of re-flushed LPNs: free once their readers end.
            let replaced = self.l2p.insert_all(&l2p);
            self.space.release(self.txm.next_txid(), &[], &replaced);
            // A bulk flush would only evict the pages readers use (as
            // PostgreSQL's bulk writes keep to a ring of buffers).
            if batch.pages.len() <= self.pool.capacity_pages() / 8 {
                for ((_, image), (_, ppn)) in batch.pages.into_iter().zip(&l2p) {
                    self.pool.insert(*ppn, image);
                }
            }
            let lpns: Vec<Lpn> = l2p.iter().map(|(l, _)| *l).collect();
            d.complete_flush(&lpns, batch.delta_vid.len());
        }
        EngineCounters::inc(&self.counters.delta_flushes);
        self.counters
            .pages_flushed
            .fetch_add(l2p.len() as u64, Ordering::Relaxed);
        Ok(())
    }
}
