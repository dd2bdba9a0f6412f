//! Version garbage collection as an NDP job (DESIGN.md §8a).
//!
//! The device finds garbage next to the data and compacts pages out of
//! place; the host validates and applies the result as it does an update
//! job's ΔMaps (`ndpdb_host::gc`). Nothing is overwritten.
//!
//! ```text
//!  settled pages the last run found all heads, all old, none changed since
//!          (settled.rs): not read, their VIDs not walked
//!  pages   every other device page of the table (L2P; passed-along pages
//!          excluded; pages the store knows to be other tables' are not read)
//!  pass 1  per VID: walk the chain from the head to the first version
//!          created below the horizon (the base); head … base are needed,
//!          everything behind the base is garbage
//!            needed versions count per page; a page holding a version of
//!            a needed chain longer than one is pinned (newer versions
//!            point to it by RecId)
//!            the head is a tombstone below the horizon: the tuple is gone
//!            for every snapshot → ΔVID (vid, head, NULL)
//!  victims pages whose versions all predate the horizon, not pinned, with
//!          garbage on them and at most max_live_percent % of their slots
//!          needed
//!  pass 2  every head on a victim page is copied, its chain cut (pred =
//!          NULL), into the job's pre-allocated pages in VID order
//!            → ΔVID (vid, head, copy), ΔL2P (the new pages)
//!  result  ΔVID, ΔL2P, victims: the host frees a victim once every ΔVID
//!          out of it has validated; the pages settled now are kept for the
//!          next run
//! ```
//!
//! Why the horizon is enough: a version created below the horizon by a
//! committed transaction is visible to every snapshot in use or to come,
//! so no reader walks past it; and only committed versions are reachable
//! from a head. A head that moves while the job runs has a creator at or
//! above the horizon (its transaction was running when the horizon was
//! taken): its page is never a victim, and the host rejects the ΔVID of
//! the version it replaced, which keeps that version's page.

mod settled;

use std::sync::atomic::{AtomicBool, Ordering};

use rustc_hash::FxHashMap;

use ndpdb_formats::codec::Writer;
use ndpdb_formats::delta_maps::DeltaVid;
use ndpdb_formats::page::{PageRef, PAGE_SIZE};
use ndpdb_formats::record::{RecordHeader, RECORD_HEADER_SIZE};
use ndpdb_formats::{Error, Lpn, Ppn, RecId, SqlState, TxId, Vid};
use ndpdb_link::ndp::{Invocation, ModifyResult};

use crate::core::Core;
use crate::ndp::pass_along::{has_slot, PassedAlong};
use crate::ndp::update::{unloader, PageWriter, SpacePool};
use crate::store::PageBytes;
pub(crate) use settled::SettledPages;
use settled::{HeadCount, SettledPage};

/// What GC knows about one device page of the table.
struct PageInfo {
    ppn: Ppn,
    slots: u16,
    empty: u16,
    /// Every version on it was created below the horizon.
    old: bool,
    /// Versions on it some snapshot may still need.
    live: u32,
    /// Holds a version of a needed chain longer than one.
    pinned: bool,
    victim: bool,
    /// Its heads of one-version chains below the horizon, not tombstones.
    settled_heads: HeadCount,
}

impl PageInfo {
    fn new(ppn: Ppn, view: &PageRef<'_>, old: bool) -> PageInfo {
        PageInfo {
            ppn,
            slots: view.slot_count(),
            empty: view.empty_slots(),
            old,
            live: 0,
            pinned: false,
            victim: false,
            settled_heads: HeadCount::default(),
        }
    }

    fn used(&self) -> u32 {
        u32::from(self.slots.saturating_sub(self.empty))
    }

    /// Every version on it is a head [`HeadCount`] counted (see settled.rs).
    fn settled(&self) -> Option<SettledPage> {
        let used = self.used();
        (self.ppn != Ppn::NONE
            && self.old
            && !self.pinned
            && used > 0
            && self.settled_heads.heads == used)
            .then_some(SettledPage {
                ppn: self.ppn,
                heads: used,
                slots: self.slots,
                fingerprint: self.settled_heads.fingerprint,
            })
    }
}

/// What a GC job runs with.
pub(crate) struct GcJob<'a> {
    pub core: &'a Core,
    pub shared: &'a PassedAlong,
    pub inv: &'a Invocation,
    pub horizon: TxId,
    pub max_live_percent: u8,
    pub space: &'a SpacePool,
    pub cancel: &'a AtomicBool,
    pub throttle: std::cell::RefCell<Throttle>,
}

