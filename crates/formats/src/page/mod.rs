//! 8 KiB PAX pages (format 2; DESIGN.md §2): one minipage of per-version
//! header fields and one minipage per column, so a scan touches only the
//! columns it reads and a point read gathers one row.
//!
//! ```text
//!  ┌────────┬───────────┬──────────────────────┬─────────┬─────────┬───┬──────┐
//!  │ header │ directory │ versions             │ col 0   │ col 1   │ … │ free │
//!  │ 64 B   │ 16 B/col  │ creator·pred·VID·flg │ nulls + │ nulls + │   │      │
//!  │        │           │ (arrays of r each)   │ values  │ offsets │   │      │
//!  └────────┴───────────┴──────────────────────┴─────────┴─────────┴───┴──────┘
//! ```
//!
//! The byte layout is in [`layout`] and docs/FORMATS.md. A page is
//! self-describing (its column types are in the directory) and
//! checksummed; pages are logically append-only: once sealed and flushed,
//! a page is never modified. The header carries a summary for scans: the
//! smallest and largest creating transaction and the tombstone count, and
//! the directory a min/max zone map per fixed-width column.
//!
//! - [`layout`]: offsets and geometry.
//! - [`build`]: [`PageBuf`], the writable page.
//! - this file: [`PageRef`], the validated read view, and [`ColumnRef`].

pub mod build;
pub mod layout;
pub mod scrub;

pub use build::PageBuf;
pub use layout::{
    PAGE_HEADER_SIZE, PAGE_MAGIC, PAGE_SIZE, PAGE_VERSION, SLOT_EMPTY, VERSION_FIELDS_SIZE,
};

use layout::*;

use crate::array::ArrayValue;
use crate::codec::Writer;
use crate::error::{Error, Result};
use crate::ids::{Lpn, RecId, TableId, TxId, Vid};
use crate::record::{RecordHeader, FLAG_TOMBSTONE, RECORD_HEADER_SIZE};
use crate::types::DataType;
use crate::value::{Decimal, Value, MAX_SCALE};

/// A validated, read-only view of page bytes.
#[derive(Clone, Copy)]
pub struct PageRef<'a> {
    bytes: &'a [u8],
    rows: usize,
    columns: usize,
}

/// A column minipage's values.
#[derive(Clone, Copy, Debug)]
pub enum ColumnData<'a> {
    /// `width` little-endian bytes per row (BOOLEAN, INT, DATE, BIGINT,
    /// TIMESTAMP, DOUBLE); NULL rows hold zeros.
    Fixed { width: usize, values: &'a [u8] },
    /// NUMERIC: an i128 mantissa per row, then a scale byte per row.
    Numeric {
        mantissas: &'a [u8],
        scales: &'a [u8],
    },
    /// Variable width: `rows + 1` u16 offsets into `bytes` (validated).
    Var { offsets: &'a [u8], bytes: &'a [u8] },
}

/// A page with the columns a scan decodes looked up once.
pub struct PageColumns<'a> {
    pub page: PageRef<'a>,
    cols: Vec<Option<ColumnRef<'a>>>,
}

impl PageColumns<'_> {
    /// [`PageRef::decode_row_into`] with the columns looked up already.
    pub fn decode_row_into(&self, slot: u16, out: &mut Vec<Value>) -> Result<()> {
        out.clear();
        if self.page.header(slot)?.is_none() {
            return Err(Error::corrupted(format!("slot {slot} is empty")));
        }
        for col in &self.cols {
            out.push(match col {
                Some(c) => c.value(slot as usize)?,
                None => Value::Null,
            });
        }
        Ok(())
    }
}

/// One column of a page.
#[derive(Clone, Copy, Debug)]
pub struct ColumnRef<'a> {
    pub ty: DataType,
    /// Rows of the page.
    pub rows: usize,
    /// Null bitmap: bit `i` set = row `i` is NULL.
    pub nulls: &'a [u8],
    pub data: ColumnData<'a>,
    zone: Option<(&'a [u8], &'a [u8])>,
    /// Bytes of the column's minipage.
    pub footprint: usize,
}

/// A column's zone map: min and max of its non-NULL values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Zone {
    /// Integers, dates, timestamps (as i128) and NUMERIC mantissas at `scale`.
    Int {
        min: i128,
        max: i128,
        scale: u8,
    },
    Double {
        min: f64,
        max: f64,
    },
}

