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
//!
//! When the log outgrows the snapshot it is folded into a new one without
//! holding up merges for the write (tens of MB, fsync'd):
//!
//! ```text
//!  under the store's lock   maps.log ─rename─► maps.log.old, a fresh maps.log;
//!                           a copy of the maps (they equal snapshot + old log)
//!  in the background        copy ─► maps.snap.tmp ─fsync, rename─► maps.snap;
//!                           maps.log.old removed
//!  merges meanwhile         appended to the fresh maps.log
//! ```
//!
//! Open replays maps.log.old (when a crash left it) before maps.log. A
//! batch only assigns (an LPN's PPN, a VID's head) or drops a table's
//! map, so replaying maps.log.old over a snapshot that already holds it
//! ends in that same snapshot: every crash point opens to the same maps.
//! A compaction that failed leaves maps.log.old; the next one is then
//! written in place, under the lock, and removes it.
//!
//! A store on RADOS keeps the same snapshot and log bytes in objects and
//! follows the same rules, with a head object in place of the renames
//! (rados.rs).

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ndpdb_formats::codec::{Reader, Writer};
use ndpdb_formats::{Lpn, Ppn, TableId};
use ndpdb_link::command::{decode_map_delta, encode_map_delta};
use ndpdb_link::{Result, VidEntry};

use ndpdb_rados::Pool;

use super::rados::{RadosCompaction, RadosMaps};
use super::{image, io, Maps};

/// Persistence of [`Maps`] in a directory or in RADOS objects.
pub struct MapStore {
    medium: Medium,
    log_len: u64,
    snapshot_len: u64,
    /// A background compaction holds maps.log.old (on RADOS: the
    /// generation its snapshot will have).
    compacting: Option<u64>,
}

enum Medium {
    Dir { dir: PathBuf, log: File },
    Rados(RadosMaps),
}

/// A compaction whose log was set aside: [`Compaction::write`] turns the
/// copy of the maps into the snapshot (off the store's lock), and
/// [`MapStore::end_compaction`] records the outcome.
pub enum Compaction {
    Dir(PathBuf),
    Rados(RadosCompaction),
}

const LOG: &str = "maps.log";
const OLD_LOG: &str = "maps.log.old";
const SNAPSHOT: &str = "maps.snap";

const KIND_MERGE: u8 = 1;
const KIND_DROP: u8 = 2;

impl MapStore {
    /// Opens (or creates) the map files and returns the recovered maps.
    pub fn open(dir: &Path) -> Result<(MapStore, Maps)> {
        let snap_path = dir.join(SNAPSHOT);
        let mut maps = Maps::default();
        let mut snapshot_len = 0;
        let mut older_format = false;
        if snap_path.exists() {
            let snap = image::read(&snap_path)?;
            (maps, snapshot_len, older_format) = (snap.maps, snap.len, snap.older_format);
        }
        // A compaction that did not finish: its log goes first.
        let old_log = dir.join(OLD_LOG);
        let interrupted = old_log.exists();
        if interrupted {
            let bytes = fs::read(&old_log).map_err(io)?;
            replay_log(&bytes, &mut maps);
        }
        let mut log = open_log(&dir.join(LOG))?;
        let mut bytes = Vec::new();
        log.read_to_end(&mut bytes).map_err(io)?;
        let valid = replay_log(&bytes, &mut maps);
        if valid < bytes.len() {
            // Torn or corrupt tail: cut it so later batches follow valid ones.
            log.set_len(valid as u64).map_err(io)?;
            log.sync_all().map_err(io)?;
        }
        let mut store = MapStore {
            medium: Medium::Dir {
                dir: dir.to_path_buf(),
                log,
            },
            log_len: valid as u64,
            snapshot_len,
            compacting: None,
        };
        if older_format || interrupted {
            store.compact(&maps)?;
        }
        Ok((store, maps))
    }

