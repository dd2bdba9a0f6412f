//! The delta buffer: the host's part of the shared state (DESIGN.md §4).
//!
//! Committed versions are appended to delta-buffer pages (one open page per
//! table) under fresh LPNs; every append also records a ΔVID entry (the
//! tuple's new head). The pages have no PPN yet: readers find them here
//! first. **Flush & append** seals the pages, writes them to
//! host-allocated PPNs in one batched WRITE_PAGES, and merges ΔL2P + ΔVID
//! into the device maps with one MERGE_MAPS; only then are the pages
//! dropped from here (and handed to the buffer pool).
//!
//! ```text
//!  commit ─► open page (table 3, lpn 41) ─┐  flush: seal ─► WRITE_PAGES ─► MERGE_MAPS
//!            full page  (table 3, lpn 40) ─┤         (lpn→ppn, vid→recid)   then drop here
//!            ΔVID [(3, vid 7, 41:2), …]   ─┘
//! ```

use std::collections::HashMap;

use ndpdb_formats::page::{PageBuf, PageRef, PAGE_SIZE};
use ndpdb_formats::{DataType, Lpn, RecId, TableId};
use ndpdb_link::VidEntry;

use crate::error::{Error, Result};
use crate::storage::buffer_pool::Page;

#[derive(Default)]
pub struct DeltaBuffer {
    pages: HashMap<Lpn, DeltaPage>,
    open: HashMap<TableId, Lpn>,
    delta_vid: Vec<VidEntry>,
}

/// A page of the delta buffer: still taking versions, or sealed — its
/// image shared with the flush that writes it and then the buffer pool.
pub enum DeltaPage {
    Open(PageBuf),
    Sealed { table: TableId, image: Page },
}

impl DeltaPage {
    /// Seals a full page (its builder's columns are dropped).
    pub fn sealed(page: PageBuf) -> DeltaPage {
        DeltaPage::Sealed {
            table: page.table(),
            image: crate::storage::buffer_pool::Page::from(page.into_sealed_image()),
        }
    }

    fn table(&self) -> TableId {
        match self {
            DeltaPage::Open(p) => p.table(),
            DeltaPage::Sealed { table, .. } => *table,
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            DeltaPage::Open(p) => p.as_bytes(),
            DeltaPage::Sealed { image, .. } => image,
        }
    }

    fn record(&self, slot: u16) -> ndpdb_formats::Result<Option<Vec<u8>>> {
        match self {
            DeltaPage::Open(p) => p.record(slot),
            DeltaPage::Sealed { image, .. } => PageRef::parse(image)?.record(slot),
        }
    }

    /// The sealed image (sealing an open page first).
    fn seal(&mut self) -> Page {
        if let DeltaPage::Open(p) = self {
            let p = std::mem::replace(p, PageBuf::new(p.table(), p.lpn(), &[]));
            *self = DeltaPage::sealed(p);
        }
        match self {
            DeltaPage::Sealed { image, .. } => image.clone(),
            DeltaPage::Open(_) => unreachable!("sealed above"),
        }
    }
}

/// What a flush takes: sealed page images and the ΔVID entries so far.
pub struct FlushBatch {
    pub pages: Vec<(Lpn, Page)>,
    pub delta_vid: Vec<VidEntry>,
}

impl DeltaBuffer {
    pub fn bytes(&self) -> usize {
        self.pages.len() * PAGE_SIZE
    }

    pub fn page_count(&self) -> usize {
        self.pages.len()
    }

    /// Pages of `table` here.
    pub fn table_pages(&self, table: TableId) -> usize {
        self.pages.values().filter(|p| p.table() == table).count()
    }

    pub fn delta_vid_len(&self) -> usize {
        self.delta_vid.len()
    }

    /// Appends a record to the table's open page (opening a new page with
    /// `alloc_lpn` when it is full) and records the ΔVID entry.
    pub fn append(
        &mut self,
        table: TableId,
        types: &[DataType],
        record: &[u8],
        alloc_lpn: impl FnOnce() -> Lpn,
    ) -> Result<RecId> {
        if let Some(lpn) = self.open.get(&table).copied() {
            if let Some(DeltaPage::Open(page)) = self.pages.get_mut(&lpn) {
                if let Some(slot) = page.append(record)? {
                    return Ok(RecId::new(lpn, slot));
                }
            }
        }
        let lpn = alloc_lpn();
        let mut page = PageBuf::new(table, lpn, types);
        let slot = page.append(record)?.ok_or_else(|| {
            Error::new(
                ndpdb_formats::SqlState::PROGRAM_LIMIT_EXCEEDED,
                format!("row is too big: size {}", record.len()),
            )
        })?;
        self.pages.insert(lpn, DeltaPage::Open(page));
        self.open.insert(table, lpn);
        Ok(RecId::new(lpn, slot))
    }

