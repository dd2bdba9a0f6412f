//! The device's shared state: the page store and the maps, as the
//! command handler and every running NDP job see them (DESIGN.md §1–§2).
//!
//! ```text
//!   engine.rs ──owns──► Core ◄──borrows── ndp/ (jobs, PEs, update NDP)
//!                        │                 gc/ (GC jobs)
//!                        ├─ store      pages.dat: PPN × 8 KiB
//!                        ├─ maps       L2P, VID maps (read by PEs, merged by the host)
//!                        ├─ map_store  maps.snap + maps.log, compaction thread
//!                        └─ gc_settled pages GC need not read again
//! ```
//!
//! It sits below every mechanism: they import it, it imports none of
//! them, and the engine that owns it is not imported back. Besides the
//! state it holds what changes the maps: a MERGE_MAPS, a DROP_VID_MAP and
//! the compaction a merge may start.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock, RwLockWriteGuard};
use rustc_hash::FxHashMap;

use ndpdb_formats::{Lpn, Ppn, TableId};
use ndpdb_link::{LinkError, Result, VidEntry};

use crate::gc::SettledPages;
use crate::maps::{Compaction, MapStore, Maps};
use crate::store::PageStore;

/// Storage and maps, shared by the command handler and running NDP jobs.
pub struct Core {
    pub(crate) store: PageStore,
    pub(crate) maps: RwLock<Maps>,
    map_store: Mutex<MapStore>,
    merges: AtomicU64,
    /// The thread writing a map image, if one was started.
    compaction: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Per table, the pages GC need not read again (gc/settled.rs).
    pub(crate) gc_settled: Mutex<FxHashMap<TableId, SettledPages>>,
}

impl Core {
    pub(crate) fn new(store: PageStore, map_store: MapStore, maps: Maps) -> Core {
        Core {
            store,
            maps: RwLock::new(maps),
            map_store: Mutex::new(map_store),
            merges: AtomicU64::new(0),
            compaction: Mutex::new(None),
            gc_settled: Mutex::new(FxHashMap::default()),
        }
    }

    /// Map merges applied since the device opened.
    pub(crate) fn merges(&self) -> u64 {
        self.merges.load(Ordering::Relaxed)
    }

    /// MERGE_MAPS: the ΔL2P and ΔVID checked, logged after the pages they
    /// point to are durable, then applied; a log grown past its bound
    /// starts a compaction.
    pub(crate) fn merge_maps(
        self: &Arc<Core>,
        l2p: &[(Lpn, Ppn)],
        vids: &[VidEntry],
    ) -> Result<()> {
        for (_, ppn) in l2p {
            if *ppn != Ppn::NONE && ppn.0 >= self.store.page_count() {
                return Err(LinkError::OutOfRange(format!(
                    "ΔL2P maps to unwritten PPN {}",
                    ppn.0
                )));
            }
        }
        if let Some(e) = vids.iter().find(|e| e.vid.0 >= ndpdb_formats::ids::MAX_VID) {
            return Err(LinkError::Corrupted(format!(
                "ΔVID entry with VID {}",
                e.vid.0
            )));
        }
        // Pages first, then the maps that point to them.
        self.store.sync()?;
        let mut ms = self.map_store.lock();
        ms.log_merge(l2p, vids)?;
        let mut maps = self.maps.write();
        maps.apply_merge(l2p, vids);
        self.merges.fetch_add(1, Ordering::Relaxed);
        if ms.wants_compaction() {
            // The image (tens of MB, fsync'd) is written off both locks,
            // from a copy: merges and page reads go on.
            let maps = RwLockWriteGuard::downgrade(maps);
            if let Some(compaction) = ms.begin_compaction(&maps)? {
                let copy = maps.clone();
                drop((maps, ms));
                self.compact_in_background(compaction, copy);
            }
        }
        Ok(())
    }

    /// DROP_VID_MAP: the table's VID map dropped (logged first) and what
    /// GC kept about it forgotten.
    pub(crate) fn drop_vid_map(&self, table: TableId) -> Result<()> {
        let mut ms = self.map_store.lock();
        ms.log_drop(table)?;
        self.maps.write().drop_table(table);
        self.gc_settled.lock().remove(&table);
        Ok(())
    }

    /// Writes the image of a compaction on a thread of its own.
    fn compact_in_background(self: &Arc<Core>, compaction: Compaction, maps: Maps) {
        let core = Arc::clone(self);
        let mut running = self.compaction.lock();
        let spawned = std::thread::Builder::new()
            .name("ndp-maps-snap".into())
            .spawn(move || {
                let outcome = compaction.write(&maps);
                core.map_store.lock().end_compaction(&outcome);
            });
        match spawned {
            Ok(handle) => *running = Some(handle),
            // The set-aside log stays; the next compaction runs in place.
            Err(e) => self
                .map_store
                .lock()
                .end_compaction(&Err(LinkError::Io(e.to_string()))),
        }
    }

    /// Waits for an image being written: whoever opens the folder next
    /// must not race it.
    pub(crate) fn finish_compaction(&self) {
        let running = self.compaction.lock().take();
        if let Some(handle) = running {
            let _ = handle.join();
        }
    }
}
