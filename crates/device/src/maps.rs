//! Device L2P and VID maps, persisted as a snapshot plus a merge log.
//!
//! ```text
//! maps.snap : "NDPM" | crc32 u32 | len u64 | payload (all maps)
//! maps.log  : { len u32 | crc32 u32 | batch } *     (fsync'd per merge)
//! batch     : kind u8 (1 = merge ΔL2P/ΔVID, 2 = drop VID map) | entries
//! ```
//!
//! A merge is durable once its log batch is fsync'd; on open the snapshot
//! is loaded and the log replayed up to the first torn or corrupt batch.
//! When the log outgrows the snapshot, a new snapshot is written to a
//! temporary file, fsync'd, renamed over the old one, and the log emptied.

use std::collections::HashMap;

use rustc_hash::FxHashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use ndpdb_formats::codec::{Reader, Writer};
use ndpdb_formats::{Lpn, Ppn, RecId, TableId, Vid};
use ndpdb_link::command::{decode_map_delta, encode_map_delta};
use ndpdb_link::{LinkError, Result, VidEntry};

fn io(e: std::io::Error) -> LinkError {
    LinkError::Io(e.to_string())
}

/// The L2P map: LPNs are handed out densely from a counter, so the map is
/// an array indexed by LPN (one load per page a PE resolves, no hashing);
/// an LPN far beyond the array's end (a map written by something else)
/// goes to a side table instead of growing the array without bound.
#[derive(Default, Debug, Clone)]
pub struct L2p {
    dense: Vec<u64>,
    sparse: FxHashMap<Lpn, Ppn>,
    len: usize,
}

/// An unmapped slot of [`L2p::dense`].
const UNMAPPED: u64 = u64::MAX;
/// How far past its end the dense array grows for one insert.
const DENSE_SLACK: u64 = 1 << 20;

impl L2p {
    #[inline]
    pub fn get(&self, lpn: &Lpn) -> Option<Ppn> {
        match self.dense.get(lpn.0 as usize) {
            Some(&p) if p != UNMAPPED => Some(Ppn(p)),
            Some(_) => None,
            None if self.sparse.is_empty() => None,
            None => self.sparse.get(lpn).copied(),
        }
    }

    pub fn insert(&mut self, lpn: Lpn, ppn: Ppn) {
        let i = lpn.0;
        if i < self.dense.len() as u64 + DENSE_SLACK && ppn.0 != UNMAPPED {
            let i = i as usize;
            if i >= self.dense.len() {
                self.dense.resize(i + 1, UNMAPPED);
            }
            if self.dense[i] == UNMAPPED {
                self.len += 1;
            }
            self.dense[i] = ppn.0;
        } else if self.sparse.insert(lpn, ppn).is_none() {
            self.len += 1;
        }
    }

    pub fn remove(&mut self, lpn: Lpn) {
        let removed = match self.dense.get_mut(lpn.0 as usize) {
            Some(p) if *p != UNMAPPED => {
                *p = UNMAPPED;
                true
            }
            Some(_) => false,
            None => self.sparse.remove(&lpn).is_some(),
        };
        if removed {
            self.len -= 1;
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every mapping, dense part in LPN order first.
    pub fn iter(&self) -> impl Iterator<Item = (Lpn, Ppn)> + '_ {
        self.dense
            .iter()
            .enumerate()
            .filter(|(_, p)| **p != UNMAPPED)
            .map(|(l, p)| (Lpn(l as u64), Ppn(*p)))
            .chain(self.sparse.iter().map(|(l, p)| (*l, *p)))
    }
}

impl PartialEq for L2p {
    fn eq(&self, o: &L2p) -> bool {
        let sorted = |m: &L2p| {
            let mut v: Vec<_> = m.iter().collect();
            v.sort();
            v
        };
        self.len == o.len && sorted(self) == sorted(o)
    }
}

/// The maps themselves.
#[derive(Default, Debug, Clone, PartialEq)]
pub struct Maps {
    pub l2p: L2p,
    /// Per table: index = VID, value = head RecId (raw; NULL = empty).
    pub vids: HashMap<TableId, Vec<u64>>,
}

impl Maps {
    /// Applies ΔL2P (an entry to [`Ppn::NONE`] unmaps its LPN) and ΔVID.
    pub fn apply_merge(&mut self, l2p: &[(Lpn, Ppn)], vids: &[VidEntry]) {
        for (l, p) in l2p {
            if *p == Ppn::NONE {
                self.l2p.remove(*l);
            } else {
                self.l2p.insert(*l, *p);
            }
        }
        for e in vids {
            let map = self.vids.entry(e.table).or_default();
            let i = e.vid.0 as usize;
            if map.len() <= i {
                map.resize(i + 1, RecId::NULL.raw());
            }
            map[i] = e.head.raw();
        }
    }

