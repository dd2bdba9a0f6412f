//! A transaction's reads: one tuple by VID or by primary key, and scans
//! in VID order — its own writes first (the write set, then the heads
//! its update-NDP statements moved), else the version its snapshot sees.
//!
//! ```text
//!  get(vid)   own write? ─► its row │ own NDP head? ─► chain from it
//!             else head on a device page the snapshot sees ─► row from the page
//!             else walk the chain (Engine::read_visible)
//!  scan       1,024 heads at a time: their pages in one READ_PAGES,
//!             each page's columns looked up once, rows decoded from them
//! ```

use ndpdb_formats::{RecId, SqlState, TableId, Value, Vid};
use rustc_hash::FxHashMap;

use super::Transaction;
use crate::db::{prefetch_heads, visible_head_row_in, TableState};
use crate::error::{Error, Result};
use crate::mvcc::snapshot::Visible;

impl Transaction {
    /// The visible version of a tuple: `(version RecId, row)`. Rows written
    /// by this transaction come back with `RecId::NULL`.
    pub fn get(&self, ts: &TableState, vid: Vid) -> Result<Option<(RecId, Vec<Value>)>> {
        if let Some(e) = self.writes.get(&(ts.id, vid)) {
            return Ok(match e.tombstone {
                true => None,
                false => Some((RecId::NULL, e.row(ts)?)),
            });
        }
        let head = self.head_of(ts, vid);
        if head.is_null() {
            return Ok(None);
        }
        if let Some(row) = self.db.inner.read_visible_head_row(head, &self.snapshot)? {
            if row.as_ref().is_some_and(|r| r.len() != ts.types.len()) {
                return Err(Error::from(ndpdb_formats::Error::corrupted(format!(
                    "{head} has a row of another width than its table"
                ))));
            }
            return Ok(row.map(|r| (head, r)));
        }
        match self.db.inner.read_visible(head, &self.snapshot)? {
            Visible::Version(rid, bytes) => Ok(Some((rid, Self::decode(ts, &bytes)?.1))),
            _ => Ok(None),
        }
    }

    /// Point lookup through the primary-key index.
    pub fn get_by_key(
        &self,
        ts: &TableState,
        key: &[Value],
    ) -> Result<Option<(Vid, RecId, Vec<Value>)>> {
        let Some(pk) = ts.pk.get() else {
            return Err(Error::new(
                SqlState::INTERNAL_ERROR,
                "table has no primary key",
            ));
        };
        let refs: Vec<&Value> = key.iter().collect();
        let encoded = crate::storage::pk_index::encode_key(&refs);
        self.ssi_read_key(ts.id, key.len(), &encoded)?;
        let Some(vid) = pk.get(&encoded)? else {
            return Ok(None);
        };
        Ok(self.get(ts, vid)?.map(|(rid, row)| (vid, rid, row)))
    }

    /// This transaction's own version of a tuple, if it wrote one:
    /// `Some(None)` for a tuple it deleted.
    pub(crate) fn own_version(
        &self,
        ts: &TableState,
        vid: Vid,
    ) -> Result<Option<Option<Vec<Value>>>> {
        if self.writes.is_empty() {
            return Ok(None);
        }
        match self.writes.get(&(ts.id, vid)) {
            None => Ok(None),
            Some(e) if e.tombstone => Ok(Some(None)),
            Some(e) => Ok(Some(Some(e.row(ts)?))),
        }
    }

    /// The head an update-NDP statement of this transaction moved, if any.
    pub(crate) fn own_head(&self, table: TableId, vid: Vid) -> Option<RecId> {
        if self.ndp_heads.is_empty() {
            return None;
        }
        self.ndp_heads.get(&(table, vid)).copied()
    }

    /// The chain head this transaction reads for a tuple: its own
    /// update-NDP version if it has one, else the shared VID map's.
    pub(crate) fn head_of(&self, ts: &TableState, vid: Vid) -> RecId {
        match self.ndp_heads.get(&(ts.id, vid)) {
            Some(r) => *r,
            None => ts.vids.head(vid),
        }
    }

    /// Visits every tuple visible to this transaction, in VID order;
    /// `visit` returns `false` to stop.
    pub fn scan(
        &self,
        ts: &TableState,
        visit: impl FnMut(Vid, RecId, Vec<Value>) -> Result<bool>,
    ) -> Result<()> {
        self.scan_columns(ts, None, visit)
    }

