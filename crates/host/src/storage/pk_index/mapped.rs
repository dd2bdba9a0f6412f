//! The checkpointed base of a primary-key index: a static hash file,
//! mapped into memory and read in place, so that opening a table of
//! millions of keys reads a few megabytes of directory instead of every
//! key.
//!
//! ```text
//!  <table>.idx
//!  ┌──────────────────────────────────────────────────────────────┐
//!  │ header (56 bytes)                                            │
//!  │  "NDPPKIX3" │ table u32 │ group u32 │ entries u64 │ buckets u64
//!  │  data_len u64 │ vid_bound u64 │ meta_crc u32 │ header_crc u32 │
//!  ├──────────────────────────────────────────────────────────────┤
//!  │ directory: (buckets + 1) × u64  byte offset of each bucket   │
//!  │            in the data area; dir[0] = 0, dir[buckets] =      │
//!  │            data_len, never decreasing                        │
//!  ├──────────────────────────────────────────────────────────────┤
//!  │ group checksums: ⌈buckets / group⌉ × u32, crc32 of the data  │
//!  │            of `group` consecutive buckets                    │
//!  ├──────────────────────────────────────────────────────────────┤
//!  │ data: bucket after bucket, entries (key_len u32, key, vid u64)│
//!  └──────────────────────────────────────────────────────────────┘
//!  bucket of a key = ⌊key_hash(key) × buckets / 2⁶⁴⌋   (about 8 keys each)
//! ```
//!
//! All integers are little-endian. `header_crc` covers the header's first
//! 52 bytes, `meta_crc` the directory and the group checksums: an open
//! checks both and every directory offset (about 1 % of the file). A
//! group's data is checked the first time a lookup or a scan touches it,
//! as PostgreSQL checks a page's checksum when it reads the page; a
//! mismatch is `XX001` for that lookup, never a wrong answer.
//!
//! A file is written once, to a temporary name, synced and renamed into
//! place; ndpdb never writes to it again (a newer base replaces it by
//! another rename, and the mapping of the old one stays valid).

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::Mmap;

use ndpdb_formats::{Error, Result, TableId, Vid};

use super::files::{io, publish, Pace};

pub const MAGIC: &[u8; 8] = b"NDPPKIX3";
const HEADER_LEN: usize = 56;
/// Buckets per checksum group (about 25 KiB of 36-byte keys).
const GROUP: u64 = 64;
/// Keys per bucket the writer aims at.
const KEYS_PER_BUCKET: u64 = 8;

