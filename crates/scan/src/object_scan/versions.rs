//! Update NDP's read in the object: the visible version of each head
//! that passes the filter, whole, with its VID and RecId, for the device
//! engine to lock, certify and change ([`super::ObjectOp::Versions`]).
//!
//! ```text
//!  head ─► chain walk on the object's pages ─► version seen ─► filter ─► [VID, RecId, columns…]
//!              └─ leaves the object ─► deferred at the head (the device engine walks it)
//! ```
//!
//! The kernels are not used: an update visits each qualifying row once
//! and writes a new version of it; what the object saves the host is
//! reading the pages.

use rustc_hash::FxHashSet;

use ndpdb_formats::visibility::Visible;
use ndpdb_formats::{Error, Result, Value};

use super::{ObjectPages, ObjectReply, ObjectScan, Walk};

pub(super) fn run(req: &ObjectScan, object: &[u8]) -> Result<ObjectReply> {
    let wanted = vec![true; req.plan.types.len()];
    let mut source = ObjectPages {
        object,
        index: req.pages.iter().copied().collect(),
        snapshot: &req.plan.snapshot,
        wanted: &wanted,
        verified: FxHashSet::default(),
        chunk: 0,
        deferred: Vec::new(),
    };
    let mut reply = ObjectReply::default();
    let mut row = Vec::with_capacity(req.plan.types.len());
    for (chunk, heads) in &req.chunks {
        let mut rows = Vec::new();
        for &head in heads {
            reply.tuples += 1;
            let (at, view) = match source.visible(head) {
                Ok(Visible::Version(at, view)) => (at, view),
                Ok(Visible::None | Visible::Deleted(_)) => continue,
                Err(Walk::Elsewhere(_)) => {
                    reply.deferred.push((*chunk, head));
                    continue;
                }
                Err(Walk::Failed(e)) => return Err(e),
            };
            let header = view
                .header(at.slot())?
                .ok_or_else(|| Error::corrupted(format!("{at} is an empty slot")))?;
            view.decode_row_into(at.slot(), Some(&wanted), &mut row)?;
            if let Some(f) = &req.plan.filter {
                if !f.eval_predicate(&row, &req.plan.params)? {
                    continue;
                }
            }
            let mut out = Vec::with_capacity(row.len() + 2);
            out.push(Value::BigInt(header.vid.0 as i64));
            out.push(Value::BigInt(at.raw() as i64));
            out.append(&mut row);
            rows.push(out);
        }
        if !rows.is_empty() {
            reply.rows.push((*chunk, rows));
        }
    }
    Ok(reply)
}
