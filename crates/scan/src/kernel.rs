//! The pieces every typed kernel of the scan is built from: SQL's truth
//! values as bytes, little-endian reads of a minipage's fixed-width
//! values, PostgreSQL's float order, the branch-free selection refinement,
//! and a page column checked against the type the plan expects.
//!
//! ```text
//!  PageRef ─ column(c, ty) ─► ColumnRef { values, nulls, zone }
//!                                  │ rd_i32 / rd_i64 / rd_i128 per row
//!                                  ▼
//!  selection [u16] ─ keep(test) ─► the rows that are not NULL and pass
//! ```
//!
//! The predicate kernels (`predicate.rs`), the IN kernel (`in_set.rs`),
//! the runtime join filter (`key_bloom.rs`), the aggregates
//! (`aggregate.rs`) and GROUP BY over a page (`group_page.rs`) all stand
//! on this file; it stands on nothing in the crate.

use std::cmp::Ordering;

use ndpdb_formats::page::{ColumnRef, PageRef};
use ndpdb_formats::{DataType, Error, Result};

/// A row's truth value, one byte per selected row: SQL's FALSE.
pub const FALSE: u8 = 0;
/// SQL's TRUE.
pub const TRUE: u8 = 1;
/// SQL's NULL (unknown).
pub const NULL: u8 = 2;

/// A page column checked against the type the plan expects.
#[inline]
pub fn column<'a>(page: &PageRef<'a>, c: usize, ty: DataType) -> Result<ColumnRef<'a>> {
    let col = page.column(c)?;
    if col.ty != ty {
        return Err(Error::corrupted(format!(
            "page {} column {c} holds {} where the table has {ty}",
            page.lpn().0,
            col.ty
        )));
    }
    Ok(col)
}

/// Value `i` of a minipage of 4-byte little-endian integers.
#[inline]
pub(crate) fn rd_i32(v: &[u8], i: usize) -> i32 {
    i32::from_le_bytes([v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]])
}

/// Value `i` of a minipage of 8-byte little-endian integers.
#[inline]
pub(crate) fn rd_i64(v: &[u8], i: usize) -> i64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&v[8 * i..8 * i + 8]);
    i64::from_le_bytes(b)
}

/// Value `i` of a minipage of 16-byte little-endian integers (NUMERIC
/// mantissas).
#[inline]
pub(crate) fn rd_i128(v: &[u8], i: usize) -> i128 {
    let mut b = [0u8; 16];
    b.copy_from_slice(&v[16 * i..16 * i + 16]);
    i128::from_le_bytes(b)
}

/// PostgreSQL's float order: NaN above everything.
#[inline]
pub(crate) fn f64_cmp(a: f64, b: f64) -> Ordering {
    a.partial_cmp(&b)
        .unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
}

/// Keeps the selected rows that are not NULL and pass `test`.
#[inline(always)]
pub(crate) fn keep(col: &ColumnRef<'_>, sel: &mut Vec<u16>, test: impl Fn(usize) -> bool) {
    if col.has_nulls() {
        sel.retain(|&s| !col.is_null(s as usize) && test(s as usize));
    } else {
        // Branch-free compaction: write every row, advance on a hit.
        let mut n = 0;
        for k in 0..sel.len() {
            let s = sel[k];
            sel[n] = s;
            n += test(s as usize) as usize;
        }
        sel.truncate(n);
    }
}
