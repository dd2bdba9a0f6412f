//! ΔMaps (update NDP §4.1, Fig. 9): the map deltas of an update or GC
//! job — ΔL2P, the pages it wrote, and ΔVID, the heads it moves — with
//! the one codec every carrier uses: the device's job result, the
//! End-NDP and Gc WAL records, and the host's own bookkeeping.
//!
//! ```text
//!  ΔL2P  n u32, (LPN u64, PPN u64)*
//!  ΔVID  n u32, (VID u64, pred RecId u64, new RecId u64)*
//! ```

use crate::codec::{Reader, Writer};
use crate::error::Result;
use crate::ids::{Lpn, Ppn, RecId, Vid};

/// ΔL2P (or any list of pages) as `n u32, (LPN u64, PPN u64)*` — the
/// one codec of page lists in link payloads and WAL records.
pub fn encode_pages(pages: &[(Lpn, Ppn)], w: &mut Writer) {
    w.u32(pages.len() as u32);
    for (l, p) in pages {
        w.u64(l.0).u64(p.0);
    }
}

pub fn decode_pages(r: &mut Reader<'_>) -> Result<Vec<(Lpn, Ppn)>> {
    let n = r.count(16)?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push((Lpn(r.u64()?), Ppn(r.u64()?)));
    }
    Ok(v)
}

/// ΔVID entry of an update-NDP job: the tuple, the version the new one
/// replaces (what the host validates against its VID head), the new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeltaVid {
    pub vid: Vid,
    pub pred: RecId,
    pub new: RecId,
}

/// ΔVID as `n u32, (VID u64, pred RecId u64, new RecId u64)*` — the one
/// codec of ΔVID lists in link payloads and WAL records.
pub fn encode_delta_vids(vids: &[DeltaVid], w: &mut Writer) {
    w.u32(vids.len() as u32);
    for d in vids {
        w.u64(d.vid.0).u64(d.pred.raw()).u64(d.new.raw());
    }
}

pub fn decode_delta_vids(r: &mut Reader<'_>) -> Result<Vec<DeltaVid>> {
    let n = r.count(24)?;
    let mut vids = Vec::with_capacity(n);
    for _ in 0..n {
        vids.push(DeltaVid {
            vid: Vid(r.u64()?),
            pred: RecId::from_raw(r.u64()?),
            new: RecId::from_raw(r.u64()?),
        });
    }
    Ok(vids)
}

/// ΔMaps (update NDP §4.1, Fig. 9): the pages a job wrote, under the LPNs
/// it was granted, and the VID heads it moves — one type, one codec, for
/// an update or GC job's result and for the End-NDP and Gc WAL records.
/// Layout: `n u32, (LPN u64, PPN u64)*` then the ΔVID list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeltaMaps {
    /// ΔL2P: pages written (a subset of the job's space).
    pub l2p: Vec<(Lpn, Ppn)>,
    /// ΔVID: (VID, predecessor, new head).
    pub vids: Vec<DeltaVid>,
}

impl DeltaMaps {
    pub fn encode(&self, w: &mut Writer) {
        encode_pages(&self.l2p, w);
        encode_delta_vids(&self.vids, w);
    }

    pub fn decode(r: &mut Reader<'_>) -> Result<DeltaMaps> {
        Ok(DeltaMaps {
            l2p: decode_pages(r)?,
            vids: decode_delta_vids(r)?,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.l2p.is_empty() && self.vids.is_empty()
    }
}
