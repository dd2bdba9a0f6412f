//! 8 KiB N-ary slotted pages (NSM; DESIGN.md §2, DANSEN Fig. 1-(b)).
//!
//! ```text
//!  0                                32
//!  ┌────────────────────────────────┬──────┬──────┬─────┬─────────────────┐
//!  │ header                         │slot 0│slot 1│ ... │→ free    ←      │
//!  └────────────────────────────────┴──────┴──────┴─────┴─────────────────┘
//!                                            records grow ↑ from the end:
//!                                  ┌──────────────┬─────────┬──────────┐
//!                          free_end│ record n     │   ...   │ record 0 │8192
//!                                  └──────────────┴─────────┴──────────┘
//! header:  magic "NDPG" | version u16 | flags u16 | table u32 |
//!          slot count u16 | free_end u16 | LPN u64 | crc32 u32 | 0 u32
//! slot:    offset u16 | length u16      (offset 0 = empty slot)
//! ```
//!
//! Records start on 4-byte boundaries. Pages are logically append-only:
//! once sealed (checksum written) and flushed, a page is never modified.
//! The checksum is CRC-32 over the page with the checksum field zeroed.

use crate::error::{Error, Result};
use crate::ids::{Lpn, TableId};

pub const PAGE_SIZE: usize = 8192;
pub const PAGE_HEADER_SIZE: usize = 32;
pub const SLOT_SIZE: usize = 4;
pub const PAGE_MAGIC: &[u8; 4] = b"NDPG";
pub const PAGE_VERSION: u16 = 1;
pub const FLAG_SEALED: u16 = 0x1;
/// Largest record a page can hold.
pub const MAX_RECORD_SIZE: usize = PAGE_SIZE - PAGE_HEADER_SIZE - SLOT_SIZE;

const OFF_FLAGS: usize = 6;
const OFF_TABLE: usize = 8;
const OFF_SLOTS: usize = 12;
const OFF_FREE_END: usize = 14;
const OFF_LPN: usize = 16;
const OFF_CRC: usize = 24;

fn rd16(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn rd32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
fn wr16(b: &mut [u8], o: usize, v: u16) {
    b[o..o + 2].copy_from_slice(&v.to_le_bytes());
}
fn wr32(b: &mut [u8], o: usize, v: u32) {
    b[o..o + 4].copy_from_slice(&v.to_le_bytes());
}

fn page_crc(b: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&b[..OFF_CRC]);
    h.update(&[0, 0, 0, 0]);
    h.update(&b[OFF_CRC + 4..]);
    h.finalize()
}

/// An owned, writable page (the delta buffer's unit).
#[derive(Clone)]
pub struct PageBuf {
    bytes: Box<[u8; PAGE_SIZE]>,
}

impl std::fmt::Debug for PageBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PageBuf(lpn={}, table={}, slots={}, free={})",
            self.lpn().0,
            self.table().0,
            self.slot_count(),
            self.free_space()
        )
    }
}

