//! Primary-key index: encoded key → VID, checkpointed into files so that
//! opening a database reads neither every head record nor every key.
//!
//! A key keeps its VID for life: a deleted key's chain ends in a tombstone,
//! and re-inserting the key continues that chain. An UPDATE that changes
//! the key is a delete of the old VID plus an insert under the new key
//! (the device never changes keys: update NDP refuses SETs of key
//! columns). So the index only grows, and the index of a checkpoint plus
//! the keys of the versions the WAL redoes after it is the index of the
//! recovered database. Keys whose VID never got a version (an insert that
//! rolled back or never committed) stay, naming an empty VID: a lookup
//! finds no row there and an insert of the key fills it. Their VIDs are
//! never handed out again — an open starts the VID allocator past every
//! VID the index names ([`PkIndex::vid_bound`]).
//!
//! ```text
//!            lookups: delta first, then base
//!  ┌────────────────────────┐      ┌──────────────────────────────┐
//!  │ delta (memory, Keys)   │      │ base: <table>.idx, mapped    │
//!  │ keys since the base    │      │ static hash file (mapped.rs) │
//!  └──────────┬─────────────┘      └──────────────┬───────────────┘
//!   checkpoint│ small delta: <table>.delta         │ delta > base/4:
//!             └─────────────── merged into a new base (rename) ──┘
//! ```
//!
//! A checkpoint logs its WAL record, then (outside the checkpoint gate,
//! while commits go on) writes the files of indexes that gained keys
//! since their last write — the delta alone while it is small, else a new
//! base with every key — then the manifest naming that checkpoint. An
//! open trusts the files only when the manifest names the WAL's last
//! checkpoint; otherwise (a crash before the manifest, a missing or
//! corrupt file) it rebuilds the index from the head records. Every key
//! of a version the checkpoint covers was in the index before its record
//! was logged, so files written after it hold a superset of those keys:
//! the extra keys are those of the WAL tail, or name empty VIDs.

mod files;
mod keys;
mod mapped;
mod order;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, RwLock, RwLockReadGuard};
use rustc_hash::FxHashMap;

use ndpdb_formats::codec::Writer;
use ndpdb_formats::{DataType, Error, Result, TableId, Value, Vid};

use crate::catalog::IndexMeta;
use crate::storage::secondary_index::{Entry, SecondaryIndex};

pub use files::{read_manifest, write_manifest, Pace};
use keys::Keys;
use mapped::MappedIndex;
use order::KeyOrder;
pub use order::{decode_key, Tombstone};

/// The index of one table.
#[derive(Default)]
pub struct PkIndex {
    inner: RwLock<Parts>,
    /// Keys were added since the index was last written.
    dirty: AtomicBool,
    /// A lookup found the base file damaged: checkpoints write no manifest
    /// until the next open rebuilds the index from the heads.
    broken: AtomicBool,
    /// The keys in SQL order, once a key-prefix lookup asked for them
    /// ([`PkIndex::ordered`]); every key added later goes there too.
    order: OnceLock<KeyOrder>,
    /// Ordered entries dropped so far ([`PkIndex::forget_ordered`]).
    forgotten: AtomicU64,
    /// Held through a save: the delta file's state it reads and updates
    /// belongs to one save at a time.
    saving: Mutex<()>,
}

#[derive(Default)]
struct Parts {
    base: Option<Arc<MappedIndex>>,
    delta: Keys,
    /// The delta may give a base key another VID: set when a key already
    /// indexed is given another VID (the delta's arena mark then), and
    /// when the files load (a delta file may shadow its base). A merge
    /// looks the delta's keys up in the base only while it is set.
    shadow_mark: Option<u64>,
    /// The delta file holds the delta's entries below this arena mark,
    /// in its first `delta_file_len` bytes (0: no file yet).
    delta_written: u64,
    delta_file_len: u64,
}

impl Parts {
    fn find(&self, key: &[u8]) -> Result<Option<Vid>> {
        if let Some(v) = self.delta.find(key) {
            return Ok(Some(v));
        }
        match &self.base {
            Some(b) => b.get(key),
            None => Ok(None),
        }
    }
}

