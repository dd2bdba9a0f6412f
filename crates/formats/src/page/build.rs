//! The writable page: versions are appended column by column into
//! in-memory minipages and laid out as PAX bytes on demand (and once for
//! good at [`PageBuf::seal`]).
//!
//! ```text
//!  append(record bytes) ─► split header/fields ─► creators, preds, vids, flags
//!                                              └► per column: nulls + values
//!  as_bytes / seal ─► header · directory · version minipage · column minipages
//! ```

use std::sync::OnceLock;

use super::layout::*;
use super::PageRef;
use crate::codec::Writer;
use crate::error::{Error, Result};
use crate::ids::{Lpn, RecId, TableId};
use crate::record::{for_each_field, RecordHeader, RECORD_HEADER_SIZE};
use crate::types::DataType;

/// One column being filled.
#[derive(Clone, Debug, Default)]
struct ColumnBuf {
    nulls: Vec<bool>,
    /// Fixed: `width` bytes per row (zeros for NULL); variable: payloads.
    data: Vec<u8>,
    /// Variable width: end offset of each row's payload in `data`.
    ends: Vec<u16>,
}

/// An owned, writable page (the delta buffer's and the unloader's unit).
#[derive(Clone)]
pub struct PageBuf {
    table: TableId,
    lpn: Lpn,
    types: Vec<DataType>,
    creators: Vec<u64>,
    preds: Vec<u64>,
    vids: Vec<u64>,
    flags: Vec<u8>,
    columns: Vec<ColumnBuf>,
    /// The page image, built on demand and kept until the next append.
    image: OnceLock<Box<[u8]>>,
    sealed: bool,
}

impl std::fmt::Debug for PageBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PageBuf(lpn={}, table={}, slots={}, used={})",
            self.lpn.0,
            self.table.0,
            self.slot_count(),
            self.used_bytes()
        )
    }
}

impl PageBuf {
    /// An empty page of `table` whose rows have the column `types`.
    pub fn new(table: TableId, lpn: Lpn, types: &[DataType]) -> PageBuf {
        PageBuf {
            table,
            lpn,
            types: types.to_vec(),
            creators: Vec::new(),
            preds: Vec::new(),
            vids: Vec::new(),
            flags: Vec::new(),
            columns: vec![ColumnBuf::default(); types.len()],
            image: OnceLock::new(),
            sealed: false,
        }
    }

    pub fn lpn(&self) -> Lpn {
        self.lpn
    }

    pub fn table(&self) -> TableId {
        self.table
    }

    pub fn types(&self) -> &[DataType] {
        &self.types
    }

    pub fn slot_count(&self) -> u16 {
        self.flags.len() as u16
    }

    pub fn is_sealed(&self) -> bool {
        self.sealed
    }

    fn var_bytes(&self) -> Vec<usize> {
        self.columns.iter().map(|c| c.data.len()).collect()
    }

    /// Bytes the page image uses.
    pub fn used_bytes(&self) -> usize {
        page_bytes(&self.types, self.flags.len(), &self.var_bytes())
    }

    /// Appends a version given as record bytes (header + row body, see
    /// [`crate::record`]); `Ok(None)` if it does not fit.
    pub fn append(&mut self, record: &[u8]) -> Result<Option<u16>> {
        let slot = self.slot_count();
        if slot == u16::MAX {
            return Ok(None);
        }
        match self.place(slot, record) {
            Ok(()) => Ok(Some(slot)),
            Err(PlaceError::Full) => Ok(None),
            Err(PlaceError::Bad(e)) => Err(e),
        }
    }

    /// Writes a version at `slot`, which must be ≥ the current slot count;
    /// skipped slots stay empty. Used by WAL replay to rebuild pages exactly.
    pub fn place_at(&mut self, slot: u16, record: &[u8]) -> Result<()> {
        match self.place(slot, record) {
            Ok(()) => Ok(()),
            Err(PlaceError::Full) => Err(Error::corrupted(format!(
                "version of {} bytes does not fit at slot {slot}",
                record.len()
            ))),
            Err(PlaceError::Bad(e)) => Err(e),
        }
    }