impl PageBuf {
    pub fn new(table: TableId, lpn: Lpn) -> PageBuf {
        let mut bytes = Box::new([0u8; PAGE_SIZE]);
        bytes[0..4].copy_from_slice(PAGE_MAGIC);
        wr16(&mut bytes[..], 4, PAGE_VERSION);
        wr32(&mut bytes[..], OFF_TABLE, table.0);
        bytes[OFF_LPN..OFF_LPN + 8].copy_from_slice(&lpn.0.to_le_bytes());
        // PAGE_SIZE (8192) fits in u16; free_end == 8192 means "no records".
        wr16(&mut bytes[..], OFF_FREE_END, PAGE_SIZE as u16);
        PageBuf { bytes }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..]
    }

    pub fn view(&self) -> PageRef<'_> {
        PageRef {
            bytes: &self.bytes[..],
        }
    }

    pub fn lpn(&self) -> Lpn {
        self.view().lpn()
    }

    pub fn table(&self) -> TableId {
        self.view().table()
    }

    pub fn slot_count(&self) -> u16 {
        self.view().slot_count()
    }

    fn free_end(&self) -> usize {
        rd16(&self.bytes[..], OFF_FREE_END) as usize
    }

    /// Bytes available for one more record including its slot.
    pub fn free_space(&self) -> usize {
        let dir_end = PAGE_HEADER_SIZE + SLOT_SIZE * self.slot_count() as usize;
        self.free_end().saturating_sub(dir_end)
    }

    pub fn is_sealed(&self) -> bool {
        rd16(&self.bytes[..], OFF_FLAGS) & FLAG_SEALED != 0
    }

    /// Whether a record of `len` bytes fits.
    pub fn fits(&self, len: usize) -> bool {
        let dir_end = PAGE_HEADER_SIZE + SLOT_SIZE * (self.slot_count() as usize + 1);
        let start = (self.free_end().saturating_sub(len)) & !3;
        !self.is_sealed()
            && len <= MAX_RECORD_SIZE
            && start >= dir_end
            && self.slot_count() < u16::MAX
    }

    /// Appends a record; returns its slot, or `None` if it does not fit.
    pub fn append(&mut self, record: &[u8]) -> Option<u16> {
        let slot = self.slot_count();
        self.place(slot, record).ok().map(|_| slot)
    }

    /// Writes `record` at `slot`, which must be ≥ the current slot count;
    /// skipped slots stay empty. Used by WAL replay to rebuild pages exactly.
    pub fn place(&mut self, slot: u16, record: &[u8]) -> Result<()> {
        let count = self.slot_count();
        if slot < count {
            return Err(Error::corrupted(format!("slot {slot} already used")));
        }
        let dir_end = PAGE_HEADER_SIZE + SLOT_SIZE * (slot as usize + 1);
        let start = self.free_end().checked_sub(record.len()).map(|s| s & !3);
        let start = match start {
            Some(s) if s >= dir_end && !self.is_sealed() && record.len() <= u16::MAX as usize => s,
            _ => return Err(Error::corrupted("record does not fit in page")),
        };
        self.bytes[start..start + record.len()].copy_from_slice(record);
        for s in count..slot {
            let o = PAGE_HEADER_SIZE + SLOT_SIZE * s as usize;
            wr32(&mut self.bytes[..], o, 0);
        }
        let o = PAGE_HEADER_SIZE + SLOT_SIZE * slot as usize;
        wr16(&mut self.bytes[..], o, start as u16);
        wr16(&mut self.bytes[..], o + 2, record.len() as u16);
        wr16(&mut self.bytes[..], OFF_SLOTS, slot + 1);
        wr16(&mut self.bytes[..], OFF_FREE_END, start as u16);
        Ok(())
    }

    /// Marks the page immutable and writes its checksum.
    pub fn seal(&mut self) {
        let flags = rd16(&self.bytes[..], OFF_FLAGS) | FLAG_SEALED;
        wr16(&mut self.bytes[..], OFF_FLAGS, flags);
        let crc = page_crc(&self.bytes[..]);
        wr32(&mut self.bytes[..], OFF_CRC, crc);
    }
}

/// A validated, read-only view of page bytes.
#[derive(Clone, Copy)]
pub struct PageRef<'a> {
    bytes: &'a [u8],
}