/// A delta at least this large (and a quarter of its base) is merged
/// into a new base at a checkpoint.
const MERGE_MIN_KEYS: u64 = 4096;

/// Encodes key values so that equal SQL values give equal bytes:
/// integers (and NUMERICs with an integral value that fits) as 9 bytes,
/// everything else as [`Value::key_bytes`] writes it.
pub fn encode_key(values: &[&Value]) -> Vec<u8> {
    let mut w = Writer::new();
    for v in values {
        let integral = match v {
            Value::Int(x) => Some(*x as i64),
            Value::BigInt(x) => Some(*x),
            Value::Numeric(d) => {
                let d = d.normalized();
                (d.scale == 0)
                    .then(|| i64::try_from(d.mantissa).ok())
                    .flatten()
            }
            _ => None,
        };
        match integral {
            Some(x) => {
                w.u8(INTEGRAL_TAG).u64(x as u64);
            }
            None => v.key_bytes(&mut w),
        }
    }
    w.into_inner()
}

/// Not a tag [`Value::key_bytes`] writes.
pub(crate) const INTEGRAL_TAG: u8 = 0x49;

impl PkIndex {
    pub fn get(&self, key: &[u8]) -> Result<Option<Vid>> {
        self.noting_damage(self.inner.read().find(key))
    }

    /// Passes `r` on, remembering damage it reports.
    fn noting_damage<T>(&self, r: Result<T>) -> Result<T> {
        if matches!(r, Err(Error::Corrupted(_))) {
            self.broken.store(true, Ordering::Release);
        }
        r
    }