    fn place(&mut self, slot: u16, record: &[u8]) -> std::result::Result<(), PlaceError> {
        if self.sealed {
            return Err(PlaceError::Bad(Error::corrupted("append to a sealed page")));
        }
        let count = self.slot_count();
        if slot < count {
            return Err(PlaceError::Bad(Error::corrupted(format!(
                "slot {slot} already used"
            ))));
        }
        let header = RecordHeader::parse(record)?;
        let body = record.get(RECORD_HEADER_SIZE..).unwrap_or_default();
        let mut fields: Vec<Option<&[u8]>> = Vec::with_capacity(self.types.len());
        for_each_field(&self.types, body, |_, f| {
            fields.push(f);
            Ok(())
        })?;
        // Size check before anything changes.
        let rows = slot as usize + 1;
        let var = |c: usize| -> usize {
            match self.types[c].fixed_width() {
                Some(_) => 0,
                None => self.columns[c].data.len() + fields[c].map_or(0, <[u8]>::len),
            }
        };
        if page_bytes_with(&self.types, rows, var) > PAGE_SIZE
            || (0..self.types.len()).any(|c| var(c) > u16::MAX as usize)
        {
            return Err(PlaceError::Full);
        }
        if count == 0 {
            // Room for as many rows as fit, at this row's sizes: the
            // columns grow once instead of doubling their way up.
            let rows = (PAGE_SIZE / record.len().max(1)).clamp(1, 1024);
            self.reserve(rows, &fields);
        }
        self.image = OnceLock::new();
        for _ in count..slot {
            self.push_version(
                0,
                RecId::NULL.raw(),
                0,
                SLOT_EMPTY,
                &vec![None; self.types.len()],
            );
        }
        self.push_version(
            header.creator.0,
            header.pred.raw(),
            header.vid.0,
            header.flags,
            &fields,
        );
        Ok(())
    }

    fn reserve(&mut self, rows: usize, fields: &[Option<&[u8]>]) {
        self.creators.reserve(rows);
        self.preds.reserve(rows);
        self.vids.reserve(rows);
        self.flags.reserve(rows);
        for ((col, ty), f) in self.columns.iter_mut().zip(&self.types).zip(fields) {
            col.nulls.reserve(rows);
            let width = ty.fixed_width().unwrap_or_else(|| f.map_or(0, <[u8]>::len));
            col.data.reserve((rows * width).min(PAGE_SIZE));
            if ty.fixed_width().is_none() {
                col.ends.reserve(rows);
            }
        }
    }

    fn push_version(
        &mut self,
        creator: u64,
        pred: u64,
        vid: u64,
        flags: u8,
        fields: &[Option<&[u8]>],
    ) {
        self.creators.push(creator);
        self.preds.push(pred);
        self.vids.push(vid);
        self.flags.push(flags);
        for ((col, ty), f) in self.columns.iter_mut().zip(&self.types).zip(fields) {
            col.nulls.push(f.is_none());
            match ty.fixed_width() {
                Some(w) => match f {
                    Some(b) => col.data.extend_from_slice(b),
                    None => col.data.resize(col.data.len() + w, 0),
                },
                None => {
                    if let Some(b) = f {
                        col.data.extend_from_slice(b);
                    }
                    col.ends.push(col.data.len() as u16);
                }
            }
        }
    }

    /// The page bytes a version given as record bytes needs on a page of
    /// its own, or an error if the record does not match `types`.
    pub fn bytes_for_one(types: &[DataType], record: &[u8]) -> Result<usize> {
        let body = record.get(RECORD_HEADER_SIZE..).unwrap_or_default();
        let mut var = vec![0; types.len()];
        for_each_field(types, body, |c, f| {
            if types[c].fixed_width().is_none() {
                var[c] = f.map_or(0, <[u8]>::len);
            }
            Ok(())
        })?;
        Ok(page_bytes(types, 1, &var))
    }

