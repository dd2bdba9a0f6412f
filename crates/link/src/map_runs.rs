//! Map dumps (the L2P map, a table's VID map) as runs of consecutive
//! entries: `(key, value, count)` stands for `(key + i, value + i)` for
//! `i < count`. Keys handed out in order map to values in order (VIDs to
//! consecutive slots, LPNs to consecutive PPNs), so a dump of a loaded
//! table takes one run per page instead of one entry per tuple, on the
//! wire and in memory on both sides.
//!
//! ```text
//!  wire: n u32 │ n × (key u64, value u64, count u32)   keys ascending,
//!                                                      count 1..=65,536
//! ```

use ndpdb_formats::codec::{Reader, Writer};

use crate::{LinkError, Result};

/// Longest run: one page's slots (a VID-map run stays on one page, as the
/// next page's first RecId is not the last one + 1).
const MAX_RUN: u64 = 1 << 16;
/// Most entries a dump may expand to.
const MAX_ENTRIES: u64 = 1 << 32;

/// A map dump, ascending by key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MapRuns {
    runs: Vec<(u64, u64, u32)>,
    entries: u64,
}

impl MapRuns {
    /// The runs of `entries`, which must ascend by key.
    pub fn collect(entries: impl IntoIterator<Item = (u64, u64)>) -> MapRuns {
        let mut m = MapRuns::default();
        for (k, v) in entries {
            m.entries += 1;
            match m.runs.last_mut() {
                Some((k0, v0, n))
                    if (*n as u64) < MAX_RUN
                        && k0.checked_add(*n as u64) == Some(k)
                        && v0.checked_add(*n as u64) == Some(v) =>
                {
                    *n += 1
                }
                _ => m.runs.push((k, v, 1)),
            }
        }
        m
    }

    /// Entries the runs stand for.
    pub fn len(&self) -> u64 {
        self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// One past the largest key (0 when empty).
    pub fn key_end(&self) -> u64 {
        self.runs.last().map_or(0, |(k, _, n)| k + *n as u64)
    }

    /// Every entry, ascending by key.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.runs
            .iter()
            .flat_map(|&(k, v, n)| (0..n as u64).map(move |i| (k + i, v + i)))
    }

    /// The map as an array indexed by key, `empty` where no entry is.
    pub fn to_dense(&self, empty: u64) -> Vec<u64> {
        let mut out = vec![empty; self.key_end() as usize];
        for &(k, v, n) in &self.runs {
            for (i, slot) in out[k as usize..(k + n as u64) as usize]
                .iter_mut()
                .enumerate()
            {
                *slot = v + i as u64;
            }
        }
        out
    }

    pub fn encode(&self, w: &mut Writer) {
        w.u32(self.runs.len() as u32);
        for &(k, v, n) in &self.runs {
            w.u64(k).u64(v).u32(n);
        }
    }

    /// Reads runs written by [`MapRuns::encode`]; keys must ascend and stay
    /// below `key_limit`, each run within [`MAX_RUN`] entries.
    pub fn decode(r: &mut Reader<'_>, key_limit: u64) -> Result<MapRuns> {
        let count = r.count(20)?;
        let mut m = MapRuns {
            runs: Vec::with_capacity(count),
            entries: 0,
        };
        for _ in 0..count {
            let (k, v, n) = (r.u64()?, r.u64()?, r.u32()?);
            let bad = n == 0
                || n as u64 > MAX_RUN
                || k < m.key_end()
                || k.checked_add(n as u64).is_none_or(|end| end > key_limit)
                || v.checked_add(n as u64).is_none()
                || m.entries + n as u64 > MAX_ENTRIES;
            if bad {
                return Err(LinkError::Corrupted(format!(
                    "map dump run ({k}, {v}, {n}) out of order or range"
                )));
            }
            m.runs.push((k, v, n));
            m.entries += n as u64;
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_expand_to_the_entries_they_were_made_of() {
        let mut entries: Vec<(u64, u64)> = (0..70_000).map(|i| (i, 1000 + i)).collect();
        entries.extend([(80_000, 5), (80_001, 7), (90_000, 8)]);
        let m = MapRuns::collect(entries.iter().copied());
        assert_eq!((m.len(), m.key_end(), m.runs.len()), (70_003, 90_001, 5));
        assert_eq!(m.iter().collect::<Vec<_>>(), entries);
        let dense = m.to_dense(u64::MAX);
        assert_eq!(
            (dense[69_999], dense[70_000], dense[80_001]),
            (70_999, u64::MAX, 7)
        );
        let mut w = Writer::new();
        m.encode(&mut w);
        let back = MapRuns::decode(&mut Reader::new(w.as_slice()), 90_001).unwrap();
        assert_eq!(back, m);
        assert!(MapRuns::decode(&mut Reader::new(w.as_slice()), 90_000).is_err());
    }
}