impl<'a> PageRef<'a> {
    /// Checks size, magic, version and directory bounds (not the checksum).
    pub fn parse(bytes: &'a [u8]) -> Result<PageRef<'a>> {
        if bytes.len() != PAGE_SIZE {
            return Err(Error::corrupted(format!("page has {} bytes", bytes.len())));
        }
        if &bytes[0..4] != PAGE_MAGIC {
            return Err(Error::corrupted("bad page magic"));
        }
        if rd16(bytes, 4) != PAGE_VERSION {
            return Err(Error::corrupted("unknown page format version"));
        }
        let slots = rd16(bytes, OFF_SLOTS) as usize;
        let free_end = rd16(bytes, OFF_FREE_END) as usize;
        let free_end = if free_end == 0 { PAGE_SIZE } else { free_end };
        let dir_end = PAGE_HEADER_SIZE + SLOT_SIZE * slots;
        if dir_end > PAGE_SIZE || free_end < dir_end || free_end > PAGE_SIZE {
            return Err(Error::corrupted("page directory out of bounds"));
        }
        Ok(PageRef { bytes })
    }

    /// Parses a page from storage: it must be sealed and its checksum
    /// must match (a flipped seal flag is corruption, not a way around
    /// the checksum).
    pub fn parse_verified(bytes: &'a [u8]) -> Result<PageRef<'a>> {
        let p = PageRef::parse(bytes)?;
        if !p.is_sealed() {
            return Err(Error::corrupted(format!(
                "unsealed page from storage (lpn {})",
                p.lpn().0
            )));
        }
        if rd32(bytes, OFF_CRC) != page_crc(bytes) {
            return Err(Error::corrupted(format!(
                "page checksum mismatch (lpn {})",
                p.lpn().0
            )));
        }
        Ok(p)
    }

    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    pub fn is_sealed(&self) -> bool {
        rd16(self.bytes, OFF_FLAGS) & FLAG_SEALED != 0
    }

    pub fn table(&self) -> TableId {
        TableId(rd32(self.bytes, OFF_TABLE))
    }

    pub fn lpn(&self) -> Lpn {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.bytes[OFF_LPN..OFF_LPN + 8]);
        Lpn(u64::from_le_bytes(b))
    }

    pub fn slot_count(&self) -> u16 {
        rd16(self.bytes, OFF_SLOTS)
    }

    /// The record bytes at `slot`; `Ok(None)` for an empty slot.
    pub fn record(&self, slot: u16) -> Result<Option<&'a [u8]>> {
        if slot >= self.slot_count() {
            return Err(Error::corrupted(format!(
                "slot {slot} beyond slot count {}",
                self.slot_count()
            )));
        }
        let o = PAGE_HEADER_SIZE + SLOT_SIZE * slot as usize;
        let off = rd16(self.bytes, o) as usize;
        let len = rd16(self.bytes, o + 2) as usize;
        if off == 0 {
            return Ok(None);
        }
        let dir_end = PAGE_HEADER_SIZE + SLOT_SIZE * self.slot_count() as usize;
        if off < dir_end || off + len > PAGE_SIZE {
            return Err(Error::corrupted(format!(
                "slot {slot} points out of bounds"
            )));
        }
        Ok(Some(&self.bytes[off..off + len]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn filled_pages_round_trip(records in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..900), 1..200)) {
            let mut page = PageBuf::new(TableId(7), Lpn(42));
            let mut stored = Vec::new();
            for r in &records {
                match page.append(r) {
                    Some(slot) => stored.push((slot, r.clone())),
                    None => break,
                }
            }
            // Filled to capacity: the next record of the first size does not fit.
            page.seal();
            let bytes = page.as_bytes().to_vec();
            let view = PageRef::parse_verified(&bytes).unwrap();
            prop_assert_eq!(view.table(), TableId(7));
            prop_assert_eq!(view.lpn(), Lpn(42));
            prop_assert_eq!(view.slot_count() as usize, stored.len());
            for (slot, r) in &stored {
                prop_assert_eq!(view.record(*slot).unwrap().unwrap(), &r[..]);
            }
        }

        #[test]
        fn corrupt_pages_error_not_panic(flips in proptest::collection::vec((0usize..PAGE_SIZE, any::<u8>()), 1..8)) {
            let mut page = PageBuf::new(TableId(1), Lpn(1));
            while page.append(&[9u8; 100]).is_some() {}
            page.seal();
            let mut bytes = page.as_bytes().to_vec();
            for (i, x) in &flips {
                bytes[*i] ^= x | 1;
            }
            // The checksum catches every flip of a sealed page.
            prop_assert!(PageRef::parse_verified(&bytes).is_err());
            // Unverified parsing of garbage never panics.
            if let Ok(v) = PageRef::parse(&bytes) {
                for s in 0..v.slot_count().saturating_add(2) {
                    let _ = v.record(s);
                }
            }
        }
    }

    #[test]
    fn page_fills_to_capacity() {
        let mut page = PageBuf::new(TableId(1), Lpn(0));
        let mut n = 0;
        while page.append(&[1u8; 1000]).is_some() {
            n += 1;
        }
        // 8160 usable bytes / (1000 + 4 slot bytes) = 8 records.
        assert_eq!(n, 8);
        assert!(page.free_space() < 1004);
        assert!(!page.fits(1000));
    }

    #[test]
    fn place_leaves_gaps_empty() {
        let mut page = PageBuf::new(TableId(1), Lpn(0));
        page.place(0, b"aa").unwrap();
        page.place(3, b"bbbb").unwrap();
        let v = page.view();
        assert_eq!(v.slot_count(), 4);
        assert_eq!(v.record(0).unwrap(), Some(&b"aa"[..]));
        assert_eq!(v.record(1).unwrap(), None);
        assert_eq!(v.record(3).unwrap(), Some(&b"bbbb"[..]));
        assert!(page.place(2, b"x").is_err());
    }
}
