//! Reading versions: a record's bytes from the delta buffer, or through
//! the L2P map and the buffer pool (READ_PAGE on a miss), and the version
//! of a chain a snapshot sees.
//!
//! ```text
//!  fetch(rid) ──► delta buffer has rid.lpn? ──yes──► copy of the record
//!                        │ no
//!                        ▼
//!                 L2P: lpn → ppn ──► buffer pool (or READ_PAGE) ──► slot
//!  read_visible(head) = find_visible over fetch, newest first
//! ```
//!
//! A point read's fast path decodes the head's row straight from its
//! page's minipages when the snapshot sees the head
//! ([`visible_head_row`]); a scan does the same a page at a time
//! ([`visible_head_row_in`]), and fetches the pages of a chunk of heads
//! in one READ_PAGES ([`prefetch_heads`]).

use rustc_hash::FxHashMap;

use ndpdb_formats::page::PageRef;
use ndpdb_formats::record::RecordHeader;
use ndpdb_formats::{Lpn, Ppn, RecId, Value};

use super::state::Engine;
use crate::error::{Error, Result};
use crate::mvcc::snapshot::{find_visible, Snapshot, Visible};
use crate::storage::buffer_pool::Page;

/// A version's record bytes (header + row body), gathered from the
/// minipages of a PAX page or copied from the delta buffer.
pub enum RecordBytes {
    Owned(Vec<u8>),
}

impl std::ops::Deref for RecordBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            RecordBytes::Owned(v) => v,
        }
    }
}

impl Engine {
    /// The bytes of the record at `rid`: delta buffer first, then
    /// L2P → buffer pool (→ READ_PAGE on a miss).
    pub fn fetch(&self, rid: RecId) -> Result<RecordBytes> {
        Ok(self.fetch_in_page(rid)?.0)
    }

    /// [`Engine::fetch`], also returning the device page it came from.
    fn fetch_in_page(
        &self,
        rid: RecId,
    ) -> Result<(RecordBytes, Option<crate::storage::buffer_pool::Page>)> {
        if let Some(r) = self.delta.read().record(rid) {
            return Ok((RecordBytes::Owned(r?), None));
        }
        let ppn = self.l2p.get(rid.lpn()).ok_or_else(|| {
            Error::from(ndpdb_formats::Error::corrupted(format!(
                "{rid} points to an unmapped page"
            )))
        })?;
        let page = self.pool.get(ppn, &self.device)?;
        Ok((record_in(&page, rid)?, Some(page)))
    }

    /// A point read's fast path: when `head` lies on a flushed page and is
    /// the version `snapshot` sees, its row decoded straight from the
    /// page's minipages (`Some(None)` for a tombstone). `None` when the
    /// chain must be walked ([`Engine::read_visible`]).
    pub fn read_visible_head_row(
        &self,
        head: RecId,
        snapshot: &Snapshot,
    ) -> Result<Option<Option<Vec<Value>>>> {
        if self.delta.read().has_page(head.lpn()) {
            return Ok(None);
        }
        let Some(ppn) = self.l2p.get(head.lpn()) else {
            return Ok(None);
        };
        let page = self.pool.get(ppn, &self.device)?;
        visible_head_row(&page, head, snapshot, None)
    }

    /// The version of the chain starting at `head` visible to `snapshot`.
    pub fn read_visible(&self, head: RecId, snapshot: &Snapshot) -> Result<Visible<RecordBytes>> {
        self.read_visible_with(head, snapshot, &mut None)
    }

    /// Like [`Engine::read_visible`], reusing `last` — the device page of
    /// the previous record — without touching any lock when the record is
    /// on the same page (scans walk VIDs that mostly share pages). Safe
    /// because a page on the device is never modified.
    pub fn read_visible_with(
        &self,
        head: RecId,
        snapshot: &Snapshot,
        last: &mut Option<(Lpn, crate::storage::buffer_pool::Page)>,
    ) -> Result<Visible<RecordBytes>> {
        find_visible(head, snapshot, |rid| {
            // The same LPN may have been flushed again since (flush &
            // append): an older copy lacks the newer slots.
            let cached = match last {
                Some((lpn, page)) if *lpn == rid.lpn() => record_if_present(page, rid)?,
                _ => None,
            };
            let bytes = match cached {
                Some(b) => b,
                None => {
                    let (b, page) = self.fetch_in_page(rid)?;
                    if let Some(page) = page {
                        *last = Some((rid.lpn(), page));
                    }
                    b
                }
            };
            let h = RecordHeader::parse(&bytes)?;
            Ok((h, bytes))
        })
    }
}