impl<'a> ColumnRef<'a> {
    #[inline]
    pub fn is_null(&self, i: usize) -> bool {
        self.nulls[i / 8] & (1 << (i % 8)) != 0
    }

    /// Whether any row is NULL.
    #[inline]
    pub fn has_nulls(&self) -> bool {
        let mut words = self.nulls.chunks_exact(8);
        let any_word = words
            .by_ref()
            .any(|w| u64::from_le_bytes(w.try_into().unwrap_or([0; 8])) != 0);
        any_word || words.remainder().iter().any(|b| *b != 0)
    }

    /// The payload of a variable-width value (empty for NULL or a
    /// fixed-width column); offsets out of order are corruption.
    #[inline]
    pub fn var(&self, i: usize) -> Result<&'a [u8]> {
        match self.data {
            ColumnData::Var { offsets, bytes } if i < self.rows => {
                let a = rd16(offsets, 2 * i) as usize;
                let b = rd16(offsets, 2 * i + 2) as usize;
                bytes
                    .get(a..b)
                    .ok_or_else(|| Error::corrupted("variable-width offsets out of bounds"))
            }
            ColumnData::Var { .. } => Err(Error::corrupted(format!("row {i} beyond the page"))),
            _ => Ok(&[]),
        }
    }

    /// Checks every variable-width offset once (kernels then read values
    /// without a check per row); a no-op for fixed-width columns.
    pub fn check_offsets(&self) -> Result<()> {
        if let ColumnData::Var { offsets, bytes } = self.data {
            let mut prev = 0;
            for i in 0..=self.rows {
                let o = rd16(offsets, 2 * i) as usize;
                if (i == 0 && o != 0) || o < prev || o > bytes.len() {
                    return Err(Error::corrupted("variable-width offsets out of bounds"));
                }
                prev = o;
            }
        }
        Ok(())
    }

    /// The zone map, if the page keeps one for this column.
    #[inline]
    pub fn zone(&self) -> Option<Zone> {
        let (lo, hi) = self.zone?;
        let i = |b: &[u8]| i128::from_le_bytes(b[..16].try_into().unwrap_or([0; 16]));
        let f = |b: &[u8]| f64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
        Some(match self.ty {
            DataType::Double => Zone::Double {
                min: f(lo),
                max: f(hi),
            },
            DataType::Numeric { .. } => {
                let scale = match self.data {
                    ColumnData::Numeric { scales, .. } => (0..scales.len())
                        .find(|&r| !self.is_null(r))
                        .map_or(0, |r| scales[r]),
                    _ => 0,
                };
                Zone::Int {
                    min: i(lo),
                    max: i(hi),
                    scale,
                }
            }
            _ => Zone::Int {
                min: i(lo),
                max: i(hi),
                scale: 0,
            },
        })
    }

    /// The value of row `i` (no UTF-8 check is skipped: text is validated).
    pub fn value(&self, i: usize) -> Result<Value> {
        if i >= self.rows {
            return Err(Error::corrupted(format!(
                "row {i} beyond the page's {}",
                self.rows
            )));
        }
        if self.is_null(i) {
            return Ok(Value::Null);
        }
        Ok(match (self.ty, self.data) {
            (DataType::Bool, ColumnData::Fixed { values, .. }) => Value::Bool(match values[i] {
                0 => false,
                1 => true,
                b => return Err(Error::corrupted(format!("boolean byte {b}"))),
            }),
            (DataType::Int, ColumnData::Fixed { values, .. }) => {
                Value::Int(rd32(values, 4 * i) as i32)
            }
            (DataType::Date, ColumnData::Fixed { values, .. }) => {
                Value::Date(rd32(values, 4 * i) as i32)
            }
            (DataType::BigInt, ColumnData::Fixed { values, .. }) => {
                Value::BigInt(rd64(values, 8 * i) as i64)
            }
            (DataType::Timestamp, ColumnData::Fixed { values, .. }) => {
                Value::Timestamp(rd64(values, 8 * i) as i64)
            }
            (DataType::Double, ColumnData::Fixed { values, .. }) => {
                Value::Double(f64::from_bits(rd64(values, 8 * i)))
            }
            (DataType::Numeric { .. }, ColumnData::Numeric { mantissas, scales }) => {
                let m = i128::from_le_bytes(
                    mantissas[16 * i..16 * i + 16].try_into().unwrap_or([0; 16]),
                );
                if scales[i] > MAX_SCALE {
                    return Err(Error::corrupted(format!("numeric scale {}", scales[i])));
                }
                Value::Numeric(Decimal::new(m, scales[i]))
            }
            (DataType::Text | DataType::Varchar(_) | DataType::Char(_), ColumnData::Var { .. }) => {
                Value::Text(
                    std::str::from_utf8(self.var(i)?)
                        .map_err(|_| Error::corrupted("invalid UTF-8 in text column"))?
                        .to_string(),
                )
            }
            (DataType::Bytea, ColumnData::Var { .. }) => Value::Bytea(self.var(i)?.to_vec()),
            (DataType::Array(_), ColumnData::Var { .. }) => {
                Value::Array(Box::new(ArrayValue::decode_all(self.var(i)?)?))
            }
            (t @ (DataType::Json | DataType::Jsonb), ColumnData::Var { .. }) => {
                crate::json_convert::decode_stored(t, self.var(i)?)?
            }
            (ty, _) => return Err(Error::corrupted(format!("minipage does not hold {ty}"))),
        })
    }

    /// The raw body bytes of row `i` as a record encodes them (fixed:
    /// little-endian; NUMERIC: mantissa + scale) appended to `w`.
    /// Bytes [`ColumnRef::encode_field`] writes for row `i`.
    fn field_len(&self, i: usize) -> Result<usize> {
        Ok(match self.data {
            ColumnData::Fixed { width, .. } => width,
            ColumnData::Numeric { .. } => 17,
            ColumnData::Var { .. } => {
                let n = self.var(i)?.len();
                n + if n < 0xFF { 1 } else { 5 }
            }
        })
    }

    fn encode_field(&self, i: usize, w: &mut Writer) -> Result<()> {
        match self.data {
            ColumnData::Fixed { width, values } => {
                w.raw(&values[width * i..width * (i + 1)]);
            }
            ColumnData::Numeric { mantissas, scales } => {
                w.raw(&mantissas[16 * i..16 * i + 16]).u8(scales[i]);
            }
            ColumnData::Var { .. } => {
                let b = self.var(i)?;
                if b.len() < 0xFF {
                    w.u8(b.len() as u8);
                } else {
                    w.u8(0xFF).u32(b.len() as u32);
                }
                w.raw(b);
            }
        }
        Ok(())
    }
}