    /// Adds pages a commit filled before taking the lock (fresh LPNs);
    /// the last one, if open, becomes the table's open page.
    pub fn install(&mut self, table: TableId, pages: Vec<(Lpn, DeltaPage)>) {
        if let Some((last, DeltaPage::Open(_))) = pages.last() {
            self.open.insert(table, *last);
        }
        self.pages.extend(pages);
    }

    pub fn push_delta_vid(&mut self, e: VidEntry) {
        self.delta_vid.push(e);
    }

    /// Places a record at an exact RecId (WAL replay).
    pub fn place(
        &mut self,
        table: TableId,
        types: &[DataType],
        rid: RecId,
        record: &[u8],
    ) -> Result<()> {
        let page = self
            .pages
            .entry(rid.lpn())
            .or_insert_with(|| DeltaPage::Open(PageBuf::new(table, rid.lpn(), types)));
        match page {
            DeltaPage::Open(p) => Ok(p.place_at(rid.slot(), record)?),
            DeltaPage::Sealed { .. } => Err(Error::from(ndpdb_formats::Error::corrupted(format!(
                "redo of {rid} into a sealed page"
            )))),
        }
    }

    /// The record at `rid` if its page is here: `None` if the page is not
    /// in the delta buffer.
    pub fn record(&self, rid: RecId) -> Option<Result<Vec<u8>>> {
        let page = self.pages.get(&rid.lpn())?;
        Some(match page.record(rid.slot()) {
            Ok(Some(r)) => Ok(r),
            Ok(None) => Err(Error::from(ndpdb_formats::Error::corrupted(format!(
                "{rid} is an empty slot"
            )))),
            Err(e) => Err(e.into()),
        })
    }

    /// Whether the page `lpn` is here (newer than any flushed copy).
    pub fn has_page(&self, lpn: Lpn) -> bool {
        self.pages.contains_key(&lpn)
    }

    /// A copy of the page image of `lpn` if the page is here.
    pub fn page_image(&self, lpn: Lpn) -> Option<Vec<u8>> {
        self.pages.get(&lpn).map(|p| p.bytes().to_vec())
    }

    /// Seals every page and returns their images (shared, not copied)
    /// plus the ΔVID entries.
    /// New appends go to new pages from here on. Nothing is removed until
    /// [`DeltaBuffer::complete_flush`], so a failed flush is retried whole.
    pub fn take_for_flush(&mut self) -> FlushBatch {
        self.open.clear();
        let mut pages: Vec<(Lpn, Page)> = self
            .pages
            .iter_mut()
            .map(|(lpn, p)| (*lpn, p.seal()))
            .collect();
        pages.sort_by_key(|(l, _)| *l);
        FlushBatch {
            pages,
            delta_vid: self.delta_vid.clone(),
        }
    }

    /// Drops the flushed pages and the first `n_vid` ΔVID entries.
    pub fn complete_flush(&mut self, lpns: &[Lpn], n_vid: usize) {
        for l in lpns {
            self.pages.remove(l);
        }
        self.delta_vid.drain(..n_vid.min(self.delta_vid.len()));
    }

    /// Drops pending ΔVID entries of a dropped table.
    pub fn forget_table(&mut self, table: TableId) {
        self.delta_vid.retain(|e| e.table != table);
        self.open.remove(&table);
    }

    /// The table's pages and ΔVID entries ([`Captured`]).
    pub fn capture(&self, table: TableId) -> Captured {
        let pages = self
            .pages
            .iter()
            .filter(|(_, p)| p.table() == table)
            .map(|(l, p)| match p {
                DeltaPage::Open(b) => (*l, Page::copy_from_slice(b.as_bytes())),
                DeltaPage::Sealed { image, .. } => (*l, image.clone()),
            })
            .collect();
        let vids = self
            .delta_vid
            .iter()
            .filter(|e| e.table == table)
            .map(|e| (e.vid, e.head))
            .collect();
        Captured { pages, vids }
    }
}