/// [`Engine::read_visible_head_row`] on the device page `page` of the
/// head: the row if `snapshot` sees the head, `Some(None)` for a
/// tombstone, `None` when the chain must be walked.
pub(crate) fn visible_head_row(
    page: &[u8],
    head: RecId,
    snapshot: &Snapshot,
    wanted: Option<&[bool]>,
) -> Result<Option<Option<Vec<Value>>>> {
    let view = PageRef::parse(page)?;
    if head.slot() >= view.slot_count() {
        return Ok(None);
    }
    visible_head_row_in(&view.columns_for(wanted)?, head, snapshot)
}

/// [`visible_head_row`] on a page whose columns a scan looked up once.
pub(crate) fn visible_head_row_in(
    columns: &ndpdb_formats::page::PageColumns<'_>,
    head: RecId,
    snapshot: &Snapshot,
) -> Result<Option<Option<Vec<Value>>>> {
    let view = &columns.page;
    if head.slot() >= view.slot_count() {
        return Ok(None);
    }
    let Some(header) = view.header(head.slot())? else {
        return Ok(None);
    };
    if !snapshot.sees(header.creator) {
        return Ok(None);
    }
    if header.is_tombstone() {
        return Ok(Some(None));
    }
    let mut row = Vec::with_capacity(view.column_count());
    columns.decode_row_into(head.slot(), &mut row)?;
    Ok(Some(Some(row)))
}

/// The record at `rid` inside a device page; `None` if the page has no
/// such slot (an older copy of the LPN).
fn record_if_present(page: &[u8], rid: RecId) -> Result<Option<RecordBytes>> {
    let view = PageRef::parse(page)?;
    if rid.slot() >= view.slot_count() {
        return Ok(None);
    }
    let rec = view.record(rid.slot())?.ok_or_else(|| {
        Error::from(ndpdb_formats::Error::corrupted(format!(
            "{rid} is an empty slot"
        )))
    })?;
    Ok(Some(RecordBytes::Owned(rec)))
}

/// The record at `rid` inside a device page.
fn record_in(page: &[u8], rid: RecId) -> Result<RecordBytes> {
    record_if_present(page, rid)?.ok_or_else(|| {
        Error::from(ndpdb_formats::Error::corrupted(format!(
            "{rid} is beyond its page"
        )))
    })
}

/// LPNs checked against the delta buffer per hold of its lock.
const DELTA_CHECK_BATCH: usize = 64;

/// Puts the device pages of `heads` into `pages` (emptied first): cached
/// ones from the pool, the rest read in one READ_PAGES without entering
/// the pool (a scan streams through pages of its own). Pages in the delta
/// buffer are left out.
pub(crate) fn prefetch_heads(
    db: &Engine,
    heads: &[RecId],
    pages: &mut FxHashMap<Ppn, Page>,
) -> Result<()> {
    pages.clear();
    let mut lpns: Vec<Lpn> = heads
        .iter()
        .filter(|h| !h.is_null())
        .map(|h| h.lpn())
        .collect();
    lpns.dedup();
    // The delta buffer's lock is held for the membership checks only,
    // a batch at a time: a commit waiting for it waits for no page-map
    // or pool lookup, nor for a scan preempted while it held the lock.
    let mut flushed = Vec::with_capacity(lpns.len());
    for batch in lpns.chunks(DELTA_CHECK_BATCH) {
        let delta = db.delta.read();
        flushed.extend(batch.iter().copied().filter(|l| !delta.has_page(*l)));
    }
    let mut missing = Vec::new();
    for lpn in flushed {
        if let Some(ppn) = db.l2p.get(lpn) {
            if let Some(p) = db.pool.get_cached(ppn) {
                pages.insert(ppn, p);
            } else {
                missing.push(ppn);
            }
        }
    }
    missing.sort_unstable();
    missing.dedup();
    for (ppn, page) in db.pool.read_for_scan(missing, &db.device)? {
        pages.insert(ppn, page);
    }
    Ok(())
}