/// PostgreSQL's vacuum cost model: work adds cost (a page read 1, a page
/// written 20); each time it reaches the limit the job sleeps the delay.
pub(crate) struct Throttle {
    limit: u32,
    delay: std::time::Duration,
    cost: u32,
}

/// Cost of reading a page, and of writing one.
const COST_PAGE_READ: u32 = 1;
const COST_PAGE_WRITTEN: u32 = 20;

impl Throttle {
    /// `limit` 0: never sleeps.
    pub fn new(limit: u32, delay: std::time::Duration) -> Throttle {
        Throttle {
            limit,
            delay,
            cost: 0,
        }
    }

    fn charge(&mut self, cost: u32) {
        if self.limit == 0 || self.delay.is_zero() {
            return;
        }
        self.cost += cost;
        if self.cost >= self.limit {
            self.cost = 0;
            std::thread::sleep(self.delay);
        }
    }
}

/// Resolves versions: passed-along pages first, else the store (keeping
/// the last page, since heads of neighbouring VIDs share pages).
struct Resolver<'a> {
    core: &'a Core,
    shared: &'a PassedAlong,
    last: Option<(Lpn, PageBytes)>,
    /// Store pages read since the last `take_reads`.
    reads: u32,
}

impl Resolver<'_> {
    fn page(&mut self, rid: RecId) -> Result<PageBytes, Error> {
        let lpn = rid.lpn();
        if let Some(p) = self.shared.page(rid) {
            return Ok(p.clone());
        }
        if let Some((l, p)) = &self.last {
            if *l == lpn && has_slot(p, rid) {
                return Ok(p.clone());
            }
        }
        let ppn = self
            .core
            .maps
            .read()
            .l2p
            .get(&lpn)
            .ok_or_else(|| Error::corrupted(format!("{rid} points to an unmapped page")))?;
        let page = self
            .core
            .store
            .page(ppn)
            .map_err(|e| Error::corrupted(e.to_string()))?;
        self.last = Some((lpn, page.clone()));
        self.reads += 1;
        Ok(page)
    }

    fn take_reads(&mut self) -> u32 {
        std::mem::take(&mut self.reads)
    }

    fn header(&mut self, rid: RecId) -> Result<RecordHeader, Error> {
        let page = self.page(rid)?;
        PageRef::parse(&page)?
            .header(rid.slot())?
            .ok_or_else(|| Error::corrupted(format!("{rid} is an empty slot")))
    }

    /// The version's record with its chain cut (predecessor NULL).
    fn cut_record(&mut self, rid: RecId) -> Result<Vec<u8>, Error> {
        let page = self.page(rid)?;
        let mut rec = PageRef::parse(&page)?
            .record(rid.slot())?
            .ok_or_else(|| Error::corrupted(format!("{rid} is an empty slot")))?;
        let mut h = RecordHeader::parse(&rec)?;
        h.pred = RecId::NULL;
        let mut w = Writer::with_capacity(RECORD_HEADER_SIZE);
        h.encode(&mut w);
        rec[..RECORD_HEADER_SIZE].copy_from_slice(w.as_slice());
        Ok(rec)
    }
}

fn cancelled() -> Error {
    Error::sql(SqlState::QUERY_CANCELED, "GC job aborted")
}

