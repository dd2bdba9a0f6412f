//! A Bloom filter over composite integer keys: the runtime join filter of
//! a join on two or more INT / BIGINT columns (`sql/src/exec/join/filter.rs`),
//! where an IN list per column would let nearly every row through
//! (CH-benCHmark Q7: ORDER-LINE's (ol_w_id, ol_d_id, ol_o_id) against
//! 11,618 orders). It runs after the predicate, on the rows it kept.
//!
//! ```text
//!  hashed side's keys (w, d, o) ─► hash ─► 2 bits of m (≥ 16 bits a key)
//!  page rows sel ─► read w, d, o ─► hash ─► both bits set? keep : drop
//! ```
//!
//! A Bloom filter answers "maybe" for some keys it was not given (about
//! 1.4 % at 16 bits a key) and never "no" for one it was: the join after
//! it matches exactly, so the filter only saves work, it never changes an
//! answer. A NULL in a key column drops the row (it matches nothing).

use ndpdb_formats::page::{ColumnData, PageRef};
use ndpdb_formats::{DataType, Error, Result};

use crate::kernel::{column, rd_i32, rd_i64};

/// Most key columns hashed together.
pub const MAX_KEY_COLUMNS: usize = 8;

/// Bits per key the filter is sized for (2 hash bits: ~1.4 % false hits).
const BITS_PER_KEY: usize = 16;

#[derive(Debug)]
pub struct KeyBloom {
    /// Table columns of the key, in key order.
    columns: Vec<usize>,
    bits: Vec<u64>,
    /// Bit positions are `hash & mask`.
    mask: u64,
}

impl KeyBloom {
    /// A filter over `columns` holding `keys` (each as many values as
    /// columns, NULL-free).
    pub fn new<'k>(
        columns: Vec<usize>,
        keys: impl ExactSizeIterator<Item = &'k [i64]>,
    ) -> KeyBloom {
        let wanted = keys.len().max(1).saturating_mul(BITS_PER_KEY);
        let size = wanted.next_power_of_two().clamp(1 << 12, 1 << 26);
        let mut bloom = KeyBloom {
            columns,
            bits: vec![0; size / 64],
            mask: size as u64 - 1,
        };
        for key in keys {
            let (a, b) = bloom.positions(hash(key));
            bloom.bits[a / 64] |= 1 << (a % 64);
            bloom.bits[b / 64] |= 1 << (b % 64);
        }
        bloom
    }

    /// The table columns the key reads.
    pub fn columns(&self) -> &[usize] {
        &self.columns
    }

    #[inline]
    fn positions(&self, h: u64) -> (usize, usize) {
        ((h & self.mask) as usize, ((h >> 32) & self.mask) as usize)
    }

    /// Whether `key` may be one the filter was built with.
    #[inline]
    pub fn may_hold(&self, key: &[i64]) -> bool {
        let (a, b) = self.positions(hash(key));
        self.bits[a / 64] & (1 << (a % 64)) != 0 && self.bits[b / 64] & (1 << (b % 64)) != 0
    }

    /// Keeps the rows of `sel` whose key the filter may hold.
    pub fn keep(&self, page: &PageRef<'_>, types: &[DataType], sel: &mut Vec<u16>) -> Result<()> {
        let mut cols = Vec::with_capacity(self.columns.len());
        for &c in &self.columns {
            let ty = *types
                .get(c)
                .ok_or_else(|| Error::corrupted(format!("key column {c} out of range")))?;
            let col = column(page, c, ty)?;
            let width = match col.data {
                ColumnData::Fixed {
                    width: w @ (4 | 8), ..
                } => w,
                _ => {
                    return Err(Error::corrupted(format!(
                        "no key filter kernel for a {} column",
                        col.ty
                    )))
                }
            };
            cols.push((col, width));
        }
        let mut key = [0i64; MAX_KEY_COLUMNS];
        let key = &mut key[..cols.len().min(MAX_KEY_COLUMNS)];
        sel.retain(|&s| {
            let i = s as usize;
            for ((col, width), k) in cols.iter().zip(key.iter_mut()) {
                if col.is_null(i) {
                    return false;
                }
                let ColumnData::Fixed { values, .. } = col.data else {
                    return false;
                };
                *k = match width {
                    4 => rd_i32(values, i) as i64,
                    _ => rd_i64(values, i),
                };
            }
            self.may_hold(key)
        });
        Ok(())
    }
}

/// A 64-bit hash of a key (multiply-xorshift per value).
#[inline]
fn hash(key: &[i64]) -> u64 {
    let mut h: u64 = 0x9E37_79B9_7F4A_7C15;
    for &v in key {
        h = (h ^ v as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        h ^= h >> 31;
    }
    h.wrapping_mul(0x94D0_49BB_1331_11EB) ^ (h >> 29)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_put_in_is_held_and_few_others_are() {
        let keys: Vec<[i64; 3]> = (0..10_000)
            .map(|k| [k % 10, (k / 10) % 10, k / 100])
            .collect();
        let bloom = KeyBloom::new(vec![0, 1, 2], keys.iter().map(|k| &k[..]));
        assert!(keys.iter().all(|k| bloom.may_hold(k)));
        let others = (0..100_000)
            .filter(|&k| bloom.may_hold(&[k % 10, (k / 10) % 10, 1_000 + k / 100]))
            .count();
        assert!(others < 5_000, "{others} of 100,000 absent keys held");
    }
}
