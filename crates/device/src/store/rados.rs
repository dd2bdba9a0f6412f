//! The page store's RADOS medium: pages in objects of
//! [`PAGES_PER_OBJECT`] pages (4 MiB), named `PREFIX.pages.N`.
//!
//! ```text
//!  PPN p ──▶ object PREFIX.pages.{p / 512:08}, bytes (p mod 512) × 8 KiB
//!  object:  │ page 512N │ page 512N+1 │ … │ (short: pages past its end were never written)
//! ```
//!
//! A batch of page writes is one write operation per object it
//! touches, each atomic on its own; a batch across two objects can land
//! half on a crash, as a file write can tear: the host's page checksums and its
//! rule to merge maps only after a sync cover both. A write returns once
//! the object's replicas hold it, so `sync` has nothing left to do.
//! Reads past an object's end, or of an object never written, are zeros.
//!
//! At open the page count is recovered from the highest object and its
//! size: one listing of the pool.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ndpdb_formats::page::scrub::{Scrub, SCRUB_BYTES};
use ndpdb_formats::page::PAGE_SIZE;
use ndpdb_formats::Ppn;
use ndpdb_link::{LinkError, Result};
use ndpdb_rados::{Error as RadosError, Pool, WriteOp};

/// What an OSD answers for a class or method it does not have.
const EOPNOTSUPP: i32 = 95;

/// Pages per object: 4 MiB objects, RADOS' default object size.
pub const PAGES_PER_OBJECT: u64 = 512;

/// The pages of one device store in a pool.
pub struct RadosPages {
    pool: Arc<Pool>,
    /// Objects are `{prefix}.pages.N`.
    prefix: String,
    /// Per [`ObjectMethod`]: an OSD answered that it does not have it
    /// (no class `ndp`, or one loaded before the method existed); the
    /// engine reads pages instead, from then on.
    missing: [AtomicBool; 2],
    /// Objects a scan calls at once.
    in_flight: usize,
}

/// The methods of class `ndp` an NDP job calls on page objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectMethod {
    /// `scan_v1`: a scan's or an aggregate's share.
    Scan,
    /// `versions_v1`: an update's read of the versions it changes (the
    /// request format of `scan_v1`, [`ndpdb_scan::object_scan::ObjectOp::Versions`]).
    Versions,
}

impl ObjectMethod {
    pub fn name(self) -> &'static str {
        match self {
            ObjectMethod::Scan => "scan_v1",
            ObjectMethod::Versions => "versions_v1",
        }
    }
}

/// What one object's call came back with.
pub enum ObjectCall {
    Reply(Vec<u8>),
    /// The OSD has no class `ndp` with the method called.
    NoClass,
}

/// RADOS errors as the link reports storage errors.
pub(crate) fn link_err(e: RadosError) -> LinkError {
    match e {
        RadosError::Unavailable(_) | RadosError::Connect { .. } => {
            LinkError::Unsupported(e.to_string())
        }
        e => LinkError::Io(e.to_string()),
    }
}

impl RadosPages {
    /// The store under `prefix` in `pool`, with the pages it holds; a
    /// scan calls up to `in_flight` objects at once (0 = 64).
    pub fn open(pool: Arc<Pool>, prefix: &str, in_flight: usize) -> Result<(RadosPages, u64)> {
        let pages = RadosPages {
            pool,
            prefix: prefix.to_string(),
            missing: [AtomicBool::new(false), AtomicBool::new(false)],
            in_flight: if in_flight == 0 { 64 } else { in_flight },
        };
        let head = format!("{}.pages.", pages.prefix);
        let last = pages
            .pool
            .objects()
            .map_err(link_err)?
            .into_iter()
            .filter_map(|o| o.strip_prefix(&head)?.parse::<u64>().ok())
            .max();
        let count = match last {
            None => 0,
            Some(n) => {
                let size = pages.pool.stat(&pages.object(n)).map_err(link_err)?;
                n * PAGES_PER_OBJECT + size.unwrap_or(0).div_ceil(PAGE_SIZE as u64)
            }
        };
        Ok((pages, count))
    }

    fn object(&self, n: u64) -> String {
        format!("{}.pages.{n:08}", self.prefix)
    }

    /// The pieces of a run of bytes from page `first` on, one per object:
    /// (object number, byte offset in it, byte range of the run).
    fn pieces(first: Ppn, len: usize) -> impl Iterator<Item = (u64, u64, std::ops::Range<usize>)> {
        let pages = (len / PAGE_SIZE) as u64;
        let mut p = first.0;
        let end = first.0 + pages;
        std::iter::from_fn(move || {
            if p >= end {
                return None;
            }
            let n = p / PAGES_PER_OBJECT;
            let upto = ((n + 1) * PAGES_PER_OBJECT).min(end);
            let at = (p - first.0) as usize * PAGE_SIZE;
            let piece = (
                n,
                (p % PAGES_PER_OBJECT) * PAGE_SIZE as u64,
                at..at + (upto - p) as usize * PAGE_SIZE,
            );
            p = upto;
            Some(piece)
        })
    }