/// Where column `c`'s minipage lies in an unparsed page, per its
/// directory entry, clamped to the page: a hint for prefetching, not a
/// validated geometry (parse the page before reading values).
pub fn minipage_span(bytes: &[u8], c: usize) -> Option<(usize, usize)> {
    let d = PAGE_HEADER_SIZE + DIR_ENTRY_SIZE * c;
    if bytes.len() != PAGE_SIZE || d + DIR_ENTRY_SIZE > PAGE_SIZE {
        return None;
    }
    let off = (rd16(bytes, d + 8) as usize).min(PAGE_SIZE);
    let len = (rd16(bytes, d + 10) as usize).min(PAGE_SIZE - off);
    Some((off, len))
}

/// The column type of directory entry `d` (tags as [`DataType::encode`];
/// an array's element type has its tag at byte 12 and its modifier where
/// a scalar column's is).
#[inline]
fn dir_type(b: &[u8], d: usize) -> Result<DataType> {
    if b[d] == 12 {
        let elem = dir_scalar(b, d, b[d + 12])?;
        return crate::array::ElemType::of(elem)
            .map(DataType::Array)
            .ok_or_else(|| Error::corrupted("array of arrays"));
    }
    dir_scalar(b, d, b[d])
}

fn dir_scalar(b: &[u8], d: usize, tag: u8) -> Result<DataType> {
    Ok(match tag {
        1 => DataType::Bool,
        2 => DataType::Int,
        3 => DataType::BigInt,
        4 => DataType::Double,
        5 => {
            let (precision, scale) = (b[d + 1], b[d + 2]);
            if precision > crate::types::MAX_NUMERIC_PRECISION
                || (precision > 0 && scale > precision)
            {
                return Err(Error::corrupted("invalid numeric precision/scale"));
            }
            DataType::Numeric { precision, scale }
        }
        6 => DataType::Date,
        7 => DataType::Timestamp,
        8 => DataType::Text,
        9 => DataType::Varchar(rd32(b, d + 4)),
        11 => DataType::Char(rd32(b, d + 4)),
        10 => DataType::Bytea,
        13 => DataType::Json,
        14 => DataType::Jsonb,
        t => return Err(Error::corrupted(format!("unknown type tag {t}"))),
    })
}