    /// Opens (or creates) the map objects under `prefix` in `pool` and
    /// returns the recovered maps.
    pub fn open_rados(pool: Arc<Pool>, prefix: &str) -> Result<(MapStore, Maps)> {
        let opened = RadosMaps::open(pool, prefix, crate::store::STORE_FORMAT)?;
        let mut rados = opened.maps;
        let mut maps = Maps::default();
        let (mut snapshot_len, mut older_format) = (0, false);
        if let Some(bytes) = opened.snapshot {
            let snap = image::decode(&bytes)?;
            (maps, snapshot_len, older_format) = (snap.maps, snap.len, snap.older_format);
        }
        let mut valid = 0;
        for (i, bytes) in opened.logs.iter().enumerate() {
            valid = replay_log(bytes, &mut maps);
            if i + 1 == opened.logs.len() && valid < bytes.len() {
                rados.cut_log(valid as u64)?;
            }
        }
        let interrupted = rados.interrupted();
        let mut store = MapStore {
            medium: Medium::Rados(rados),
            log_len: valid as u64,
            snapshot_len,
            compacting: None,
        };
        if older_format || interrupted {
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
        match &mut self.medium {
            Medium::Dir { log, .. } => {
                log.write_all(w.as_slice()).map_err(io)?;
                log.sync_data().map_err(io)?;
            }
            Medium::Rados(r) => r.append(self.log_len, w.as_slice())?,
        }
        self.log_len += w.len() as u64;
        Ok(())
    }

    /// Whether the log has grown enough to fold it into a new snapshot
    /// (and no compaction is under way).
    pub fn wants_compaction(&self) -> bool {
        self.compacting.is_none() && self.log_len > (4 << 20).max(self.snapshot_len)
    }

    /// Writes `maps` as the new snapshot and empties the log, in place.
    pub fn compact(&mut self, maps: &Maps) -> Result<()> {
        let written = match &mut self.medium {
            Medium::Dir { dir, log } => {
                let written = write_snapshot(dir, maps)?;
                log.set_len(0).map_err(io)?;
                log.sync_all().map_err(io)?;
                written
            }
            Medium::Rados(r) => r.compact(maps)?,
        };
        self.log_len = 0;
        self.snapshot_len = written;
        Ok(())
    }

    /// Starts a compaction of the maps as they are now (`maps`, which
    /// hold every logged batch): the log is set aside and a fresh one
    /// takes the merges that follow. `None` when it was done in place
    /// instead (an earlier compaction failed and left its log).
    pub fn begin_compaction(&mut self, maps: &Maps) -> Result<Option<Compaction>> {
        let in_place = match &self.medium {
            Medium::Dir { dir, .. } => dir.join(OLD_LOG).exists(),
            Medium::Rados(r) => r.interrupted(),
        };
        if in_place {
            self.compact(maps)?;
            return Ok(None);
        }
        let (compaction, gen) = match &mut self.medium {
            Medium::Dir { dir, log } => {
                fs::rename(dir.join(LOG), dir.join(OLD_LOG)).map_err(io)?;
                let fresh = sync_dir(dir)
                    .and_then(|()| open_log(&dir.join(LOG)))
                    .and_then(|f| sync_dir(dir).map(|()| f));
                *log = match fresh {
                    Ok(f) => f,
                    Err(e) => {
                        // The log goes back: `log` still writes to it.
                        let _ = fs::remove_file(dir.join(LOG));
                        fs::rename(dir.join(OLD_LOG), dir.join(LOG)).map_err(io)?;
                        return Err(e);
                    }
                };
                (Compaction::Dir(dir.clone()), 0)
            }
            Medium::Rados(r) => {
                let job = r.begin_compaction()?;
                let gen = job.generation();
                (Compaction::Rados(job), gen)
            }
        };
        self.log_len = 0;
        self.compacting = Some(gen);
        Ok(Some(compaction))
    }

    /// Records how a background compaction ended (its snapshot's size).
    /// After a failure maps.log.old stays (on RADOS: the head names both
    /// logs): open replays it, and the next compaction is done in place.
    pub fn end_compaction(&mut self, outcome: &Result<u64>) {
        let gen = self.compacting.take();
        if let Ok(written) = outcome {
            self.snapshot_len = *written;
            if let (Medium::Rados(r), Some(gen)) = (&mut self.medium, gen) {
                r.end_compaction(gen, *written);
            }
        }
    }
}

impl Compaction {
    /// Writes `maps` (as they were when the log was set aside) as the
    /// snapshot and removes the log it replaces; the snapshot's size.
    pub fn write(self, maps: &Maps) -> Result<u64> {
        match self {
            Compaction::Dir(dir) => write_snapshot(&dir, maps),
            Compaction::Rados(job) => job.write(maps),
        }
    }
}

/// `maps` as maps.snap: written aside, fsync'd, renamed over the old
/// one; then maps.log.old, which it holds, is removed. The snapshot's
/// size.
fn write_snapshot(dir: &Path, maps: &Maps) -> Result<u64> {
    let tmp = dir.join("maps.snap.tmp");
    let written = image::write(&tmp, maps)?;
    fs::rename(&tmp, dir.join(SNAPSHOT)).map_err(io)?;
    sync_dir(dir)?;
    match fs::remove_file(dir.join(OLD_LOG)) {
        Ok(()) => sync_dir(dir)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(e)),
    }
    Ok(written)
}

