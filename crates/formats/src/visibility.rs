//! The visibility rule (DESIGN.md §3), shared by host and device.
//!
//! ```text
//!            xmin                        xmax
//!   ─────────────┼──────────────────────────┼──────────▶ TxId
//!   committed    │ committed unless in the  │ started after the
//!   (visible)    │ in-flight set            │ snapshot (invisible)
//! ```
//!
//! A version is visible to a snapshot iff its creator is the reader
//! itself, or the creator is below `xmax` and not in the in-flight set.
//! Only committed (or committing) transactions ever place versions in
//! storage, so "not in flight and below xmax" means "committed before".
//! A tuple is read by walking its new-to-old chain from the VID-map head
//! until the first visible version; a visible tombstone means "deleted".
//! The device runs this same code on its own maps (DANSEN Algorithm 1).

use crate::codec::{Reader, Writer};
use crate::error::{Error, Result};
use crate::ids::{RecId, TxId};
use crate::record::RecordHeader;

/// Longest chain walked before the data is called corrupt (a cycle).
pub const MAX_CHAIN: u64 = 1 << 24;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The reading transaction.
    pub txid: TxId,
    /// Every TxId below this is finished.
    pub xmin: TxId,
    /// Every TxId at or above this started after the snapshot.
    pub xmax: TxId,
    /// Transactions running when the snapshot was taken (sorted).
    pub in_flight: Vec<TxId>,
}

impl Snapshot {
    pub fn sees(&self, creator: TxId) -> bool {
        if creator == self.txid {
            return true;
        }
        if creator >= self.xmax {
            return false;
        }
        creator < self.xmin || self.in_flight.binary_search(&creator).is_err()
    }
}

/// Result of a visibility walk.
#[derive(Debug, Clone, PartialEq)]
pub enum Visible<R> {
    /// No version of the chain is visible (created after the snapshot).
    None,
    /// The visible version is a tombstone: the tuple is deleted.
    Deleted(RecId),
    /// The visible version.
    Version(RecId, R),
}

/// Walks a new-to-old chain from `head`; `fetch` returns the header and a
/// payload for a RecId. Chains longer than `MAX_CHAIN` are reported as
/// corrupt (a cycle would otherwise never end).
pub fn find_visible<R, E: From<Error>>(
    head: RecId,
    snapshot: &Snapshot,
    mut fetch: impl FnMut(RecId) -> Result<(RecordHeader, R), E>,
) -> Result<Visible<R>, E> {
    let mut rid = head;
    let mut hops = 0u64;
    while !rid.is_null() {
        let (h, payload) = fetch(rid)?;
        if snapshot.sees(h.creator) {
            return Ok(if h.is_tombstone() {
                Visible::Deleted(rid)
            } else {
                Visible::Version(rid, payload)
            });
        }
        rid = h.pred;
        hops += 1;
        if hops > MAX_CHAIN {
            return Err(Error::corrupted("version chain does not end").into());
        }
    }
    Ok(Visible::None)
}

impl Snapshot {
    pub fn encode(&self, w: &mut Writer) {
        w.u64(self.txid.0).u64(self.xmin.0).u64(self.xmax.0);
        w.u32(self.in_flight.len() as u32);
        for t in &self.in_flight {
            w.u64(t.0);
        }
    }

    pub fn decode(r: &mut Reader<'_>) -> Result<Snapshot> {
        let txid = TxId(r.u64()?);
        let xmin = TxId(r.u64()?);
        let xmax = TxId(r.u64()?);
        let n = r.count(8)?;
        let mut in_flight = Vec::with_capacity(n);
        for _ in 0..n {
            in_flight.push(TxId(r.u64()?));
        }
        if !in_flight.windows(2).all(|w| w[0] < w[1]) {
            return Err(Error::corrupted("snapshot in-flight list not sorted"));
        }
        Ok(Snapshot {
            txid,
            xmin,
            xmax,
            in_flight,
        })
    }
}
