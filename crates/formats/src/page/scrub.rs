//! Verifying a run of stored pages where they lie: every 8 KiB page is
//! either never written (all zeros) or sealed with a matching checksum.
//! The device's stores hold pages back to back, so a run is one file
//! range or one RADOS object; the object class `ndp` runs this inside
//! the OSD that holds the object and returns only the [`Scrub`] summary.
//!
//! ```text
//!  run:   │ page 0 │ page 1 │ page 2 (zeros) │ page 3 (bad crc) │
//!  Scrub { pages: 4, verified: 2, never_written: 1, bad: 1, first_bad: Some(3) }
//!  wire:  pages u64 │ verified u64 │ never_written u64 │ bad u64 │ first_bad u64 (MAX: none)   (LE)
//! ```

use super::{PageRef, PAGE_SIZE};
use crate::error::{Error, Result};

/// What [`scrub`] found in a run of pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scrub {
    /// Whole pages in the run (a partial last page counts as bad).
    pub pages: u64,
    /// Sealed pages whose checksum matches.
    pub verified: u64,
    /// All-zero pages: allocated but never written.
    pub never_written: u64,
    /// Anything else: unsealed, torn, checksum mismatch, a partial page.
    pub bad: u64,
    /// The index of the first bad page in the run.
    pub first_bad: Option<u64>,
}

/// Bytes of an encoded [`Scrub`].
pub const SCRUB_BYTES: usize = 40;

/// Checks every page of `run` (pages back to back from byte 0).
pub fn scrub(run: &[u8]) -> Scrub {
    let mut s = Scrub::default();
    for (i, page) in run.chunks(PAGE_SIZE).enumerate() {
        s.pages += 1;
        if page.len() == PAGE_SIZE && page.iter().all(|&b| b == 0) {
            s.never_written += 1;
        } else if page.len() == PAGE_SIZE && PageRef::parse_verified(page).is_ok() {
            s.verified += 1;
        } else {
            s.bad += 1;
            s.first_bad.get_or_insert(i as u64);
        }
    }
    s
}

impl Scrub {
    /// Adds the scrub of a run that starts `first` pages into the whole.
    pub fn add(&mut self, first: u64, run: &Scrub) {
        self.pages += run.pages;
        self.verified += run.verified;
        self.never_written += run.never_written;
        self.bad += run.bad;
        if self.first_bad.is_none() {
            self.first_bad = run.first_bad.map(|b| first + b);
        }
    }

    pub fn encode(&self) -> [u8; SCRUB_BYTES] {
        let mut out = [0u8; SCRUB_BYTES];
        let fields = [
            self.pages,
            self.verified,
            self.never_written,
            self.bad,
            self.first_bad.unwrap_or(u64::MAX),
        ];
        for (chunk, v) in out.chunks_exact_mut(8).zip(fields) {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        out
    }

    /// Decodes a reply; anything but [`SCRUB_BYTES`] consistent bytes is
    /// `Corrupted`.
    pub fn decode(bytes: &[u8]) -> Result<Scrub> {
        if bytes.len() != SCRUB_BYTES {
            return Err(Error::corrupted(format!(
                "scrub reply of {} bytes, not {SCRUB_BYTES}",
                bytes.len()
            )));
        }
        let f = |i: usize| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap());
        let s = Scrub {
            pages: f(0),
            verified: f(1),
            never_written: f(2),
            bad: f(3),
            first_bad: Some(f(4)).filter(|&v| v != u64::MAX),
        };
        let consistent = s
            .verified
            .checked_add(s.never_written)
            .and_then(|n| n.checked_add(s.bad))
            == Some(s.pages)
            && (s.bad == 0) == s.first_bad.is_none()
            && !matches!(s.first_bad, Some(b) if b >= s.pages);
        if !consistent {
            return Err(Error::corrupted(format!("inconsistent scrub reply {s:?}")));
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{Lpn, TableId};
    use crate::page::PageBuf;
    use crate::types::DataType;

    fn sealed(lpn: u64) -> Vec<u8> {
        let mut p = PageBuf::new(TableId(7), Lpn(lpn), &[DataType::BigInt]);
        p.seal();
        p.as_bytes().to_vec()
    }

    #[test]
    fn finds_sealed_zero_and_damaged_pages() {
        let mut run = sealed(1);
        run.extend(vec![0u8; PAGE_SIZE]);
        let mut torn = sealed(2);
        torn[PAGE_SIZE - 1] ^= 0xff;
        run.extend(&torn);
        run.extend(sealed(3));
        run.extend(&[1, 2, 3]);
        let s = scrub(&run);
        assert_eq!(
            s,
            Scrub {
                pages: 5,
                verified: 2,
                never_written: 1,
                bad: 2,
                first_bad: Some(2)
            }
        );
        assert_eq!(Scrub::decode(&s.encode()).unwrap(), s);
        assert_eq!(scrub(&[]), Scrub::default());
    }

    #[test]
    fn a_damaged_reply_is_corrupted_not_believed() {
        let mut e = scrub(&sealed(1)).encode();
        e[8] = 9; // verified 9 of 1 page
        assert!(matches!(Scrub::decode(&e), Err(Error::Corrupted(_))));
        assert!(matches!(Scrub::decode(&e[..39]), Err(Error::Corrupted(_))));
    }
}