fn open_log(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(io)
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io)
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

    /// Logs `n` merges (from `from` on) into `store` and `maps`.
    fn merge(store: &mut MapStore, maps: &mut Maps, from: u64, n: u64) {
        for i in from..from + n {
            let l2p = vec![(Lpn(i % 5), Ppn(i + 100))];
            let vids = vec![entry(1, i % 3, i), entry(2, i, i)];
            store.log_merge(&l2p, &vids).unwrap();
            maps.apply_merge(&l2p, &vids);
        }
    }

    /// Every crash point of a background compaction opens to the maps of
    /// every logged batch.
    #[test]
    fn a_background_compaction_is_safe_at_every_crash_point() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path();
        let (mut store, mut maps) = MapStore::open(path).unwrap();
        merge(&mut store, &mut maps, 0, 8);
        let compaction = store.begin_compaction(&maps).unwrap().unwrap();
        let copy = maps.clone();
        assert!(!store.wants_compaction(), "one compaction at a time");
        // Merges go on into the fresh log meanwhile.
        merge(&mut store, &mut maps, 8, 6);
        store.log_drop(TableId(2)).unwrap();
        maps.drop_table(TableId(2));
        merge(&mut store, &mut maps, 14, 2);
        let old_log = fs::read(path.join(OLD_LOG)).unwrap();

        // Crash before the snapshot was written: old snapshot (none),
        // set-aside log, fresh log.
        let saved = tempfile::tempdir().unwrap();
        for f in [LOG, OLD_LOG] {
            fs::copy(path.join(f), saved.path().join(f)).unwrap();
        }
        assert_eq!(MapStore::open(saved.path()).unwrap().1, maps);
        // That open folded the set-aside log in place.
        assert!(!saved.path().join(OLD_LOG).exists());
        assert_eq!(MapStore::open(saved.path()).unwrap().1, maps);

        // The snapshot written, the crash before the set-aside log was
        // removed: replaying it again changes nothing.
        let written = compaction.write(&copy).unwrap();
        store.end_compaction(&Ok(written));
        assert!(!path.join(OLD_LOG).exists());
        fs::write(path.join(OLD_LOG), &old_log).unwrap();
        assert_eq!(MapStore::open(path).unwrap().1, maps);
        // The compaction finished.
        assert_eq!(MapStore::open(path).unwrap().1, maps);
    }

    /// A background compaction that failed leaves its log aside; the next
    /// compaction is done in place and nothing is lost.
    #[test]
    fn a_failed_background_compaction_is_redone_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let (mut store, mut maps) = MapStore::open(dir.path()).unwrap();
        merge(&mut store, &mut maps, 0, 5);
        let compaction = store.begin_compaction(&maps).unwrap().unwrap();
        drop(compaction);
        store.end_compaction(&Err(ndpdb_link::LinkError::Io("disk full".into())));
        merge(&mut store, &mut maps, 5, 5);
        assert!(dir.path().join(OLD_LOG).exists());
        assert!(store.begin_compaction(&maps).unwrap().is_none());
        assert!(!dir.path().join(OLD_LOG).exists());
        merge(&mut store, &mut maps, 10, 3);
        drop(store);
        assert_eq!(MapStore::open(dir.path()).unwrap().1, maps);
    }
}