    /// Whether a lookup found the index's files damaged.
    pub fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Acquire)
    }

    /// Returns the key's VID, allocating one with `alloc` if the key is new.
    pub fn get_or_insert(&self, key: &[u8], alloc: impl FnOnce() -> Vid) -> Result<(Vid, bool)> {
        let mut p = self.inner.write();
        if let Some(v) = self.noting_damage(p.find(key))? {
            return Ok((v, false));
        }
        let v = alloc();
        p.delta.set(key, v);
        self.dirty.store(true, Ordering::Release);
        self.order_add(key, v)?;
        Ok((v, true))
    }

    /// How many ordered entries were dropped so far: an insert that
    /// reads it before [`PkIndex::get_or_insert`] and sees it changed
    /// once it holds the tuple's lock puts its entry back.
    pub fn forgotten(&self) -> u64 {
        self.forgotten.load(Ordering::Acquire)
    }

    /// Drops `entry` from the ordered index when `still_dead` holds,
    /// under the lock inserts take (a key-order read passed a tuple dead
    /// to every snapshot, and holds the tuple's lock).
    pub fn forget_ordered(&self, entry: &Entry, still_dead: impl FnOnce() -> bool) -> bool {
        let _p = self.inner.write();
        let Some(o) = self.order.get() else {
            return false;
        };
        let dropped = still_dead() && o.index.remove(entry);
        if dropped {
            o.tombstones.write().remove(&entry.1);
            self.forgotten.fetch_add(1, Ordering::AcqRel);
        }
        dropped
    }

    /// The tombstone a key-order read last found at `vid`'s head, if any
    /// (compare it with the head before trusting it).
    pub fn tombstone(&self, vid: Vid) -> Option<Tombstone> {
        self.order.get()?.tombstones.read().get(&vid).copied()
    }

    /// The noted tombstones under one read lock, for a batch of lookups
    /// (`None` before the ordered index is built). Taken before the
    /// ordered index's own lock when both are held.
    pub fn noted_tombstones(&self) -> Option<RwLockReadGuard<'_, FxHashMap<Vid, Tombstone>>> {
        Some(self.order.get()?.tombstones.read())
    }

    /// Notes that `vid`'s head is a tombstone (a key-order read found it).
    pub fn note_tombstone(&self, vid: Vid, t: Tombstone) {
        if let Some(o) = self.order.get() {
            o.tombstones.write().insert(vid, t);
        }
    }

    /// Puts `key`'s entry for `vid` back into the ordered index if built
    /// (an insert holding the tuple's lock: a re-inserted key, or one
    /// whose entry a read may have dropped since `get_or_insert`).
    pub fn restore_ordered(&self, key: &[u8], vid: Vid) -> Result<()> {
        let _p = self.inner.write();
        self.order_add(key, vid)
    }

    pub fn insert(&self, key: Vec<u8>, vid: Vid) -> Result<()> {
        let mut p = self.inner.write();
        let had = self.noting_damage(p.find(&key))?;
        if had != Some(vid) {
            if had.is_some() {
                p.shadow_mark = Some(p.delta.mark());
            }
            p.delta.set(&key, vid);
            self.dirty.store(true, Ordering::Release);
            self.order_add(&key, vid)?;
        }
        Ok(())
    }

    /// Adds a key to the ordered index, if built (called under the write
    /// lock of `inner`, so a build sees a key either in the index or here).
    fn order_add(&self, key: &[u8], vid: Vid) -> Result<()> {
        match self.order.get() {
            Some(o) => o.add(key, vid),
            None => Ok(()),
        }
    }

    /// The keys in SQL order as an index named `name` over the key
    /// columns `columns` (of types `types`): built from every key on the
    /// first call, while no key is added.
    pub fn ordered(
        &self,
        name: &str,
        columns: &[usize],
        types: &[DataType],
    ) -> Result<Arc<SecondaryIndex>> {
        if let Some(o) = self.order.get() {
            return Ok(o.index.clone());
        }
        let p = self.inner.write();
        if let Some(o) = self.order.get() {
            return Ok(o.index.clone());
        }
        let meta = IndexMeta {
            name: name.to_string(),
            columns: columns.to_vec(),
            unique: false,
            constraint: false,
        };
        let order = KeyOrder::new(meta, types.to_vec());
        let mut keys = Vec::with_capacity(p.delta.len());
        let mut failed = None;
        let mut push = |k: &[u8], v: Vid| match order.decode(k) {
            Ok(key) => keys.push((key, v)),
            Err(e) => failed = Some(e),
        };
        if let Some(b) = &p.base {
            self.noting_damage(b.for_each(|k, v| {
                if p.delta.find(k).is_none() {
                    push(k, v)
                }
            }))?;
        }
        p.delta.iter().for_each(|(k, v)| push(k, v));
        if let Some(e) = failed {
            return self.noting_damage(Err(e));
        }
        order.extend(keys);
        let index = order.index.clone();
        // Only this call sets it: the write lock is held.
        let _ = self.order.set(order);
        Ok(index)
    }

    /// The ordered index, if a lookup has built it.
    pub fn ordered_if_built(&self) -> Option<&Arc<SecondaryIndex>> {
        self.order.get().map(|o| &o.index)
    }

    /// One past the largest VID the index names: the VID allocator of its
    /// table starts at or past it.
    pub fn vid_bound(&self) -> u64 {
        let p = self.inner.read();
        let base = p.base.as_ref().map_or(0, |b| b.vid_bound());
        base.max(p.delta.vid_bound())
    }

    /// Keys in the index (a key the delta gave another VID counts twice).
    pub fn len(&self) -> u64 {
        let p = self.inner.read();
        p.base.as_ref().map_or(0, |b| b.len()) + p.delta.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keys in the mapped base file (the rest are in memory).
    pub fn base_len(&self) -> u64 {
        self.inner.read().base.as_ref().map_or(0, |b| b.len())
    }

    /// All entries (for consistency checks).
    pub fn entries(&self) -> Result<Vec<(Vec<u8>, Vid)>> {
        let p = self.inner.read();
        let mut out: Vec<(Vec<u8>, Vid)> = p.delta.iter().map(|(k, v)| (k.to_vec(), v)).collect();
        if let Some(b) = &p.base {
            self.noting_damage(b.for_each(|k, v| {
                if p.delta.find(k).is_none() {
                    out.push((k.to_vec(), v));
                }
            }))?;
        }
        Ok(out)
    }

    /// Writes the index of `table` into `dir` if it gained keys since its
    /// last write; returns whether it wrote. Lookups go on meanwhile, and
    /// so do inserts unless a new base is being mapped in.
    pub fn save(&self, dir: &Path, table: TableId, pace: Pace<'_>) -> Result<bool> {
        let _one = self.saving.lock();
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(false);
        }
        let written = self.write_files(dir, table, pace);
        let written = self.noting_damage(written);
        if written.is_err() {
            self.dirty.store(true, Ordering::Release);
        }
        written.map(|()| true)
    }

    fn write_files(&self, dir: &Path, table: TableId, pace: Pace<'_>) -> Result<()> {
        let (base, delta, mark, shadows) = {
            let p = self.inner.read();
            let base_len = p.base.as_ref().map_or(0, |b| b.len());
            if (p.delta.len() as u64) < MERGE_MIN_KEYS.max(base_len / 4) {
                // A small delta: the entries the file lacks are copied
                // under the lock, encoded and written unlocked (encoding
                // all of ORDER-LINE's delta under it held inserts back
                // for 30–200 ms).
                let (written, file_len) = (p.delta_written, p.delta_file_len);
                let new = p.delta.since(written);
                let mark = p.delta.mark();
                drop(p);
                return self.write_delta(dir, table, written, file_len, &new, mark);
            }
            // A merge reads a copy while inserts go on.
            let shadows = p.shadow_mark.is_some();
            (p.base.clone(), p.delta.clone(), p.delta.mark(), shadows)
        };
        let path = base_path(dir, table);
        // The writer visits the entries three times. A key in both the
        // base and the delta (given another VID since the base: rare, as
        // keys keep their VIDs) is written once, from the delta. Looking
        // every base key up in the delta is most of a merge's work, so it
        // is done only when a look at the delta's keys (the smaller side)
        // in the base finds one, and that look only when the delta may
        // shadow the base at all (`shadow_mark`).
        let mut overlap = false;
        if let (Some(b), true) = (&base, shadows) {
            for (k, _) in delta.iter() {
                if b.get(k)?.is_some() {
                    overlap = true;
                    break;
                }
            }
        }
        mapped::write(&path, table, pace, &|f| {
            match &base {
                Some(b) if overlap => b.for_each(|k, v| {
                    if delta.find(k).is_none() {
                        f(k, v)
                    }
                })?,
                Some(b) => b.for_each(|k, v| f(k, v))?,
                None => {}
            }
            delta.iter().for_each(|(k, v)| f(k, v));
            Ok(())
        })?;
        // The new base holds the delta file's keys too.
        files::remove_if_present(&delta_path(dir, table))?;
        let new_base = Arc::new(MappedIndex::open(&path, table)?);
        let mut p = self.inner.write();
        p.base = Some(new_base);
        p.delta.retain_since(mark);
        (p.delta_written, p.delta_file_len) = (0, 0);
        // A key given another VID after the copy was taken may shadow
        // the new base; one before it was written from the delta.
        p.shadow_mark = p.shadow_mark.filter(|m| *m >= mark).map(|_| 0);
        if !p.delta.is_empty() {
            self.dirty.store(true, Ordering::Release);
        }
        Ok(())
    }

    /// Writes the delta entries `new` (those at or past arena mark
    /// `written`, up to `mark`): a whole new delta file when none is
    /// written yet, else a segment appended to the file's `file_len`
    /// bytes (files.rs).
    fn write_delta(
        &self,
        dir: &Path,
        table: TableId,
        written: u64,
        file_len: u64,
        new: &Keys,
        mark: u64,
    ) -> Result<()> {
        if new.is_empty() {
            return Ok(());
        }
        let path = delta_path(dir, table);
        let bytes = files::encode_delta(table, new.iter());
        let len = if file_len == 0 {
            files::write_atomically(&path, &bytes)?;
            bytes.len() as u64
        } else {
            files::append_segment(&path, file_len, &bytes)?
        };
        // Saves run one at a time (`saving`), and only a save merges:
        // the arena is still the one `written` and `mark` were taken in.
        let mut p = self.inner.write();
        debug_assert_eq!(p.delta_written, written);
        (p.delta_written, p.delta_file_len) = (mark, len);
        Ok(())
    }

    /// Reads the index of `table` the last checkpoint wrote: maps its base
    /// and loads its delta.
    pub fn load(dir: &Path, table: TableId) -> Result<PkIndex> {
        let mut parts = Parts::default();
        let base = base_path(dir, table);
        let delta = delta_path(dir, table);
        let (mut found, mut legacy) = (false, false);
        if base.exists() {
            found = true;
            match MappedIndex::open(&base, table) {
                Ok(m) => parts.base = Some(Arc::new(m)),
                // An index of an earlier version: one whole-index delta.
                Err(e) => {
                    let bytes = std::fs::read(&base).map_err(files::io)?;
                    if !bytes.starts_with(files::DELTA_MAGIC) {
                        return Err(e);
                    }
                    load_delta(&bytes, table, &mut parts.delta)?;
                    legacy = true;
                }
            }
        }
        if delta.exists() {
            found = true;
            let bytes = std::fs::read(&delta).map_err(files::io)?;
            load_delta(&bytes, table, &mut parts.delta)?;
            (parts.delta_written, parts.delta_file_len) = (parts.delta.mark(), bytes.len() as u64);
        }
        if !found {
            return Err(Error::corrupted(format!(
                "no PK index file for table {}",
                table.0
            )));
        }
        if parts.base.is_some() && !parts.delta.is_empty() {
            parts.shadow_mark = Some(0);
        }
        Ok(PkIndex {
            inner: RwLock::new(parts),
            // The next checkpoint writes it in the current format.
            dirty: AtomicBool::new(legacy),
            ..PkIndex::default()
        })
    }
}