    /// Fills `out` (whole pages) from page `first` on; zeros where
    /// nothing was written.
    pub(super) fn read_run(&self, first: Ppn, out: &mut [u8]) -> Result<()> {
        for (n, offset, range) in RadosPages::pieces(first, out.len()) {
            let dst = &mut out[range];
            let got = match self.pool.read(&self.object(n), offset, dst.len()) {
                Ok(bytes) => bytes,
                Err(RadosError::NotFound(_)) => Vec::new(),
                Err(e) => return Err(link_err(e)),
            };
            dst[..got.len()].copy_from_slice(&got);
            dst[got.len()..].fill(0);
        }
        Ok(())
    }

    /// Whether the OSDs may have `method` (none said otherwise).
    pub(super) fn has(&self, method: ObjectMethod) -> bool {
        !self.missing[method as usize].load(Ordering::Relaxed)
    }

    /// Objects a scan calls at once.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Calls `method` of class `ndp` on objects (by number) at once, each
    /// with its request; replies of up to `reply_cap` bytes, in call order.
    pub fn call(
        &self,
        method: ObjectMethod,
        calls: &[(u64, Vec<u8>)],
        reply_cap: usize,
    ) -> Result<Vec<ObjectCall>> {
        let names: Vec<String> = calls.iter().map(|(n, _)| self.object(*n)).collect();
        let calls: Vec<(&str, &[u8])> = names
            .iter()
            .zip(calls)
            .map(|(name, (_, req))| (name.as_str(), &req[..]))
            .collect();
        let replies = self
            .pool
            .exec_all(&calls, "ndp", method.name(), reply_cap)
            .map_err(link_err)?;
        replies
            .into_iter()
            .map(|r| match r {
                Ok(bytes) => Ok(ObjectCall::Reply(bytes)),
                Err(RadosError::Os { errno, .. }) if errno == EOPNOTSUPP => {
                    self.missing[method as usize].store(true, Ordering::Relaxed);
                    Ok(ObjectCall::NoClass)
                }
                Err(e) => Err(link_err(e)),
            })
            .collect()
    }

    /// Writes whole pages: one operation per object they fall in (its
    /// extents written at once, atomically for that object), so a batch
    /// of scattered pages costs a round trip per object, not per page.
    pub(super) fn write_pages(&self, pages: &[(Ppn, &[u8])]) -> Result<()> {
        let mut by_object: std::collections::BTreeMap<u64, WriteOp> = Default::default();
        for (ppn, bytes) in pages {
            let (n, at) = (ppn.0 / PAGES_PER_OBJECT, ppn.0 % PAGES_PER_OBJECT);
            let op = by_object.entry(n).or_default();
            *op = std::mem::take(op).write(at * PAGE_SIZE as u64, bytes);
        }
        for (n, op) in by_object {
            self.pool.operate(&self.object(n), &op).map_err(link_err)?;
        }
        Ok(())
    }

    /// Scrubs every object inside the OSDs (class `ndp`, `scrub_v1`),
    /// all objects at once; an object never written counts its pages as
    /// never written.
    pub(super) fn scrub(&self, page_count: u64) -> Result<Scrub> {
        let objects = page_count.div_ceil(PAGES_PER_OBJECT);
        let names: Vec<String> = (0..objects).map(|n| self.object(n)).collect();
        let calls: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &[][..])).collect();
        let replies = self
            .pool
            .exec_all(&calls, "ndp", "scrub_v1", SCRUB_BYTES)
            .map_err(link_err)?;
        let mut total = Scrub::default();
        for (n, reply) in (0..objects).zip(replies) {
            let first = n * PAGES_PER_OBJECT;
            let in_object = (page_count - first).min(PAGES_PER_OBJECT);
            let mut s = match reply {
                Ok(bytes) => {
                    Scrub::decode(&bytes).map_err(|e| LinkError::Corrupted(e.to_string()))?
                }
                Err(RadosError::NotFound(_)) => Scrub::default(),
                Err(e) => return Err(link_err(e)),
            };
            // Pages past the object's end, up to the store's count, were
            // never written.
            let short = in_object.saturating_sub(s.pages);
            s.pages += short;
            s.never_written += short;
            total.add(first, &s);
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_split_at_object_boundaries() {
        let pieces: Vec<_> = RadosPages::pieces(Ppn(510), 5 * PAGE_SIZE).collect();
        assert_eq!(
            pieces,
            vec![
                (0, 510 * PAGE_SIZE as u64, 0..2 * PAGE_SIZE),
                (1, 0, 2 * PAGE_SIZE..5 * PAGE_SIZE),
            ]
        );
        let one: Vec<_> = RadosPages::pieces(Ppn(1024), PAGE_SIZE).collect();
        assert_eq!(one, vec![(2, 0, 0..PAGE_SIZE)]);
    }
}
