//! Rows as bytes: a result region, an object's projected rows.
//!
//! ```text
//!  rows u32 │ width u32 │ rows × width values (`expr::encode_value`)
//! ```

use crate::codec::{Reader, Writer};
use crate::error::{Error, Result};
use crate::expr::{decode_value, encode_value};
use crate::value::Value;

/// Row results: `rows u32, width u32, values…`.
pub fn encode_rows(rows: &[Vec<Value>], w: &mut Writer) {
    w.u32(rows.len() as u32);
    w.u32(rows.first().map_or(0, Vec::len) as u32);
    for row in rows {
        for v in row {
            encode_value(v, w);
        }
    }
}

/// Most rows of no columns (`SELECT 1 FROM t`) one result region may
/// claim; rows of one or more columns are bounded by the bytes present.
pub const MAX_ZERO_WIDTH_ROWS: usize = 1 << 28;

pub fn decode_rows(r: &mut Reader<'_>) -> Result<Vec<Vec<Value>>> {
    let n = r.u32()? as usize;
    let width = r.u32()? as usize;
    // Every value takes at least its tag byte.
    if width > 0 && width.saturating_mul(n) > r.remaining() {
        return Err(Error::corrupted("result region shorter than its row count"));
    }
    if width == 0 && n > MAX_ZERO_WIDTH_ROWS {
        return Err(Error::corrupted(format!(
            "{n} rows of no columns exceed the limit of {MAX_ZERO_WIDTH_ROWS}"
        )));
    }
    let mut rows = Vec::with_capacity(n.min(1 << 16));
    for _ in 0..n {
        let mut row = Vec::with_capacity(width);
        for _ in 0..width {
            row.push(decode_value(r)?);
        }
        rows.push(row);
    }
    Ok(rows)
}