    /// Marks the page immutable and writes its checksum.
    pub fn seal(&mut self) {
        if self.sealed {
            return;
        }
        self.sealed = true;
        let mut img = self.build();
        let flags = rd16(&img, OFF_FLAGS) | FLAG_SEALED;
        wr16(&mut img, OFF_FLAGS, flags);
        let crc = page_crc(&img);
        wr32(&mut img, OFF_CRC, crc);
        self.image = OnceLock::from(img.into_boxed_slice());
    }

    /// The sealed page image, without keeping the builder's columns.
    pub fn into_sealed_image(mut self) -> Vec<u8> {
        self.seal();
        self.image
            .take()
            .map_or_else(|| self.build(), |img| img.into_vec())
    }

    /// The page image (8 KiB).
    pub fn as_bytes(&self) -> &[u8] {
        self.image.get_or_init(|| self.build().into_boxed_slice())
    }

    /// A read view of the page image.
    pub fn view(&self) -> PageRef<'_> {
        // The builder lays out exactly what the parser checks.
        PageRef::parse(self.as_bytes()).expect("a built page parses")
    }

    /// The record bytes of `slot` (`Ok(None)` for an empty slot).
    pub fn record(&self, slot: u16) -> Result<Option<Vec<u8>>> {
        self.view().record(slot)
    }

    fn build(&self) -> Vec<u8> {
        let rows = self.flags.len();
        let mut b = vec![0u8; PAGE_SIZE];
        b[0..4].copy_from_slice(PAGE_MAGIC);
        wr16(&mut b, OFF_VERSION, PAGE_VERSION);
        wr32(&mut b, OFF_TABLE, self.table.0);
        wr16(&mut b, OFF_ROWS, rows as u16);
        wr16(&mut b, OFF_COLS, self.types.len() as u16);
        wr64(&mut b, OFF_LPN, self.lpn.0);
        let live = |i: &usize| self.flags[*i] & SLOT_EMPTY == 0;
        let tombstones = (0..rows)
            .filter(|i| live(i) && self.flags[*i] & crate::record::FLAG_TOMBSTONE != 0)
            .count();
        let empty = (0..rows).filter(|i| !live(i)).count();
        let min_c = (0..rows)
            .filter(live)
            .map(|i| self.creators[i])
            .min()
            .unwrap_or(0);
        let max_c = (0..rows)
            .filter(live)
            .map(|i| self.creators[i])
            .max()
            .unwrap_or(0);
        wr16(&mut b, OFF_TOMBSTONES, tombstones as u16);
        wr16(&mut b, OFF_EMPTY, empty as u16);
        wr64(&mut b, OFF_MIN_CREATOR, min_c);
        wr64(&mut b, OFF_MAX_CREATOR, max_c);
        let mut off = versions_offset(self.types.len());
        for (k, arr) in [&self.creators, &self.preds, &self.vids]
            .into_iter()
            .enumerate()
        {
            for (i, x) in arr.iter().enumerate() {
                wr64(&mut b, off + 8 * (k * rows + i), *x);
            }
        }
        off += 24 * rows;
        b[off..off + rows].copy_from_slice(&self.flags);
        off += rows;
        for (c, (ty, col)) in self.types.iter().zip(&self.columns).enumerate() {
            off = align(off, 8);
            let g = column_geometry(*ty, rows);
            let len = g.fixed_len
                + if ty.fixed_width().is_none() {
                    col.data.len()
                } else {
                    0
                };
            let d = PAGE_HEADER_SIZE + DIR_ENTRY_SIZE * c;
            let scalar = match *ty {
                DataType::Array(e) => {
                    b[d + 12] = type_tag(e.scalar());
                    e.scalar()
                }
                t => t,
            };
            let (precision, scale, varlen) = match scalar {
                DataType::Numeric { precision, scale } => (precision, scale, 0),
                DataType::Varchar(n) | DataType::Char(n) => (0, 0, n),
                _ => (0, 0, 0),
            };
            b[d] = type_tag(*ty);
            b[d + 1] = precision;
            b[d + 2] = scale;
            wr32(&mut b, d + 4, varlen);
            wr16(&mut b, d + 8, off as u16);
            wr16(&mut b, d + 10, len as u16);
            for (i, n) in col.nulls.iter().enumerate() {
                if *n {
                    b[off + g.nulls + i / 8] |= 1 << (i % 8);
                }
            }
            match ty.fixed_width() {
                Some(_) if matches!(ty, DataType::Numeric { .. }) => {
                    for i in 0..rows {
                        let v = &col.data[17 * i..17 * i + 17];
                        let m = off + g.data + 16 * i;
                        b[m..m + 16].copy_from_slice(&v[..16]);
                        b[off + g.data + 16 * rows + i] = v[16];
                    }
                }
                Some(_) => {
                    b[off + g.data..off + g.data + col.data.len()].copy_from_slice(&col.data)
                }
                None => {
                    let mut o = off + g.data;
                    wr16(&mut b, o, 0);
                    for e in &col.ends {
                        o += 2;
                        wr16(&mut b, o, *e);
                    }
                    let start = off + g.fixed_len;
                    b[start..start + col.data.len()].copy_from_slice(&col.data);
                }
            }
            if g.zone > 0 {
                if let Some((lo, hi)) = zone_of(*ty, col) {
                    b[d + 3] = 1;
                    b[off..off + 16].copy_from_slice(&lo);
                    b[off + 16..off + 32].copy_from_slice(&hi);
                }
            }
            off += len;
        }
        wr16(&mut b, OFF_USED, off as u16);
        b
    }
}

