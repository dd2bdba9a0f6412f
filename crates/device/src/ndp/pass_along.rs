//! Pass-along, the device's side (DESIGN.md §5; DANSEN §3.2): the state
//! the host passes along with an NDP call — its delta-buffer pages (not
//! flushed yet, no PPN) and its ΔVID overlay (heads newer than the device
//! VID map) — cached for that one call, and the rule that it takes
//! precedence over what the device stores.
//!
//! ```text
//!  NDP_SHARED {pages, vids} ─► PassedAlong (checked, cached by handle)
//!  NDP_CALL {shared: handle} ─► taken by the job, read by its PEs and GC:
//!     head of VID v:    ΔVID overlay[v]            else device VID map[v]
//!     page of RecId r:  passed-along page of r.lpn
//!                       (if it has r's slot)       else L2P → store
//! ```
//!
//! A passed-along page may have gained records after it was captured
//! (and then been flushed, which is why a map may point past its end):
//! only a page that has the slot a RecId names answers for it.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use ndpdb_formats::page::PageRef;
use ndpdb_formats::{Error, Lpn, RecId, Vid};
use ndpdb_link::ndp::SharedState;

use crate::store::PageBytes;

/// The passed-along shared state, as the device caches it for one job.
#[derive(Default)]
pub(crate) struct PassedAlong {
    pub pages: FxHashMap<Lpn, PageBytes>,
    pub vids: FxHashMap<Vid, RecId>,
}

impl PassedAlong {
    /// NDP_SHARED: the host's state, every page's structure checked.
    pub fn from_state(s: SharedState) -> Result<PassedAlong, Error> {
        let mut pages = FxHashMap::default();
        for (lpn, bytes) in s.pages {
            PageRef::parse_checked(&bytes)?;
            pages.insert(lpn, PageBytes::Owned(Arc::new(bytes)));
        }
        Ok(PassedAlong {
            pages,
            vids: s.vids.into_iter().collect(),
        })
    }

    /// The passed-along head of `vid`, if the host has a newer one than
    /// the device VID map.
    pub fn head(&self, vid: Vid) -> Option<RecId> {
        self.vids.get(&vid).copied()
    }

    /// The passed-along page that holds `rid`, if there is one.
    pub fn page(&self, rid: RecId) -> Option<&PageBytes> {
        self.pages.get(&rid.lpn()).filter(|p| has_slot(p, rid))
    }

    /// Whether the host passed page `lpn` along (it is still in its delta
    /// buffer: the device's copy, if any, is older).
    pub fn holds(&self, lpn: Lpn) -> bool {
        self.pages.contains_key(&lpn)
    }
}

/// Whether `page` has the slot `rid` names.
pub(crate) fn has_slot(page: &[u8], rid: RecId) -> bool {
    PageRef::parse(page).is_ok_and(|v| rid.slot() < v.slot_count())
}
