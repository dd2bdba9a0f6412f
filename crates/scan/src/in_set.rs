//! `column [NOT] IN (integers…)` as one kernel, for lists of any length:
//! a bitmap over the list's range when that range is compact, else a
//! binary search of the sorted list. The IN lists of a query and the
//! runtime join filters (the hashed side's keys handed to the scan that
//! probes them, `sql/src/exec/join/filter.rs`) both compile to it.
//!
//! ```text
//!  ol_i_id IN {17, 912, 40_311, …}      page: zone [lo, hi] of ol_i_id
//!        │                                   │ no member in [lo, hi]: pruned
//!        ▼                                   ▼
//!  IntSet { sorted, bitmap over [min, max] } ─► selection keeps members
//! ```
//!
//! SQL's logic: NULL IN (…) is NULL; a value not in the list is FALSE,
//! or NULL when the list had a NULL; NOT IN negates that.

use ndpdb_formats::page::{ColumnData, ColumnRef, Zone};
use ndpdb_formats::{Error, Result};

use crate::kernel::{keep, rd_i32, rd_i64, FALSE, NULL, TRUE};

/// Widest range (in values) a set's bitmap covers: 2^23 bits, 1 MiB.
const BITMAP_SPAN: u64 = 1 << 23;

/// A set of integers, asked per row whether it holds the row's value.
#[derive(Clone, Debug, PartialEq)]
pub struct IntSet {
    /// The members, ascending, without duplicates.
    sorted: Vec<i64>,
    /// One bit per value of `[sorted[0], sorted[last]]`, when that span
    /// is at most [`BITMAP_SPAN`] (and not far sparser than the list).
    bitmap: Option<Vec<u64>>,
    /// The list held a NULL: a value not in it is NULL, not FALSE.
    pub has_null: bool,
}

impl IntSet {
    pub fn new(mut members: Vec<i64>, has_null: bool) -> IntSet {
        members.sort_unstable();
        members.dedup();
        let bitmap = match (members.first(), members.last()) {
            (Some(&lo), Some(&hi)) => {
                let span = hi as i128 - lo as i128 + 1;
                let dense_enough = span / 64 <= members.len() as i128 * 64;
                (span <= BITMAP_SPAN as i128 && dense_enough).then(|| {
                    let mut words = vec![0u64; (span as u64).div_ceil(64) as usize];
                    for &m in &members {
                        let bit = (m - lo) as u64;
                        words[(bit / 64) as usize] |= 1 << (bit % 64);
                    }
                    words
                })
            }
            _ => None,
        };
        IntSet {
            sorted: members,
            bitmap,
            has_null,
        }
    }

    /// How many members the set has.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    #[inline]
    pub fn contains(&self, x: i64) -> bool {
        match (&self.bitmap, self.sorted.first()) {
            (Some(words), Some(&lo)) => {
                let bit = (x as i128 - lo as i128) as u128;
                let word = (bit / 64) as usize;
                bit < (words.len() as u128) * 64 && words[word] & (1 << (bit % 64)) != 0
            }
            _ => self.sorted.binary_search(&x).is_ok(),
        }
    }

    /// Whether a member lies in `[lo, hi]`.
    pub fn any_in(&self, lo: i128, hi: i128) -> bool {
        let first = self.sorted.partition_point(|&m| (m as i128) < lo);
        self.sorted.get(first).is_some_and(|&m| m as i128 <= hi)
    }

    /// Whether no value of the page's column can be a member (its zone
    /// map holds none); `false` when the page has no zone map.
    pub fn zone_excludes(&self, col: &ColumnRef<'_>) -> bool {
        match col.zone() {
            Some(Zone::Int { min, max, scale: 0 }) => !self.any_in(min, max),
            _ => false,
        }
    }

    /// Keeps the selected rows whose value is a member (NULLs never are).
    pub fn keep(&self, col: &ColumnRef<'_>, sel: &mut Vec<u16>) -> Result<()> {
        match col.data {
            ColumnData::Fixed { width: 4, values } => {
                keep(col, sel, |i| self.contains(rd_i32(values, i) as i64))
            }
            ColumnData::Fixed { width: 8, values } => {
                keep(col, sel, |i| self.contains(rd_i64(values, i)))
            }
            _ => return Err(no_kernel(col)),
        }
        Ok(())
    }

    /// Appends the truth value of `column [NOT] IN set` for each selected
    /// row to `out`.
    pub fn truths(
        &self,
        col: &ColumnRef<'_>,
        negated: bool,
        sel: &[u16],
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let (values, width) = match col.data {
            ColumnData::Fixed {
                width: w @ (4 | 8),
                values,
            } => (values, w),
            _ => return Err(no_kernel(col)),
        };
        let absent = match (self.has_null, negated) {
            (true, _) => NULL,
            (false, false) => FALSE,
            (false, true) => TRUE,
        };
        let present = if negated { FALSE } else { TRUE };
        out.extend(sel.iter().map(|&s| {
            let i = s as usize;
            if col.is_null(i) {
                return NULL;
            }
            let x = match width {
                4 => rd_i32(values, i) as i64,
                _ => rd_i64(values, i),
            };
            if self.contains(x) {
                present
            } else {
                absent
            }
        }));
        Ok(())
    }
}

fn no_kernel(col: &ColumnRef<'_>) -> Error {
    Error::corrupted(format!("no IN kernel for a {} column", col.ty))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bitmap and the binary search answer alike, at the edges too.
    #[test]
    fn membership_matches_the_list_with_and_without_a_bitmap() {
        let dense = IntSet::new(vec![5, 3, 9, 3, 64, 65, 130], false);
        assert!(dense.bitmap.is_some());
        let sparse = IntSet::new(vec![i64::MIN, -1, 0, 1 << 40, i64::MAX], false);
        assert!(sparse.bitmap.is_none());
        for x in -3..200 {
            let listed = [3, 5, 9, 64, 65, 130].contains(&x);
            assert_eq!(dense.contains(x), listed, "{x}");
        }
        for x in [i64::MIN, i64::MAX, -1, 0, 1 << 40] {
            assert!(sparse.contains(x));
            assert!(!dense.contains(x));
        }
        assert!(!sparse.contains(1) && !sparse.contains(i64::MIN + 1));
        assert_eq!(dense.len(), 6);
    }

    #[test]
    fn a_zone_without_members_is_excluded() {
        let s = IntSet::new(vec![10, 20, 30], false);
        assert!(s.any_in(10, 10) && s.any_in(11, 20) && s.any_in(-5, 100));
        assert!(!s.any_in(11, 19) && !s.any_in(31, 1000) && !s.any_in(0, 9));
        assert!(!IntSet::new(Vec::new(), false).any_in(i128::MIN, i128::MAX));
    }
}