enum PlaceError {
    Full,
    Bad(Error),
}

impl From<Error> for PlaceError {
    fn from(e: Error) -> Self {
        PlaceError::Bad(e)
    }
}

pub(crate) fn type_tag(ty: DataType) -> u8 {
    let mut w = Writer::new();
    ty.encode(&mut w);
    w.as_slice()[0]
}

/// Min and max of a column's non-NULL values as zone-map bytes: integers
/// and NUMERIC mantissas as i128, DOUBLE as f64 (no zone if a NaN is
/// present, or if NUMERIC values differ in scale).
fn zone_of(ty: DataType, col: &ColumnBuf) -> Option<([u8; 16], [u8; 16])> {
    let w = ty.fixed_width()?;
    let values = col
        .data
        .chunks_exact(w)
        .zip(&col.nulls)
        .filter(|(_, n)| !**n)
        .map(|(v, _)| v);
    let ints = |f: &dyn Fn(&[u8]) -> i128| -> Option<([u8; 16], [u8; 16])> {
        let (mut lo, mut hi) = (i128::MAX, i128::MIN);
        let mut any = false;
        for v in values.clone() {
            let x = f(v);
            lo = lo.min(x);
            hi = hi.max(x);
            any = true;
        }
        any.then(|| (lo.to_le_bytes(), hi.to_le_bytes()))
    };
    match ty {
        DataType::Int | DataType::Date => {
            ints(&|v| i32::from_le_bytes([v[0], v[1], v[2], v[3]]) as i128)
        }
        DataType::BigInt | DataType::Timestamp => {
            ints(&|v| i64::from_le_bytes(v[..8].try_into().unwrap_or([0; 8])) as i128)
        }
        DataType::Numeric { .. } => {
            let mut scales = values.clone().map(|v| v[16]);
            let first = scales.next()?;
            if scales.any(|s| s != first) {
                return None;
            }
            ints(&|v| i128::from_le_bytes(v[..16].try_into().unwrap_or([0; 16])))
        }
        DataType::Double => {
            let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
            let mut any = false;
            for v in values {
                let x = f64::from_le_bytes(v[..8].try_into().unwrap_or([0; 8]));
                if x.is_nan() {
                    return None;
                }
                lo = lo.min(x);
                hi = hi.max(x);
                any = true;
            }
            let mut a = [0u8; 16];
            let mut b = [0u8; 16];
            a[..8].copy_from_slice(&lo.to_le_bytes());
            b[..8].copy_from_slice(&hi.to_le_bytes());
            any.then_some((a, b))
        }
        _ => None,
    }
}