/// Loads a delta file: a later segment's entry for a key overrides an
/// earlier one's; one segment holds a key once.
fn load_delta(bytes: &[u8], table: TableId, keys: &mut Keys) -> Result<()> {
    let mut segment_start = keys.mark();
    let mut current = 0;
    files::decode_delta(bytes, table, |k, v, segment| {
        if segment != current {
            (current, segment_start) = (segment, keys.mark());
        }
        if keys.offset(k).is_some_and(|o| o >= segment_start) {
            return Err(Error::corrupted("PK index file holds a key twice"));
        }
        keys.set(k, v);
        Ok(())
    })
}

/// Where the index files of a database directory live.
pub fn index_dir(db_dir: &Path) -> PathBuf {
    db_dir.join("pk")
}

fn base_path(dir: &Path, table: TableId) -> PathBuf {
    dir.join(format!("{}.idx", table.0))
}

fn delta_path(dir: &Path, table: TableId) -> PathBuf {
    dir.join(format!("{}.delta", table.0))
}

/// Deletes the index files of a dropped table.
pub fn remove(dir: &Path, table: TableId) -> Result<()> {
    files::remove_if_present(&base_path(dir, table))?;
    files::remove_if_present(&delta_path(dir, table))
}

#[cfg(test)]
mod tests {
    use super::*;