/// The hash that places a key in its bucket. Part of the file format:
/// changing it makes every written index unreadable.
pub fn key_hash(key: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (key.len() as u64).wrapping_mul(K);
    let mut chunks = key.chunks_exact(8);
    let mix = |h: u64, word: u64| (h ^ word).wrapping_mul(K).rotate_left(31);
    for c in &mut chunks {
        h = mix(h, u64::from_le_bytes(c.try_into().expect("8 bytes")));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        h = mix(h, u64::from_le_bytes(b));
    }
    // MurmurHash3's finalizer: every input bit reaches the high bits the
    // bucket is taken from.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

fn bucket_of(hash: u64, buckets: u64) -> u64 {
    ((hash as u128 * buckets as u128) >> 64) as u64
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// A base file, mapped.
pub struct MappedIndex {
    map: Mmap,
    entries: u64,
    buckets: u64,
    vid_bound: u64,
    dir_at: usize,
    sums_at: usize,
    data_at: usize,
    /// One bit per checksum group whose data has been checked.
    checked: Vec<AtomicU64>,
}

impl MappedIndex {
    /// Maps the base file at `path` and checks its header and directory.
    pub fn open(path: &Path, table: TableId) -> Result<MappedIndex> {
        let file = File::open(path).map_err(io)?;
        // SAFETY: the file is never written after it is renamed into place
        // (module docs) and the database directory is locked against other
        // ndpdb processes; every offset read from the mapping is checked
        // against its length before use.
        let map = unsafe { Mmap::map(&file) }.map_err(io)?;
        let b: &[u8] = &map;
        if b.len() < HEADER_LEN || &b[..8] != MAGIC {
            return Err(Error::corrupted("PK index file: bad magic"));
        }
        if crc32fast::hash(&b[..52]) != le_u32(b, 52) {
            return Err(Error::corrupted("PK index file: header checksum mismatch"));
        }
        if le_u32(b, 8) != table.0 {
            return Err(Error::corrupted("PK index file of another table"));
        }
        let group = le_u32(b, 12) as u64;
        let (entries, buckets, data_len) = (le_u64(b, 16), le_u64(b, 24), le_u64(b, 32));
        let vid_bound = le_u64(b, 40);
        if group != GROUP || buckets == 0 {
            return Err(Error::corrupted("PK index file: bad bucket layout"));
        }
        let groups = buckets.div_ceil(GROUP);
        let dir_at = HEADER_LEN;
        let sums_at = (buckets + 1)
            .checked_mul(8)
            .and_then(|d| d.checked_add(dir_at as u64));
        let data_at = sums_at.and_then(|s| s.checked_add(groups * 4));
        let end = data_at.and_then(|d| d.checked_add(data_len));
        let (Some(sums_at), Some(data_at), Some(end)) = (sums_at, data_at, end) else {
            return Err(Error::corrupted("PK index file: sizes overflow"));
        };
        if end != b.len() as u64 {
            return Err(Error::corrupted(
                "PK index file: length disagrees with header",
            ));
        }
        let (sums_at, data_at) = (sums_at as usize, data_at as usize);
        if crc32fast::hash(&b[dir_at..data_at]) != le_u32(b, 48) {
            return Err(Error::corrupted(
                "PK index file: directory checksum mismatch",
            ));
        }
        let mut prev = 0;
        for i in 0..=buckets as usize {
            let off = le_u64(b, dir_at + 8 * i);
            if off < prev || off > data_len || (i == 0 && off != 0) {
                return Err(Error::corrupted("PK index file: bad bucket offset"));
            }
            prev = off;
        }
        if prev != data_len {
            return Err(Error::corrupted(
                "PK index file: buckets end before the data",
            ));
        }
        // Each entry takes at least 12 bytes.
        if entries > data_len / 12 {
            return Err(Error::corrupted(
                "PK index file: entry count beyond the data",
            ));
        }
        let checked = (0..groups.div_ceil(64))
            .map(|_| AtomicU64::new(0))
            .collect();
        Ok(MappedIndex {
            map,
            entries,
            buckets,
            vid_bound,
            dir_at,
            sums_at,
            data_at,
            checked,
        })
    }

    /// Keys in the file.
    pub fn len(&self) -> u64 {
        self.entries
    }

    /// One past the largest VID the file names.
    pub fn vid_bound(&self) -> u64 {
        self.vid_bound
    }

    fn dir(&self, bucket: u64) -> usize {
        le_u64(&self.map, self.dir_at + 8 * bucket as usize) as usize
    }

    /// The data of buckets `[from, to)`.
    fn data(&self, from: u64, to: u64) -> &[u8] {
        let at = self.data_at;
        &self.map[at + self.dir(from)..at + self.dir(to)]
    }

    /// Checks the checksum of the group holding `bucket`, once.
    fn check_group(&self, bucket: u64) -> Result<()> {
        let g = bucket / GROUP;
        let (word, bit) = (&self.checked[(g / 64) as usize], 1u64 << (g % 64));
        if word.load(Ordering::Acquire) & bit != 0 {
            return Ok(());
        }
        let data = self.data(g * GROUP, ((g + 1) * GROUP).min(self.buckets));
        if crc32fast::hash(data) != le_u32(&self.map, self.sums_at + 4 * g as usize) {
            return Err(Error::corrupted(format!(
                "PK index file: checksum mismatch in bucket group {g}; the index is rebuilt from the table at the next open"
            )));
        }
        word.fetch_or(bit, Ordering::AcqRel);
        Ok(())
    }

    /// The VID the file holds for `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vid>> {
        let b = bucket_of(key_hash(key), self.buckets);
        self.check_group(b)?;
        let mut found = None;
        for_each_entry(self.data(b, b + 1), |k, vid| {
            if k == key {
                found = Some(vid);
            }
        })?;
        Ok(found)
    }

    /// Calls `f` for every entry, checking each group as it goes.
    pub fn for_each(&self, mut f: impl FnMut(&[u8], Vid)) -> Result<()> {
        for g in 0..self.buckets.div_ceil(GROUP) {
            self.check_group(g * GROUP)?;
            let to = ((g + 1) * GROUP).min(self.buckets);
            for_each_entry(self.data(g * GROUP, to), &mut f)?;
        }
        Ok(())
    }
}

/// The entries of a stretch of data, bounds-checked.
fn for_each_entry(mut data: &[u8], mut f: impl FnMut(&[u8], Vid)) -> Result<()> {
    while !data.is_empty() {
        let bad = || Error::corrupted("PK index file: entry beyond its bucket");
        let len = data.get(..4).ok_or_else(bad)?;
        let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
        let end = len
            .checked_add(12)
            .filter(|e| *e <= data.len())
            .ok_or_else(bad)?;
        f(&data[4..4 + len], Vid(le_u64(data, 4 + len)));
        data = &data[end..];
    }
    Ok(())
}

/// Produces the entries of a new base file, calling its argument once
/// per entry.
pub type Visit<'a> = dyn Fn(&mut dyn FnMut(&[u8], Vid)) -> Result<()> + 'a;

/// Writes a base file holding every entry `visit` produces (it is called
/// twice and must produce the same entries, each key once) and publishes
/// it at `path`.
pub fn write(path: &Path, table: TableId, pace: Pace<'_>, visit: &Visit<'_>) -> Result<()> {
    // Pass 1: bytes per bucket.
    let mut n = 0u64;
    visit(&mut |_, _| n += 1)?;
    let buckets = n.div_ceil(KEYS_PER_BUCKET).max(1);
    let mut dir = vec![0u64; buckets as usize + 1];
    let mut vid_bound = 0;
    visit(&mut |key, vid| {
        dir[bucket_of(key_hash(key), buckets) as usize + 1] += 12 + key.len() as u64;
        vid_bound = vid_bound.max(vid.0 + 1);
    })?;
    for i in 1..dir.len() {
        dir[i] += dir[i - 1];
    }
    let data_len = dir[buckets as usize];
    // Pass 2: place the entries.
    let mut data = vec![0u8; data_len as usize];
    let mut fill = dir.clone();
    visit(&mut |key, vid| {
        let b = bucket_of(key_hash(key), buckets) as usize;
        let at = fill[b] as usize;
        data[at..at + 4].copy_from_slice(&(key.len() as u32).to_le_bytes());
        data[at + 4..at + 4 + key.len()].copy_from_slice(key);
        data[at + 4 + key.len()..at + 12 + key.len()].copy_from_slice(&vid.0.to_le_bytes());
        fill[b] += 12 + key.len() as u64;
    })?;
    if fill[..buckets as usize] != dir[1..] {
        return Err(Error::corrupted("PK index: entries changed while written"));
    }
    let mut meta = Vec::with_capacity(dir.len() * 8 + buckets.div_ceil(GROUP) as usize * 4);
    for d in &dir {
        meta.extend_from_slice(&d.to_le_bytes());
    }
    for g in 0..buckets.div_ceil(GROUP) {
        let (from, to) = (
            dir[(g * GROUP) as usize],
            dir[((g + 1) * GROUP).min(buckets) as usize],
        );
        meta.extend_from_slice(&crc32fast::hash(&data[from as usize..to as usize]).to_le_bytes());
    }
    let mut header = Vec::with_capacity(HEADER_LEN);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&table.0.to_le_bytes());
    header.extend_from_slice(&(GROUP as u32).to_le_bytes());
    for v in [n, buckets, data_len, vid_bound] {
        header.extend_from_slice(&v.to_le_bytes());
    }
    header.extend_from_slice(&crc32fast::hash(&meta).to_le_bytes());
    let crc = crc32fast::hash(&header);
    header.extend_from_slice(&crc.to_le_bytes());
    publish(path, pace, |f: &mut dyn Write| {
        f.write_all(&header)?;
        f.write_all(&meta)?;
        f.write_all(&data)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u64) -> Vec<u8> {
        let mut k = vec![0x49];
        k.extend_from_slice(&i.to_be_bytes());
        k
    }

    fn write_keys(path: &Path, keys: &[(Vec<u8>, Vid)]) {
        write(path, TableId(3), Pace::DiskSpeed, &|f| {
            keys.iter().for_each(|(k, v)| f(k, *v));
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn every_key_is_found_and_absent_keys_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("3.idx");
        for n in [0u64, 1, 7, 1000, 20_000] {
            let keys: Vec<_> = (0..n).map(|i| (key(i * 3), Vid(i + 10))).collect();
            write_keys(&path, &keys);
            let m = MappedIndex::open(&path, TableId(3)).unwrap();
            assert_eq!(
                (m.len(), m.vid_bound()),
                (n, if n == 0 { 0 } else { n + 10 })
            );
            for (k, v) in &keys {
                assert_eq!(m.get(k).unwrap(), Some(*v));
            }
            for i in 0..200 {
                assert_eq!(m.get(&key(i * 3 + 1)).unwrap(), None);
            }
            let mut all = Vec::new();
            m.for_each(|k, v| all.push((k.to_vec(), v))).unwrap();
            all.sort();
            let mut want = keys.clone();
            want.sort();
            assert_eq!(all, want);
            assert!(MappedIndex::open(&path, TableId(4)).is_err());
        }
    }

    #[test]
    fn damage_anywhere_is_an_error_not_a_wrong_answer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("3.idx");
        let keys: Vec<_> = (0..3000).map(|i| (key(i), Vid(i))).collect();
        write_keys(&path, &keys);
        let good = std::fs::read(&path).unwrap();
        for at in (0..good.len()).step_by(997).chain([good.len() - 1]) {
            let mut bad = good.clone();
            bad[at] ^= 0x04;
            std::fs::write(&path, &bad).unwrap();
            let Ok(m) = MappedIndex::open(&path, TableId(3)) else {
                continue;
            };
            // The damage is in the data: some lookup (and the scan) sees it.
            let lookups: Vec<_> = keys.iter().map(|(k, _)| m.get(k)).collect();
            assert!(lookups.iter().any(|r| r.is_err()), "byte {at}");
            assert!(lookups
                .iter()
                .zip(&keys)
                .all(|(r, (_, v))| r.is_err() || r.as_ref().unwrap() == &Some(*v)));
            assert!(m.for_each(|_, _| ()).is_err());
        }
        std::fs::write(&path, &good[..good.len() - 5]).unwrap();
        assert!(MappedIndex::open(&path, TableId(3)).is_err());
    }

    #[test]
    fn the_key_hash_is_stable() {
        // Written files depend on these values (docs/FORMATS.md gives the
        // function; these were computed from that description).
        assert_eq!(key_hash(b""), 0);
        assert_eq!(key_hash(b"ndpdb"), 0xfceff1fe8e41c3c7);
        assert_eq!(key_hash(&key(1)), 0x9eb68cef1a2f2d5b);
        let bytes: Vec<u8> = (0..20).collect();
        assert_eq!(key_hash(&bytes), 0xd09748e360bfeaf5);
    }
}
