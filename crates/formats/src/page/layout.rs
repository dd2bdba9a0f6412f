//! Where things are on a PAX page: the fixed header, the column
//! directory and the minipage geometry, computed from the row count and
//! the column types alone (so the builder and the parser agree by
//! construction).
//!
//! ```text
//!  header (64 B)
//!   0 magic "NDPG"   4 version u16 = 2   6 flags u16    8 table u32
//!  12 rows u16      14 columns u16      16 LPN u64     24 crc32 u32
//!  28 used u16      30 tombstones u16   32 min creator u64
//!  40 max creator u64                   48 empty slots u16   50 zero ×14
//!  column directory (16 B per column) at 64
//!   tag u8 | precision u8 | scale u8 | zone u8 | varchar length u32 |
//!   offset u16 | length u16 | array element tag u8 | zero ×3
//!   (an array column: tag 12, its element type's tag at byte 12 and the
//!   element's precision, scale or length where a scalar's are)
//!  version minipage at align8(64 + 16·columns), for r rows:
//!   creator u64 × r | predecessor RecId u64 × r | VID u64 × r | flags u8 × r
//!  column minipages, each at an 8-aligned offset:
//!   fixed    [zone: min i128/f64, max i128/f64 (32 B)] nulls ⌈r/8⌉ ·pad8·
//!            values w × r   (NUMERIC: mantissa i128 × r, then scale u8 × r)
//!   variable nulls ⌈r/8⌉ ·pad2· offsets u16 × (r+1) | bytes
//! ```

use crate::types::DataType;

pub const PAGE_SIZE: usize = 8192;
pub const PAGE_HEADER_SIZE: usize = 64;
pub const PAGE_MAGIC: &[u8; 4] = b"NDPG";
/// Format 2: PAX. Format 1 (NSM slotted pages) is no longer read.
pub const PAGE_VERSION: u16 = 2;
pub const FLAG_SEALED: u16 = 0x1;
pub const DIR_ENTRY_SIZE: usize = 16;
/// Bytes of the per-version fields in the version minipage.
pub const VERSION_FIELDS_SIZE: usize = 8 + 8 + 8 + 1;
/// Version flag: the slot holds no version (a gap left by WAL replay).
pub const SLOT_EMPTY: u8 = 0x80;
/// Bytes of a zone map (min and max, 16 B each).
pub const ZONE_SIZE: usize = 32;

pub(crate) const OFF_VERSION: usize = 4;
pub(crate) const OFF_FLAGS: usize = 6;
pub(crate) const OFF_TABLE: usize = 8;
pub(crate) const OFF_ROWS: usize = 12;
pub(crate) const OFF_COLS: usize = 14;
pub(crate) const OFF_LPN: usize = 16;
pub(crate) const OFF_CRC: usize = 24;
pub(crate) const OFF_USED: usize = 28;
pub(crate) const OFF_TOMBSTONES: usize = 30;
pub(crate) const OFF_MIN_CREATOR: usize = 32;
pub(crate) const OFF_MAX_CREATOR: usize = 40;
pub(crate) const OFF_EMPTY: usize = 48;

pub(crate) fn align(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

/// Whether a fixed-width column type keeps a min/max zone map.
pub fn has_zone_space(ty: DataType) -> bool {
    matches!(
        ty,
        DataType::Int
            | DataType::Date
            | DataType::BigInt
            | DataType::Timestamp
            | DataType::Double
            | DataType::Numeric { .. }
    )
}

/// Offset of the version minipage.
pub fn versions_offset(columns: usize) -> usize {
    align(PAGE_HEADER_SIZE + DIR_ENTRY_SIZE * columns, 8)
}

/// Geometry of one column minipage (offsets relative to its start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnGeometry {
    /// Zone map bytes at the start (0 or [`ZONE_SIZE`]).
    pub zone: usize,
    /// Null bitmap.
    pub nulls: usize,
    /// Fixed: the value array; variable: the offset array.
    pub data: usize,
    /// Fixed: the whole minipage; variable: up to the end of the offsets.
    pub fixed_len: usize,
}

#[inline]
pub fn column_geometry(ty: DataType, rows: usize) -> ColumnGeometry {
    let nb = rows.div_ceil(8);
    match ty.fixed_width() {
        Some(w) => {
            let zone = if has_zone_space(ty) { ZONE_SIZE } else { 0 };
            let data = align(zone + nb, 8);
            ColumnGeometry {
                zone,
                nulls: zone,
                data,
                fixed_len: data + w * rows,
            }
        }
        None => {
            let data = align(nb, 2);
            ColumnGeometry {
                zone: 0,
                nulls: 0,
                data,
                fixed_len: data + 2 * (rows + 1),
            }
        }
    }
}

/// Total bytes a page of `rows` versions uses, given the payload bytes of
/// each variable-width column (ignored for fixed-width ones).
pub fn page_bytes(types: &[DataType], rows: usize, var_bytes: &[usize]) -> usize {
    page_bytes_with(types, rows, |c| var_bytes.get(c).copied().unwrap_or(0))
}

/// [`page_bytes`] with column `c`'s variable-width bytes from `var_bytes(c)`.
pub fn page_bytes_with(
    types: &[DataType],
    rows: usize,
    var_bytes: impl Fn(usize) -> usize,
) -> usize {
    let mut off = versions_offset(types.len()) + VERSION_FIELDS_SIZE * rows;
    for (c, ty) in types.iter().enumerate() {
        off = align(off, 8);
        off += column_geometry(*ty, rows).fixed_len;
        if ty.fixed_width().is_none() {
            off += var_bytes(c);
        }
    }
    off
}

#[inline]
pub(crate) fn rd16(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
pub(crate) fn rd32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
pub(crate) fn rd64(b: &[u8], o: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(x)
}
pub(crate) fn wr16(b: &mut [u8], o: usize, v: u16) {
    b[o..o + 2].copy_from_slice(&v.to_le_bytes());
}
pub(crate) fn wr32(b: &mut [u8], o: usize, v: u32) {
    b[o..o + 4].copy_from_slice(&v.to_le_bytes());
}
pub(crate) fn wr64(b: &mut [u8], o: usize, v: u64) {
    b[o..o + 8].copy_from_slice(&v.to_le_bytes());
}

pub(crate) fn page_crc(b: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&b[..OFF_CRC]);
    h.update(&[0, 0, 0, 0]);
    h.update(&b[OFF_CRC + 4..]);
    h.finalize()
}