    use ndpdb_formats::TxId;

    #[test]
    fn equal_sql_values_give_equal_keys() {
        use ndpdb_formats::Decimal;
        let k = |v: Value| encode_key(&[&v]);
        let five = k(Value::BigInt(5));
        assert_eq!(k(Value::Int(5)), five);
        assert_eq!(k(Value::Numeric(Decimal::new(500, 2))), five);
        assert_eq!(five.len(), 9);
        assert_ne!(k(Value::Numeric(Decimal::new(55, 1))), five);
        assert_ne!(k(Value::BigInt(-5)), five);
        assert_eq!(
            k(Value::Numeric(Decimal::new(55, 1))),
            k(Value::Numeric(Decimal::new(550, 2)))
        );
        // Beyond i64: the decimal form, still one encoding per value.
        let big = Decimal::new(i64::MAX as i128 * 10, 0);
        assert_eq!(
            k(Value::Numeric(big)),
            k(Value::Numeric(Decimal::new(i64::MAX as i128 * 100, 1)))
        );
        assert_ne!(k(Value::Text("5".into())), five);
        assert_ne!(
            encode_key(&[&Value::Int(1), &Value::Int(23)]),
            encode_key(&[&Value::Int(12), &Value::Int(3)])
        );
    }

    fn sorted(pk: &PkIndex) -> Vec<(Vec<u8>, Vid)> {
        let mut e = pk.entries().unwrap();
        e.sort();
        e
    }

