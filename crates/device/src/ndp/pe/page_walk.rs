//! A PE as a page source for the scan core's visibility-by-page walk
//! ([`ndpdb_scan::page_visibility`]): pages come from the passed-along
//! shared state or the store (through the PE's cache and preloader),
//! older versions from the same chain walk the VID-by-VID path uses.

use ndpdb_formats::visibility::{find_visible, Visible};
use ndpdb_formats::{Error, Lpn, RecId, Value};
use ndpdb_scan::{walk_heads, PageSource, Pipeline};

use super::walker::Walker;
use crate::store::PageBytes;

impl PageSource for Walker<'_> {
    type Page = PageBytes;

    fn page(&mut self, lpn: Lpn, last: u16) -> Result<PageBytes, Error> {
        self.resolve_page(RecId::new(lpn, last))
    }

    fn older_visible(&mut self, rid: RecId, row: &mut Vec<Value>) -> Result<bool, Error> {
        let snapshot = &self.task.inv.snapshot;
        let visible = find_visible(rid, snapshot, |rid| {
            let rec = self.resolve(rid)?;
            let h = rec.header()?;
            Ok::<_, Error>((h, rec))
        })?;
        match visible {
            Visible::Version(_, rec) => {
                rec.decode_into(self.task.wanted, row)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

impl Walker<'_> {
    /// Walks one chunk of heads through `pipeline`, page by page.
    pub(super) fn walk_pages(
        &mut self,
        chunk: u64,
        heads: &[RecId],
        pipeline: &Pipeline,
    ) -> Result<(), Error> {
        let mut state = std::mem::take(&mut self.state);
        let mut buf = std::mem::take(&mut self.buffers);
        let snapshot = &self.task.inv.snapshot;
        self.tuples += walk_heads(pipeline, &mut state, snapshot, heads, self, &mut buf)?;
        if !state.rows.is_empty() {
            self.rows.push((chunk, std::mem::take(&mut state.rows)));
        }
        self.state = state;
        self.buffers = buf;
        Ok(())
    }
}
