//! Visibility by page: a PE's walk for scans and aggregates.
//!
//! The heads of a chunk come in VID order; consecutive heads on one page
//! form a run. A run is resolved once and checked against the page
//! summary: when the page's newest creator is older than the snapshot's
//! xmin and it holds no tombstones, every head in the run is the version
//! the snapshot sees and the run goes to the kernels as it is. Otherwise
//! each head's creator is checked against the snapshot; a head the
//! snapshot does not see is a straggler — the rows before it are run
//! through the kernels, then its chain is walked and the visible version
//! runs through the row path — so rows keep VID order exactly.
//!
//! ```text
//!  heads: 7:0 7:1 7:2 7:3 │ 8:0 8:1 9:4 8:2 │ …
//!         └─ run on 7 ──┘   └ run 8 ┘ └9┘└8┘
//!  run ─► summary: all visible? ─► selection [0 1 2 3] ─► kernels
//!                  no ─► per head: sees(creator)? ─► selection
//!                                  no ─► flush selection, walk chain, row path
//! ```

use ndpdb_formats::page::PageRef;
use ndpdb_formats::visibility::{find_visible, Visible};
use ndpdb_formats::{Error, RecId};
use ndpdb_scan::Pipeline;

use super::Walker;

impl Walker<'_> {
    /// Walks one chunk of heads through `pipeline`.
    pub(super) fn walk_pages(
        &mut self,
        chunk: u64,
        heads: &[RecId],
        pipeline: &Pipeline,
    ) -> Result<(), Error> {
        let snapshot = &self.task.inv.snapshot;
        let mut sel = std::mem::take(&mut self.sel);
        let mut i = 0;
        while i < heads.len() {
            let head = heads[i];
            if head.is_null() {
                i += 1;
                continue;
            }
            let lpn = head.lpn();
            let mut j = i + 1;
            let mut last = head.slot();
            while j < heads.len() && !heads[j].is_null() && heads[j].lpn() == lpn {
                last = last.max(heads[j].slot());
                j += 1;
            }
            self.tuples += (j - i) as u64;
            let page = self.resolve_page(RecId::new(lpn, last))?;
            let view = PageRef::parse(&page)?;
            if last >= view.slot_count() {
                return Err(Error::corrupted(format!(
                    "{} is beyond its page",
                    RecId::new(lpn, last)
                )));
            }
            let (_, newest) = view.creator_range();
            let all_visible =
                newest < snapshot.xmin && view.tombstones() == 0 && view.empty_slots() == 0;
            sel.clear();
            for h in &heads[i..j] {
                let slot = h.slot();
                if all_visible {
                    sel.push(slot);
                    continue;
                }
                let header = view
                    .header(slot)?
                    .ok_or_else(|| Error::corrupted(format!("{h} is an empty slot")))?;
                if snapshot.sees(header.creator) {
                    if !header.is_tombstone() {
                        sel.push(slot);
                    }
                    continue;
                }
                if !sel.is_empty() {
                    pipeline.page(&mut self.state, &view, &mut sel)?;
                    sel.clear();
                }
                let visible = find_visible(header.pred, snapshot, |rid| {
                    let rec = self.resolve(rid)?;
                    let h = rec.header()?;
                    Ok::<_, Error>((h, rec))
                })?;
                if let Visible::Version(_, rec) = visible {
                    rec.decode_into(pipeline.wanted(), &mut self.row)?;
                    pipeline.row(&mut self.state, &self.row)?;
                }
            }
            if !sel.is_empty() {
                pipeline.page(&mut self.state, &view, &mut sel)?;
            }
            i = j;
        }
        self.sel = sel;
        if !self.state.rows.is_empty() {
            self.rows
                .push((chunk, std::mem::take(&mut self.state.rows)));
        }
        Ok(())
    }
}