    fn key(i: u64) -> Vec<u8> {
        encode_key(&[&Value::BigInt(i as i64)])
    }

    #[test]
    fn small_deltas_are_written_alone_and_large_ones_merged_into_the_base() {
        let dir = tempfile::tempdir().unwrap();
        let t = TableId(7);
        let pk = PkIndex::default();
        for i in 0..10_000u64 {
            pk.insert(key(i), Vid(i * 2)).unwrap();
        }
        assert!(pk.save(dir.path(), t, Pace::DiskSpeed).unwrap());
        // Nothing new: nothing written.
        assert!(!pk.save(dir.path(), t, Pace::DiskSpeed).unwrap());
        assert_eq!(pk.base_len(), 10_000);
        let back = PkIndex::load(dir.path(), t).unwrap();
        assert_eq!((back.base_len(), sorted(&back)), (10_000, sorted(&pk)));
        assert!(PkIndex::load(dir.path(), TableId(8)).is_err());

        // A few more keys: a delta file beside the base.
        for i in 10_000..10_100u64 {
            assert_eq!(
                back.get_or_insert(&key(i), || Vid(i * 2)).unwrap(),
                (Vid(i * 2), true)
            );
        }
        assert_eq!(
            back.get_or_insert(&key(5), || unreachable!()).unwrap(),
            (Vid(10), false)
        );
        assert!(back.save(dir.path(), t, Pace::DiskSpeed).unwrap());
        assert!(dir.path().join("7.delta").exists());
        let again = PkIndex::load(dir.path(), t).unwrap();
        assert_eq!((again.base_len(), sorted(&again).len()), (10_000, 10_100));
        assert_eq!(sorted(&again), sorted(&back));
        assert_eq!(again.vid_bound(), 20_199);

        // Many more: merged, the delta file is gone.
        for i in 10_100..15_000u64 {
            again.insert(key(i), Vid(i * 2)).unwrap();
        }
        assert!(again.save(dir.path(), t, Pace::DiskSpeed).unwrap());
        assert!(!dir.path().join("7.delta").exists());
        assert_eq!(again.base_len(), 15_000);
        let merged = PkIndex::load(dir.path(), t).unwrap();
        assert_eq!(sorted(&merged), sorted(&again));
        assert_eq!(merged.get(&key(14_999)).unwrap(), Some(Vid(29_998)));
        assert_eq!(merged.get(&key(15_000)).unwrap(), None);

        write_manifest(dir.path(), TxId(42)).unwrap();
        assert_eq!(read_manifest(dir.path()).unwrap(), Some(TxId(42)));

        // A merge whose delta gives a base key another VID writes the
        // key once, with the delta's VID.
        for i in 14_000..20_000u64 {
            merged
                .insert(key(i), Vid(i * 2 + u64::from(i == 14_500)))
                .unwrap();
        }
        assert!(merged.save(dir.path(), t, Pace::DiskSpeed).unwrap());
        assert!(!dir.path().join("7.delta").exists());
        assert_eq!(merged.base_len(), 20_000);
        let remerged = PkIndex::load(dir.path(), t).unwrap();
        assert_eq!(sorted(&remerged), sorted(&merged));
        assert_eq!(sorted(&remerged).len(), 20_000);
        assert_eq!(remerged.get(&key(14_500)).unwrap(), Some(Vid(29_001)));
        assert_eq!(remerged.get(&key(14_499)).unwrap(), Some(Vid(28_998)));
    }

