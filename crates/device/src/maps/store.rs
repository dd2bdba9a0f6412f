//! Persistence of the maps: a snapshot plus a merge log.
//!
//! ```text
//! maps.snap : the snapshot (snapshot.rs)
//! maps.log  : { len u32 | crc32 u32 | batch } *     (fsync'd per merge)
//! batch     : kind u8 (1 = merge ΔL2P/ΔVID, 2 = drop VID map) | entries
//! ```
//!
//! A merge is durable once its log batch is fsync'd; on open the snapshot
//! is loaded and the log replayed up to the first torn or corrupt batch.
//! When the log outgrows the snapshot, a new snapshot is written to a
//! temporary file, fsync'd, renamed over the old one, and the log emptied.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use ndpdb_formats::codec::{Reader, Writer};
use ndpdb_formats::{Lpn, Ppn, TableId};
use ndpdb_link::command::{decode_map_delta, encode_map_delta};
use ndpdb_link::{Result, VidEntry};

use super::{io, snapshot, Maps};

/// Persistence of [`Maps`] in a directory.
pub struct MapStore {
    dir: PathBuf,
    log: File,
    log_len: u64,
    snapshot_len: u64,
}

const KIND_MERGE: u8 = 1;
const KIND_DROP: u8 = 2;

impl MapStore {
    /// Opens (or creates) the map files and returns the recovered maps.
    pub fn open(dir: &Path) -> Result<(MapStore, Maps)> {
        let snap_path = dir.join("maps.snap");
        let mut maps = Maps::default();
        let mut snapshot_len = 0;
        let mut older_format = false;
        if snap_path.exists() {
            let snap = snapshot::read(&snap_path)?;
            (maps, snapshot_len, older_format) = (snap.maps, snap.len, snap.older_format);
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
        let mut store = MapStore {
            dir: dir.to_path_buf(),
            log,
            log_len: valid as u64,
            snapshot_len,
        };
        if older_format {
            store.compact(&maps)?;
        }
        Ok((store, maps))
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
        let tmp = self.dir.join("maps.snap.tmp");
        let written = snapshot::write(&tmp, maps)?;
        fs::rename(&tmp, self.dir.join("maps.snap")).map_err(io)?;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io)?;
        self.log.set_len(0).map_err(io)?;
        self.log.sync_all().map_err(io)?;
        self.log_len = 0;
        self.snapshot_len = written;
        Ok(())
    }
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
    use ndpdb_formats::{RecId, Vid};

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