impl GcJob<'_> {
    /// Runs the job into `out` (see the module docs). On an error `out`
    /// still lists the pages written, for the host to take back.
    pub fn run(&self, out: &mut ModifyResult) -> Result<(), Error> {
        let table = self.inv.table;
        let prior = self.core.gc_settled.lock().remove(&table);
        let prior = prior.unwrap_or_default();
        match self.run_from(&prior, out) {
            Ok(settled) => {
                self.core.gc_settled.lock().insert(table, settled);
                Ok(())
            }
            Err(e) => {
                self.core.gc_settled.lock().entry(table).or_insert(prior);
                Err(e)
            }
        }
    }

    /// The run, trusting the pages of `prior` that are still settled;
    /// returns the pages settled now.
    fn run_from(
        &self,
        prior: &SettledPages,
        out: &mut ModifyResult,
    ) -> Result<SettledPages, Error> {
        let heads = self.heads();
        let skipped = {
            let maps = self.core.maps.read();
            prior.still_settled(
                self.horizon,
                &heads,
                |l| maps.l2p.get(&l),
                |l| self.shared.holds(l),
            )
        };
        let mut pages = self.table_pages(&skipped)?;
        out.pages_scanned = pages.values().filter(|p| p.ppn != Ppn::NONE).count() as u64;
        out.pages_skipped = skipped.len() as u64;
        let mut res = Resolver {
            core: self.core,
            shared: self.shared,
            last: None,
            reads: 0,
        };
        let mut dead = vec![false; heads.len()];
        self.pass_one(&heads, &skipped, &mut pages, &mut res, &mut dead, out)?;
        let limit = self.max_live_percent as u64;
        for p in pages.values_mut() {
            // A victim has garbage, or nothing else, on it.
            let used = p.used() as u64;
            let live = p.live as u64;
            p.victim = p.old && !p.pinned && live * 100 <= p.slots as u64 * limit && live < used;
            if p.victim {
                out.garbage_versions += used - live;
            }
            if p.slots > 0 {
                out.live_bytes += PAGE_SIZE as u64 * p.live as u64 / p.slots as u64;
            }
        }
        for p in skipped.values() {
            if p.slots > 0 {
                out.live_bytes += PAGE_SIZE as u64 * p.heads as u64 / p.slots as u64;
            }
        }
        let mut settled = SettledPages {
            horizon: self.horizon,
            pages: skipped,
        };
        settled
            .pages
            .extend(pages.iter().filter_map(|(l, p)| Some((*l, p.settled()?))));
        let mut victims: Vec<(Lpn, Ppn)> = pages
            .iter()
            .filter(|(_, p)| p.victim)
            .map(|(l, p)| (*l, p.ppn))
            .collect();
        victims.sort_unstable();
        out.victims = victims;
        if out.victims.is_empty() {
            return Ok(settled);
        }
        self.relocate(&heads, &pages, &mut res, &dead, out)?;
        if !out.delta.l2p.is_empty() {
            // The copies are durable before the host may point to them.
            self.core
                .store
                .sync()
                .map_err(|e| Error::sql(SqlState::IO_ERROR, format!("sync: {e}")))?;
        }
        Ok(settled)
    }

    /// The head of every VID: passed-along ΔVID first, else the device map.
    fn heads(&self) -> Vec<RecId> {
        let maps = self.core.maps.read();
        let map = maps.vids.get(&self.inv.table);
        (0..self.inv.vid_count)
            .map(|v| match self.shared.head(Vid(v)) {
                Some(r) => r,
                None => map
                    .and_then(|m| m.get(v as usize))
                    .map_or(RecId::NULL, |r| RecId::from_raw(*r)),
            })
            .collect()
    }

    /// Every mapped page of the table that is not passed along (those are
    /// still being filled by the host's delta buffer).
    ///
    /// The LPNs are listed first and each is resolved again, and its page
    /// read, under the maps' read lock: a page freed meanwhile is unmapped
    /// before its PPN is written again (`ndpdb_host::storage::space`), so a mapping
    /// that still holds names the page it was made for. Pages the store
    /// knows to be another table's are passed without reading them; the
    /// owner of a page written before this open is learnt here, so every
    /// later run reads this table's pages only, however large the others
    /// grow.
    fn table_pages(
        &self,
        settled: &FxHashMap<Lpn, SettledPage>,
    ) -> Result<FxHashMap<Lpn, PageInfo>, Error> {
        let lpns: Vec<Lpn> = self.core.maps.read().l2p.iter().map(|(l, _)| l).collect();
        let mut pages = FxHashMap::default();
        for batch in lpns.chunks(256) {
            if self.cancel.load(Ordering::Relaxed) {
                return Err(cancelled());
            }
            let mut read = 0;
            let maps = self.core.maps.read();
            for &lpn in batch {
                if self.shared.holds(lpn) || settled.contains_key(&lpn) {
                    // Passed-along pages are counted below.
                    continue;
                }
                let Some(ppn) = maps.l2p.get(&lpn) else {
                    continue;
                };
                let owner = self.core.store.owner(ppn);
                if owner.is_some_and(|t| t != self.inv.table) {
                    continue;
                }
                read += 1;
                let bytes = self
                    .core
                    .store
                    .page(ppn)
                    .map_err(|e| Error::corrupted(e.to_string()))?;
                let view = PageRef::parse(&bytes)?;
                if owner.is_none() {
                    self.core.store.note_owner(ppn, view.table());
                }
                if view.table() != self.inv.table {
                    continue;
                }
                if view.lpn() != lpn {
                    return Err(Error::corrupted(format!(
                        "page {} holds LPN {}, mapped as LPN {}",
                        ppn.0,
                        view.lpn().0,
                        lpn.0
                    )));
                }
                let old = view.creator_range().1 < self.horizon;
                pages.insert(lpn, PageInfo::new(ppn, &view, old));
            }
            // Pauses happen outside the maps' lock.
            drop(maps);
            self.throttle.borrow_mut().charge(read * COST_PAGE_READ);
        }
        // Pages still in the host's delta buffer: their needed versions
        // count as live data; they are never victims.
        for (lpn, bytes) in &self.shared.pages {
            let view = PageRef::parse(bytes)?;
            if view.table() == self.inv.table {
                pages.insert(*lpn, PageInfo::new(Ppn::NONE, &view, false));
            }
        }
        Ok(pages)
    }

    /// Counts needed versions per page; drops tuples gone for everyone.
    fn pass_one(
        &self,
        heads: &[RecId],
        settled: &FxHashMap<Lpn, SettledPage>,
        pages: &mut FxHashMap<Lpn, PageInfo>,
        res: &mut Resolver<'_>,
        dead: &mut [bool],
        out: &mut ModifyResult,
    ) -> Result<(), Error> {
        let mut chain = Vec::new();
        let mut last_settled = (Lpn(u64::MAX), false);
        for (v, &head) in heads.iter().enumerate() {
            if v % 1024 == 0 && self.cancel.load(Ordering::Relaxed) {
                return Err(cancelled());
            }
            self.throttle
                .borrow_mut()
                .charge(res.take_reads() * COST_PAGE_READ);
            if head.is_null() {
                continue;
            }
            // Heads of neighbouring VIDs share pages: one lookup per run.
            if last_settled.0 != head.lpn() {
                last_settled = (head.lpn(), settled.contains_key(&head.lpn()));
            }
            if last_settled.1 {
                continue;
            }
            chain.clear();
            let mut rid = head;
            let mut base_is_tombstone = false;
            loop {
                let h = res.header(rid)?;
                chain.push(rid);
                if h.creator < self.horizon {
                    base_is_tombstone = h.is_tombstone();
                    break;
                }
                rid = h.pred;
                if rid.is_null() {
                    break;
                }
            }
            if chain.len() == 1 && base_is_tombstone {
                dead[v] = true;
                out.delta.vids.push(DeltaVid {
                    vid: Vid(v as u64),
                    pred: head,
                    new: RecId::NULL,
                });
                continue;
            }
            let pinned = chain.len() > 1;
            for rid in &chain {
                if let Some(p) = pages.get_mut(&rid.lpn()) {
                    p.live += 1;
                    p.pinned |= pinned;
                }
            }
            if !pinned && !base_is_tombstone {
                if let Some(p) = pages.get_mut(&head.lpn()) {
                    p.settled_heads.add(v as u64, head);
                }
            }
        }
        Ok(())
    }

    /// Copies the heads on victim pages into the job's pages.
    fn relocate(
        &self,
        heads: &[RecId],
        pages: &FxHashMap<Lpn, PageInfo>,
        res: &mut Resolver<'_>,
        dead: &[bool],
        out: &mut ModifyResult,
    ) -> Result<(), Error> {
        let types = &self.inv.types;
        std::thread::scope(|s| {
            let (mut writer, rx) = PageWriter::new(self.space, self.inv.table, types);
            let (store, space) = (&self.core.store, self.space);
            let unload = std::thread::Builder::new()
                .name("ndp-gc-unl".into())
                .spawn_scoped(s, move || unloader(store, space, rx))
                .map_err(|e| {
                    Error::sql(
                        SqlState::INTERNAL_ERROR,
                        format!("cannot start an unloader: {e}"),
                    )
                })?;
            let copied = (|| -> Result<(), Error> {
                for (v, &head) in heads.iter().enumerate() {
                    if v % 1024 == 0 && self.cancel.load(Ordering::Relaxed) {
                        return Err(cancelled());
                    }
                    if head.is_null() || dead[v] {
                        continue;
                    }
                    if !pages.get(&head.lpn()).is_some_and(|p| p.victim) {
                        continue;
                    }
                    let rec = res.cut_record(head)?;
                    let pages_before = out.delta.l2p.len() as u32;
                    let new = writer.append(&rec, &mut out.delta.l2p, self.cancel)?;
                    let written = out.delta.l2p.len() as u32 - pages_before;
                    self.throttle
                        .borrow_mut()
                        .charge(res.take_reads() * COST_PAGE_READ + written * COST_PAGE_WRITTEN);
                    out.delta.vids.push(DeltaVid {
                        vid: Vid(v as u64),
                        pred: head,
                        new,
                    });
                    out.rows += 1;
                }
                Ok(())
            })();
            let closed = writer.close(&mut out.delta.l2p);
            drop(writer);
            let unloaded = unload.join().unwrap_or_else(|_| {
                Err(Error::sql(SqlState::INTERNAL_ERROR, "an unloader panicked"))
            });
            copied.and(closed).and(unloaded)
        })
    }
}