impl std::fmt::Debug for PageRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PageRef(lpn={}, table={}, rows={})",
            self.lpn().0,
            self.table().0,
            self.rows
        )
    }
}

/// The version flags a page may hold.
const KNOWN_FLAGS: u8 = FLAG_TOMBSTONE | SLOT_EMPTY;

impl<'a> PageRef<'a> {
    /// Checks size, magic, version and that the directory and the version
    /// minipage lie inside the page (not the checksum). Each column's
    /// directory entry is checked where [`PageRef::column`] reads it, so a
    /// scan pays only for the columns it uses; [`PageRef::validate`]
    /// checks every entry at once.
    #[inline]
    pub fn parse(bytes: &'a [u8]) -> Result<PageRef<'a>> {
        if bytes.len() != PAGE_SIZE {
            return Err(Error::corrupted(format!("page has {} bytes", bytes.len())));
        }
        if &bytes[0..4] != PAGE_MAGIC {
            return Err(Error::corrupted("bad page magic"));
        }
        match rd16(bytes, OFF_VERSION) {
            PAGE_VERSION => {}
            1 => {
                return Err(Error::corrupted(
                    "page format version 1 (NSM slotted pages): this build reads format 2 (PAX)",
                ))
            }
            v => return Err(Error::corrupted(format!("unknown page format version {v}"))),
        }
        let rows = rd16(bytes, OFF_ROWS) as usize;
        let columns = rd16(bytes, OFF_COLS) as usize;
        if versions_offset(columns) + VERSION_FIELDS_SIZE * rows > PAGE_SIZE {
            return Err(Error::corrupted("page directory out of bounds"));
        }
        Ok(PageRef {
            bytes,
            rows,
            columns,
        })
    }

    /// Parses a page and checks its whole structure: every column's
    /// directory entry, minipages in order without overlap, known version
    /// flags. For pages from outside the engine's own checked paths.
    pub fn parse_checked(bytes: &'a [u8]) -> Result<PageRef<'a>> {
        let p = PageRef::parse(bytes)?;
        p.validate()?;
        Ok(p)
    }

    /// The whole-page structure check of [`PageRef::parse_checked`].
    pub fn validate(&self) -> Result<()> {
        if self.flags().iter().any(|f| f & !KNOWN_FLAGS != 0) {
            return Err(Error::corrupted("unknown version flags"));
        }
        let mut end = self.versions_end();
        for c in 0..self.columns {
            let (_, off, len) = self.entry(c)?;
            if off < end {
                return Err(Error::corrupted(format!(
                    "minipage of column {c} overlaps the one before it"
                )));
            }
            end = off + len;
        }
        Ok(())
    }

    /// Where the version minipage ends and column minipages may begin.
    #[inline]
    fn versions_end(&self) -> usize {
        versions_offset(self.columns) + VERSION_FIELDS_SIZE * self.rows
    }

    /// Column `c`'s type and minipage `(offset, length)`, checked: inside
    /// the page after the version minipage, 8-aligned, as long as the
    /// type's geometry needs, a zone flag only where a zone fits.
    #[inline]
    fn entry(&self, c: usize) -> Result<(DataType, usize, usize)> {
        if c >= self.columns {
            return Err(Error::corrupted(format!(
                "column {c} beyond the page's {}",
                self.columns
            )));
        }
        let b = self.bytes;
        let d = PAGE_HEADER_SIZE + DIR_ENTRY_SIZE * c;
        let ty = dir_type(b, d)?;
        let off = rd16(b, d + 8) as usize;
        let len = rd16(b, d + 10) as usize;
        let g = column_geometry(ty, self.rows);
        let fixed_ok = if ty.fixed_width().is_some() {
            len == g.fixed_len
        } else {
            len >= g.fixed_len
        };
        if off < self.versions_end() || !off.is_multiple_of(8) || off + len > PAGE_SIZE || !fixed_ok
        {
            return Err(Error::corrupted(format!(
                "minipage of column {c} out of bounds"
            )));
        }
        if b[d + 3] > 1 || (b[d + 3] == 1 && g.zone == 0) {
            return Err(Error::corrupted(format!("bad zone flag of column {c}")));
        }
        Ok((ty, off, len))
    }

    /// Parses a page from storage: it must be sealed and its checksum
    /// must match (a flipped seal flag is corruption, not a way around
    /// the checksum).
    pub fn parse_verified(bytes: &'a [u8]) -> Result<PageRef<'a>> {
        let p = PageRef::parse_checked(bytes)?;
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
        Lpn(rd64(self.bytes, OFF_LPN))
    }

    /// Slots (versions and empty gaps).
    #[inline]
    pub fn slot_count(&self) -> u16 {
        self.rows as u16
    }

    #[inline]
    pub fn column_count(&self) -> usize {
        self.columns
    }

    /// Live versions that are tombstones.
    #[inline]
    pub fn tombstones(&self) -> u16 {
        rd16(self.bytes, OFF_TOMBSTONES)
    }

    /// Empty slots.
    #[inline]
    pub fn empty_slots(&self) -> u16 {
        rd16(self.bytes, OFF_EMPTY)
    }

    /// Smallest and largest creating transaction of the page's versions.
    #[inline]
    pub fn creator_range(&self) -> (TxId, TxId) {
        (
            TxId(rd64(self.bytes, OFF_MIN_CREATOR)),
            TxId(rd64(self.bytes, OFF_MAX_CREATOR)),
        )
    }

    fn versions(&self) -> usize {
        versions_offset(self.columns)
    }

    #[inline]
    pub fn creator(&self, slot: usize) -> TxId {
        TxId(rd64(self.bytes, self.versions() + 8 * slot))
    }

    #[inline]
    pub fn pred(&self, slot: usize) -> RecId {
        RecId::from_raw(rd64(self.bytes, self.versions() + 8 * (self.rows + slot)))
    }

    #[inline]
    pub fn vid(&self, slot: usize) -> Vid {
        Vid(rd64(
            self.bytes,
            self.versions() + 8 * (2 * self.rows + slot),
        ))
    }

    /// The version flags of every slot.
    pub fn flags(&self) -> &'a [u8] {
        let o = self.versions() + 24 * self.rows;
        &self.bytes[o..o + self.rows]
    }

    /// The creators as a little-endian u64 array.
    pub fn creators(&self) -> &'a [u8] {
        let o = self.versions();
        &self.bytes[o..o + 8 * self.rows]
    }

    /// The header of the version at `slot`; `Ok(None)` for an empty slot.
    pub fn header(&self, slot: u16) -> Result<Option<RecordHeader>> {
        let s = slot as usize;
        if s >= self.rows {
            return Err(Error::corrupted(format!(
                "slot {slot} beyond slot count {}",
                self.rows
            )));
        }
        let flags = self.flags()[s];
        // Checked here, where flags are read, rather than in `parse`: a
        // scan of a page whose versions are all visible never reads them.
        if flags & !KNOWN_FLAGS != 0 {
            return Err(Error::corrupted(format!("unknown flags of slot {slot}")));
        }
        if flags & SLOT_EMPTY != 0 {
            return Ok(None);
        }
        Ok(Some(RecordHeader {
            creator: self.creator(s),
            pred: self.pred(s),
            vid: self.vid(s),
            flags,
        }))
    }

    /// The column types the page was written with.
    pub fn types(&self) -> Result<Vec<DataType>> {
        (0..self.columns)
            .map(|c| dir_type(self.bytes, PAGE_HEADER_SIZE + DIR_ENTRY_SIZE * c))
            .collect()
    }

    /// Checks that the page holds rows of exactly these column types.
    pub fn check_types(&self, types: &[DataType]) -> Result<()> {
        if self.types()? != types {
            return Err(Error::corrupted(format!(
                "page {} of table {} does not have the table's column types",
                self.lpn().0,
                self.table().0
            )));
        }
        Ok(())
    }

    /// Bytes of column `c`'s minipage (0 for a column the page lacks).
    #[inline]
    pub fn minipage_len(&self, c: usize) -> usize {
        if c >= self.columns {
            return 0;
        }
        rd16(self.bytes, PAGE_HEADER_SIZE + DIR_ENTRY_SIZE * c + 10) as usize
    }

    /// Column `c` (variable-width offsets are checked per value).
    #[inline]
    pub fn column(&self, c: usize) -> Result<ColumnRef<'a>> {
        let (ty, off, len) = self.entry(c)?;
        let b = self.bytes;
        let d = PAGE_HEADER_SIZE + DIR_ENTRY_SIZE * c;
        let g = column_geometry(ty, self.rows);
        let mp = &b[off..off + len];
        let nulls = &mp[g.nulls..g.nulls + self.rows.div_ceil(8)];
        let data = match ty.fixed_width() {
            Some(_) if matches!(ty, DataType::Numeric { .. }) => ColumnData::Numeric {
                mantissas: &mp[g.data..g.data + 16 * self.rows],
                scales: &mp[g.data + 16 * self.rows..g.data + 17 * self.rows],
            },
            Some(width) => ColumnData::Fixed {
                width,
                values: &mp[g.data..g.data + width * self.rows],
            },
            None => ColumnData::Var {
                offsets: &mp[g.data..g.fixed_len],
                bytes: &mp[g.fixed_len..],
            },
        };
        let zone = (b[d + 3] == 1).then(|| (&mp[..16], &mp[16..32]));
        Ok(ColumnRef {
            ty,
            rows: self.rows,
            nulls,
            data,
            zone,
            footprint: len,
        })
    }