    pub fn drop_table(&mut self, table: TableId) {
        self.vids.remove(&table);
    }

    pub fn vid_entries(&self, table: TableId) -> Vec<(Vid, RecId)> {
        self.vids
            .get(&table)
            .map(|m| {
                m.iter()
                    .enumerate()
                    .filter(|(_, r)| **r != RecId::NULL.raw())
                    .map(|(v, r)| (Vid(v as u64), RecId::from_raw(*r)))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn encode(&self, w: &mut Writer) {
        let mut l2p: Vec<_> = self.l2p.iter().collect();
        l2p.sort_unstable();
        w.u64(l2p.len() as u64);
        for (l, p) in l2p {
            w.u64(l.0).u64(p.0);
        }
        let mut tables: Vec<_> = self.vids.keys().copied().collect();
        tables.sort();
        w.u32(tables.len() as u32);
        for t in tables {
            let entries = self.vid_entries(t);
            w.u32(t.0).u64(entries.len() as u64);
            for (v, r) in entries {
                w.u64(v.0).u64(r.raw());
            }
        }
    }

    fn decode(r: &mut Reader<'_>) -> ndpdb_formats::Result<Maps> {
        let mut maps = Maps::default();
        let n = r.u64()?;
        for _ in 0..n {
            maps.l2p.insert(Lpn(r.u64()?), Ppn(r.u64()?));
        }
        let tables = r.u32()?;
        for _ in 0..tables {
            let t = TableId(r.u32()?);
            let n = r.u64()?;
            let mut entries = Vec::new();
            for _ in 0..n {
                let vid = Vid(r.u64()?);
                if vid.0 >= ndpdb_formats::ids::MAX_VID {
                    return Err(ndpdb_formats::Error::corrupted(
                        "VID out of range in map snapshot",
                    ));
                }
                entries.push(VidEntry {
                    table: t,
                    vid,
                    head: RecId::from_raw(r.u64()?),
                });
            }
            maps.vids.entry(t).or_default();
            maps.apply_merge(&[], &entries);
        }
        Ok(maps)
    }
}

/// Persistence of [`Maps`] in a directory.
pub struct MapStore {
    dir: PathBuf,
    log: File,
    log_len: u64,
    snapshot_len: u64,
}

const SNAP_MAGIC: &[u8; 4] = b"NDPM";
const KIND_MERGE: u8 = 1;
const KIND_DROP: u8 = 2;

impl MapStore {
    /// Opens (or creates) the map files and returns the recovered maps.
    pub fn open(dir: &Path) -> Result<(MapStore, Maps)> {
        let snap_path = dir.join("maps.snap");
        let mut maps = Maps::default();
        let mut snapshot_len = 0;
        if snap_path.exists() {
            let bytes = fs::read(&snap_path).map_err(io)?;
            snapshot_len = bytes.len() as u64;
            maps = decode_snapshot(&bytes)?;
        }
        let log_path = dir.join("maps.log");
        let mut log = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&log_path)
            .map_err(io)?;
        let mut bytes = Vec::new();
        log.read_to_end(&mut bytes).map_err(io)?;
        let valid = replay_log(&bytes, &mut maps);
        if valid < bytes.len() {
            // Torn or corrupt tail: cut it so later batches follow valid ones.
            log.set_len(valid as u64).map_err(io)?;
            log.sync_all().map_err(io)?;
        }
        Ok((
            MapStore {
                dir: dir.to_path_buf(),
                log,
                log_len: valid as u64,
                snapshot_len,
            },
            maps,
        ))
    }

    pub fn log_merge(&mut self, l2p: &[(Lpn, Ppn)], vids: &[VidEntry]) -> Result<()> {
        let mut w = Writer::new();
        w.u8(KIND_MERGE);
        encode_map_delta(&mut w, l2p, vids);
        self.append(w.as_slice())
    }

    pub fn log_drop(&mut self, table: TableId) -> Result<()> {
        let mut w = Writer::new();
        w.u8(KIND_DROP).u32(table.0);
        self.append(w.as_slice())
    }

    fn append(&mut self, batch: &[u8]) -> Result<()> {
        let mut w = Writer::with_capacity(batch.len() + 8);
        w.u32(batch.len() as u32)
            .u32(crc32fast::hash(batch))
            .raw(batch);
        self.log.write_all(w.as_slice()).map_err(io)?;
        self.log.sync_data().map_err(io)?;
        self.log_len += w.len() as u64;
        Ok(())
    }

    /// Whether the log has grown enough to fold it into a new snapshot.
    pub fn wants_compaction(&self) -> bool {
        self.log_len > (4 << 20).max(self.snapshot_len)
    }

    /// Writes `maps` as the new snapshot and empties the log.
    pub fn compact(&mut self, maps: &Maps) -> Result<()> {
        let mut payload = Writer::new();
        maps.encode(&mut payload);
        let mut w = Writer::with_capacity(payload.len() + 16);
        w.raw(SNAP_MAGIC)
            .u32(crc32fast::hash(payload.as_slice()))
            .u64(payload.len() as u64)
            .raw(payload.as_slice());
        let tmp = self.dir.join("maps.snap.tmp");
        {
            let mut f = File::create(&tmp).map_err(io)?;
            f.write_all(w.as_slice()).map_err(io)?;
            f.sync_all().map_err(io)?;
        }
        fs::rename(&tmp, self.dir.join("maps.snap")).map_err(io)?;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io)?;
        self.log.set_len(0).map_err(io)?;
        self.log.sync_all().map_err(io)?;
        self.log_len = 0;
        self.snapshot_len = w.len() as u64;
        Ok(())
    }
}

fn decode_snapshot(bytes: &[u8]) -> Result<Maps> {
    let mut r = Reader::new(bytes);
    if r.take(4)? != SNAP_MAGIC {
        return Err(LinkError::Corrupted("bad map snapshot magic".into()));
    }
    let crc = r.u32()?;
    let len = r.u64()? as usize;
    let payload = r.take(len)?;
    if crc32fast::hash(payload) != crc {
        return Err(LinkError::Corrupted(
            "map snapshot checksum mismatch".into(),
        ));
    }
    let mut pr = Reader::new(payload);
    let maps = Maps::decode(&mut pr)?;
    pr.finish("map snapshot")?;
    Ok(maps)
}

/// Applies valid batches; returns the length of the valid prefix.
fn replay_log(bytes: &[u8], maps: &mut Maps) -> usize {
    let mut pos = 0;
    while bytes.len() - pos >= 8 {
        let mut r = Reader::new(&bytes[pos..]);
        let (Ok(len), Ok(crc)) = (r.u32(), r.u32()) else {
            break;
        };
        let Ok(batch) = r.take(len as usize) else {
            break;
        };
        if crc32fast::hash(batch) != crc || apply_batch(batch, maps).is_err() {
            break;
        }
        pos += 8 + len as usize;
    }
    pos
}

fn apply_batch(batch: &[u8], maps: &mut Maps) -> ndpdb_formats::Result<()> {
    let mut r = Reader::new(batch);
    match r.u8()? {
        KIND_MERGE => {
            let (l2p, vids) = decode_map_delta(&mut r)?;
            r.finish("map batch")?;
            if vids.iter().any(|e| e.vid.0 >= ndpdb_formats::ids::MAX_VID) {
                return Err(ndpdb_formats::Error::corrupted(
                    "VID out of range in map batch",
                ));
            }
            maps.apply_merge(&l2p, &vids);
        }
        KIND_DROP => {
            let t = TableId(r.u32()?);
            r.finish("map batch")?;
            maps.drop_table(t);
        }
        k => {
            return Err(ndpdb_formats::Error::corrupted(format!(
                "map batch kind {k}"
            )))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(t: u32, v: u64, l: u64) -> VidEntry {
        VidEntry {
            table: TableId(t),
            vid: Vid(v),
            head: RecId::new(Lpn(l), 1),
        }
    }

    #[test]
    fn merges_survive_reopen_compaction_and_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let expected;
        {
            let (mut store, mut maps) = MapStore::open(dir.path()).unwrap();
            for i in 0..10u64 {
                let l2p = vec![(Lpn(i), Ppn(i + 100))];
                let vids = vec![entry(1, i, i), entry(2, i * 2, i)];
                store.log_merge(&l2p, &vids).unwrap();
                maps.apply_merge(&l2p, &vids);
                if i == 5 {
                    store.compact(&maps).unwrap();
                }
            }
            store.log_drop(TableId(2)).unwrap();
            maps.drop_table(TableId(2));
            // Freed pages: their LPNs are unmapped.
            let unmap = vec![(Lpn(3), Ppn::NONE), (Lpn(8), Ppn::NONE)];
            store.log_merge(&unmap, &[]).unwrap();
            maps.apply_merge(&unmap, &[]);
            assert_eq!((maps.l2p.get(&Lpn(3)), maps.l2p.len()), (None, 8));
            expected = maps;
        }
        let (_, maps) = MapStore::open(dir.path()).unwrap();
        assert_eq!(maps, expected);
        // A torn batch at the end is cut, the rest survives.
        let log = dir.path().join("maps.log");
        let mut f = OpenOptions::new().append(true).open(&log).unwrap();
        f.write_all(&[50, 0, 0, 0, 1, 2, 3]).unwrap();
        drop(f);
        let (_, maps) = MapStore::open(dir.path()).unwrap();
        assert_eq!(maps, expected);
    }
}