    /// [`Transaction::scan`] of a caller that reads only the columns
    /// marked in `wanted`: the others may come as NULL, not decoded.
    pub fn scan_columns(
        &self,
        ts: &TableState,
        wanted: Option<&[bool]>,
        visit: impl FnMut(Vid, RecId, Vec<Value>) -> Result<bool>,
    ) -> Result<()> {
        self.ssi_read(crate::mvcc::ssi::Target::Table(ts.id))?;
        self.scan_rows(ts, wanted, visit)
    }

    /// [`Transaction::scan`] of a caller that only uses the rows whose
    /// first primary-key columns equal `prefix` (SERIALIZABLE locks that
    /// prefix instead of the table).
    pub fn scan_key_prefix(
        &self,
        ts: &TableState,
        prefix: &[Value],
        wanted: Option<&[bool]>,
        visit: impl FnMut(Vid, RecId, Vec<Value>) -> Result<bool>,
    ) -> Result<()> {
        self.read_key_prefix(ts, prefix)?;
        self.scan_rows(ts, wanted, visit)
    }

    pub(super) fn scan_rows(
        &self,
        ts: &TableState,
        wanted: Option<&[bool]>,
        mut visit: impl FnMut(Vid, RecId, Vec<Value>) -> Result<bool>,
    ) -> Result<()> {
        let n = ts.vids.vid_count();
        let table = ts.id;
        let inner = &self.db.inner;
        let mut heads = Vec::with_capacity(1024);
        let mut pages = FxHashMap::default();
        let mut last_page = None;
        let mut from = 0;
        while from < n {
            let to = (from + 1024).min(n);
            self.check_interrupt()?;
            ts.vids.heads_range(from, to, &mut heads);
            // The chunk's device pages in one message; a head the snapshot
            // sees is decoded straight from its page.
            prefetch_heads(inner, &heads, &mut pages)?;
            // The chunk's pages with their columns looked up once each;
            // consecutive heads on one page (the common case) find it
            // without a lookup.
            let mut decoding: Vec<ndpdb_formats::page::PageColumns<'_>> = Vec::new();
            let mut by_page: FxHashMap<*const u8, usize> = FxHashMap::default();
            let mut last: Option<(ndpdb_formats::Lpn, Option<usize>)> = None;
            for (i, head) in heads.iter().enumerate() {
                let vid = Vid(from + i as u64);
                if !self.writes.is_empty() {
                    if let Some(e) = self.writes.get(&(table, vid)) {
                        if !e.tombstone && !visit(vid, RecId::NULL, e.row(ts)?)? {
                            return Ok(());
                        }
                        continue;
                    }
                }
                let head = if self.ndp_heads.is_empty() {
                    *head
                } else {
                    self.head_of(ts, vid)
                };
                if head.is_null() {
                    continue;
                }
                let lpn = head.lpn();
                let at = match last {
                    Some((l, at)) if l == lpn => at,
                    _ => {
                        let page = inner.l2p.get(lpn).and_then(|p| pages.get(&p));
                        let at = match page {
                            Some(page) => {
                                let bytes: &[u8] = page;
                                Some(match by_page.entry(bytes.as_ptr()) {
                                    std::collections::hash_map::Entry::Occupied(e) => *e.get(),
                                    std::collections::hash_map::Entry::Vacant(e) => {
                                        let view = ndpdb_formats::page::PageRef::parse(bytes)?;
                                        decoding.push(view.columns_for(wanted)?);
                                        *e.insert(decoding.len() - 1)
                                    }
                                })
                            }
                            None => None,
                        };
                        last = Some((lpn, at));
                        at
                    }
                };
                let on_page = match at.and_then(|i| decoding.get(i)) {
                    Some(columns) => visible_head_row_in(columns, head, &self.snapshot)?,
                    None => None,
                };
                if let Some(row) = on_page {
                    if let Some(row) = row {
                        if row.len() != ts.types.len() {
                            return Err(Error::from(ndpdb_formats::Error::corrupted(format!(
                                "{head} has a row of another width than its table"
                            ))));
                        }
                        if !visit(vid, head, row)? {
                            return Ok(());
                        }
                    }
                    continue;
                }
                if let Visible::Version(rid, bytes) =
                    self.db
                        .inner
                        .read_visible_with(head, &self.snapshot, &mut last_page)?
                {
                    let (_, row) = Self::decode(ts, &bytes)?;
                    if !visit(vid, rid, row)? {
                        return Ok(());
                    }
                }
            }
            from = to;
        }
        Ok(())
    }
}