/// A table's shared state as [`DeltaBuffer::capture`] takes it under the
/// delta buffer's lock: sealed pages shared, not copied, and the ΔVID
/// entries in log order. [`Captured::into_shared`] builds the message
/// form after the lock is released, so that commits waiting for the
/// lock do not wait for the copies (an analytical query capturing at a
/// low CPU priority held them up while it was preempted).
pub struct Captured {
    pages: Vec<(Lpn, Page)>,
    vids: Vec<(ndpdb_formats::Vid, RecId)>,
}

impl Captured {
    /// The pages in LPN order, the ΔVID overlay with the newest entry per
    /// VID, in VID order.
    pub fn into_shared(self) -> ndpdb_link::ndp::SharedState {
        let mut pages: Vec<(Lpn, Vec<u8>)> = self
            .pages
            .into_iter()
            .map(|(l, p)| (l, p.to_vec()))
            .collect();
        pages.sort_by_key(|(l, _)| *l);
        let mut newest: HashMap<ndpdb_formats::Vid, RecId> =
            HashMap::with_capacity(self.vids.len());
        newest.extend(self.vids);
        let mut vids: Vec<_> = newest.into_iter().collect();
        vids.sort();
        ndpdb_link::ndp::SharedState { pages, vids }
    }
}

#[cfg(test)]
mod tests {
    use ndpdb_formats::codec::Writer;
    use ndpdb_formats::record::{encode_record, RecordHeader};
    use ndpdb_formats::{TxId, Value, Vid};

    use super::*;

    fn record(vid: u64, pad: usize) -> Vec<u8> {
        let mut w = Writer::new();
        let header = RecordHeader {
            creator: TxId(1),
            pred: RecId::NULL,
            vid: Vid(vid),
            flags: 0,
        };
        let values = [Value::BigInt(vid as i64), Value::Text("x".repeat(pad))];
        encode_record(
            &header,
            &[DataType::BigInt, DataType::Text],
            &values,
            &mut w,
        )
        .unwrap();
        w.into_inner()
    }

    /// A capture holds the table's pages, sealed and open, in LPN order
    /// with their bytes, and the newest ΔVID entry per VID; nothing of
    /// another table.
    #[test]
    fn a_capture_is_the_tables_pages_and_newest_heads() {
        let types = [DataType::BigInt, DataType::Text];
        let mut d = DeltaBuffer::default();
        let mut next = 10u64;
        let mut alloc = || {
            next += 1;
            Lpn(next)
        };
        let (t, other) = (TableId(3), TableId(4));
        let mut heads = Vec::new();
        for vid in 0..40 {
            let table = if vid % 4 == 3 { other } else { t };
            let rid = d
                .append(table, &types, &record(vid, 900), &mut alloc)
                .unwrap();
            d.push_delta_vid(VidEntry {
                table,
                vid: Vid(vid),
                head: rid,
            });
            heads.push((table, rid));
        }
        // A newer head for VID 0 (an update), after a flush sealed the
        // pages so far.
        let sealed = d.take_for_flush();
        assert!(sealed.pages.len() > 2);
        let rid = d.append(t, &types, &record(0, 10), &mut alloc).unwrap();
        d.push_delta_vid(VidEntry {
            table: t,
            vid: Vid(0),
            head: rid,
        });
        let shared = d.capture(t).into_shared();
        let lpns: Vec<Lpn> = shared.pages.iter().map(|(l, _)| *l).collect();
        let mut want: Vec<Lpn> = heads
            .iter()
            .filter(|(table, _)| *table == t)
            .map(|(_, r)| r.lpn())
            .chain([rid.lpn()])
            .collect();
        want.sort();
        want.dedup();
        assert_eq!(lpns, want);
        for (lpn, bytes) in &shared.pages {
            assert_eq!(Some(bytes.clone()), d.page_image(*lpn));
        }
        let vids: Vec<(Vid, RecId)> = shared.vids;
        assert_eq!(vids.len(), 30);
        assert!(vids.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(vids[0], (Vid(0), rid));
        assert!(vids.iter().all(|(v, _)| v.0 % 4 != 3));
    }
}