    /// The version at `slot` as record bytes (header + row body, see
    /// [`crate::record`]); `Ok(None)` for an empty slot.
    pub fn record(&self, slot: u16) -> Result<Option<Vec<u8>>> {
        let Some(h) = self.header(slot)? else {
            return Ok(None);
        };
        let s = slot as usize;
        // One pass sizes the record (one allocation) and builds the null
        // bitmap, the second writes the fields.
        let bitmap_len = self.columns.div_ceil(8);
        let mut size = RECORD_HEADER_SIZE + bitmap_len;
        let mut bitmap = [0u8; 32];
        let mut big_bitmap = Vec::new();
        if bitmap_len > bitmap.len() {
            big_bitmap = vec![0u8; bitmap_len];
        }
        for c in 0..self.columns {
            let col = self.column(c)?;
            if col.is_null(s) {
                match big_bitmap.get_mut(c / 8) {
                    Some(b) => *b |= 1 << (c % 8),
                    None => bitmap[c / 8] |= 1 << (c % 8),
                }
            } else {
                size += col.field_len(s)?;
            }
        }
        let mut w = Writer::with_capacity(size);
        h.encode(&mut w);
        if big_bitmap.is_empty() {
            w.raw(&bitmap[..bitmap_len]);
        } else {
            w.raw(&big_bitmap);
        }
        for c in 0..self.columns {
            let col = self.column(c)?;
            if !col.is_null(s) {
                col.encode_field(s, &mut w)?;
            }
        }
        Ok(Some(w.into_inner()))
    }

    /// The columns marked in `wanted` (all if `None`), looked up once for
    /// decoding many rows of this page ([`PageColumns::decode_row_into`]).
    pub fn columns_for(&self, wanted: Option<&[bool]>) -> Result<PageColumns<'a>> {
        let cols = (0..self.columns)
            .map(
                |c| match wanted.is_some_and(|w| !w.get(c).copied().unwrap_or(true)) {
                    true => Ok(None),
                    false => self.column(c).map(Some),
                },
            )
            .collect::<Result<_>>()?;
        Ok(PageColumns { page: *self, cols })
    }

    /// Decodes the row at `slot` into `out` (cleared first); columns not
    /// marked in `wanted` come back as NULL without being read.
    pub fn decode_row_into(
        &self,
        slot: u16,
        wanted: Option<&[bool]>,
        out: &mut Vec<Value>,
    ) -> Result<()> {
        out.clear();
        if self.header(slot)?.is_none() {
            return Err(Error::corrupted(format!("slot {slot} is empty")));
        }
        for c in 0..self.columns {
            if wanted.is_some_and(|w| !w.get(c).copied().unwrap_or(true)) {
                out.push(Value::Null);
                continue;
            }
            out.push(self.column(c)?.value(slot as usize)?);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