    /// Each checkpoint appends the keys it added to the delta file, not
    /// the whole delta again; a later segment's VID for a key wins; bytes
    /// a failed append left are cut off by the next one; a torn last
    /// segment fails the load (the index is then rebuilt from the heads).
    #[test]
    fn a_checkpoint_appends_the_keys_it_added_to_the_delta_file() {
        let dir = tempfile::tempdir().unwrap();
        let t = TableId(3);
        let path = delta_path(dir.path(), t);
        let pk = PkIndex::default();
        for i in 0..20_000u64 {
            pk.insert(key(i), Vid(i)).unwrap();
        }
        assert!(pk.save(dir.path(), t, Pace::DiskSpeed).unwrap());
        assert!(!path.exists());
        let file_len = || std::fs::metadata(&path).unwrap().len();
        for i in 20_000..21_000u64 {
            pk.insert(key(i), Vid(i)).unwrap();
        }
        assert!(pk.save(dir.path(), t, Pace::DiskSpeed).unwrap());
        let first = file_len();
        for i in 21_000..21_010u64 {
            pk.insert(key(i), Vid(i)).unwrap();
        }
        // A delta key and a base key given other VIDs.
        pk.insert(key(20_500), Vid(90_000)).unwrap();
        pk.insert(key(7), Vid(90_001)).unwrap();
        assert!(pk.save(dir.path(), t, Pace::DiskSpeed).unwrap());
        let second = file_len();
        assert!(
            second > first && second - first < first / 20,
            "the file grew from {first} to {second} bytes for 12 entries"
        );
        let back = PkIndex::load(dir.path(), t).unwrap();
        assert_eq!(sorted(&back), sorted(&pk));
        assert_eq!(back.get(&key(20_500)).unwrap(), Some(Vid(90_000)));
        assert_eq!(back.get(&key(7)).unwrap(), Some(Vid(90_001)));
        assert_eq!(back.get(&key(21_009)).unwrap(), Some(Vid(21_009)));

        // Bytes of a failed append after the segments: the next append
        // cuts them off.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, b"NDPPKIX2 half a segment").unwrap();
        drop(f);
        assert!(PkIndex::load(dir.path(), t).is_err());
        back.insert(key(30_000), Vid(30_000)).unwrap();
        assert!(back.save(dir.path(), t, Pace::DiskSpeed).unwrap());
        let again = PkIndex::load(dir.path(), t).unwrap();
        assert_eq!(sorted(&again), sorted(&back));
        assert_eq!(again.get(&key(30_000)).unwrap(), Some(Vid(30_000)));

        // A torn last segment.
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 9]).unwrap();
        assert!(PkIndex::load(dir.path(), t).is_err());
    }

    #[test]
    fn an_index_of_the_earlier_format_loads_as_a_delta() {
        let dir = tempfile::tempdir().unwrap();
        let keys: Vec<_> = (0..100u64).map(|i| (key(i), Vid(i))).collect();
        let bytes = files::encode_delta(TableId(2), keys.iter().map(|(k, v)| (&k[..], *v)));
        std::fs::write(dir.path().join("2.idx"), &bytes).unwrap();
        let pk = PkIndex::load(dir.path(), TableId(2)).unwrap();
        let mut want = keys.clone();
        want.sort();
        assert_eq!((pk.base_len(), sorted(&pk)), (0, want));
    }

    #[test]
    fn damaged_delta_files_are_detected() {
        let dir = tempfile::tempdir().unwrap();
        let pk = PkIndex::default();
        for i in 0..100u64 {
            pk.insert(key(i), Vid(i)).unwrap();
        }
        assert!(pk.save(dir.path(), TableId(7), Pace::DiskSpeed).unwrap());
        let path = delta_path(dir.path(), TableId(7));
        let mut bytes = std::fs::read(&path).unwrap();
        for at in [0, 9, bytes.len() / 2, bytes.len() - 1] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x10;
            std::fs::write(&path, &bad).unwrap();
            assert!(PkIndex::load(dir.path(), TableId(7)).is_err());
        }
        bytes.truncate(bytes.len() - 7);
        std::fs::write(&path, &bytes).unwrap();
        assert!(PkIndex::load(dir.path(), TableId(7)).is_err());
    }
}
