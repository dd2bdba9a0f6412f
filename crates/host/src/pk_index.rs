//! Primary-key index: encoded key → VID, kept in memory and written to
//! a file per table at checkpoints so that opening a database does not
//! read every head record.
//!
//! A key keeps its VID for life: a deleted key's chain ends in a tombstone,
//! and re-inserting the key continues that chain. An UPDATE that changes
//! the key is a delete of the old VID plus an insert under the new key
//! (the device never changes keys: update NDP refuses SETs of key
//! columns). So the index only grows, and the index of a checkpoint plus
//! the keys of the versions the WAL redoes after it is the index of the
//! recovered database — after dropping entries whose VID has no version
//! (keys of transactions that never committed).
//!
//! ```text
//!  dir/pk/<table id>.idx                    dir/pk/MANIFEST
//!  ┌──────────┬───────┬──────┬───────┐      ┌──────────┬────────────┬─────┐
//!  │ NDPPKIX2 │ table │ n    │ crc32 │      │ NDPPKMF1 │ checkpoint │ crc │
//!  ├──────────┴───────┴──────┴───────┤      └──────────┴────────────┴─────┘
//!  │ n × (u32 key length, key, u64 VID)│    the checkpoint (its next
//!  └──────────────────────────────────┘    transaction id) the files are
//!                                           current for
//! ```
//!
//! A checkpoint writes the files of indexes that gained keys since their
//! last write, then the manifest, then the WAL's checkpoint record. An
//! open trusts the files only when the manifest names the WAL's last
//! checkpoint; otherwise (a crash between the two, a missing or corrupt
//! file) it rebuilds the index from the head records, as before.

use std::fs::{self, File};
use std::hash::Hasher;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use hashbrown::HashTable;
use parking_lot::Mutex;
use rustc_hash::FxHasher;

use ndpdb_formats::codec::{Reader, Writer};
use ndpdb_formats::{Error, Result, TableId, TxId, Value, Vid};

const INDEX_MAGIC: &[u8; 8] = b"NDPPKIX2";
const MANIFEST_MAGIC: &[u8; 8] = b"NDPPKMF1";

/// The index: every key's bytes in one arena, a hash table of
/// (arena offset, key length, VID) over them — no allocation per key, so
/// an index of millions of keys loads from its file in one read.
#[derive(Default)]
pub struct PkIndex {
    inner: Mutex<Keys>,
    /// Keys were added since the index was last written.
    dirty: AtomicBool,
}

#[derive(Default)]
struct Keys {
    arena: Vec<u8>,
    table: HashTable<Slot>,
}

#[derive(Clone, Copy)]
struct Slot {
    off: u64,
    len: u32,
    vid: Vid,
}

fn hash(key: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(key);
    h.write_usize(key.len());
    h.finish()
}

/// The bytes of `s`'s key in `arena`.
fn key_at<'a>(arena: &'a [u8], s: &Slot) -> &'a [u8] {
    &arena[s.off as usize..s.off as usize + s.len as usize]
}

impl Keys {
    fn key(&self, s: &Slot) -> &[u8] {
        key_at(&self.arena, s)
    }

    fn find(&self, key: &[u8]) -> Option<Vid> {
        self.table
            .find(hash(key), |s| self.key(s) == key)
            .map(|s| s.vid)
    }

    /// Sets `key` → `vid`; returns the VID it had.
    fn set(&mut self, key: &[u8], vid: Vid) -> Option<Vid> {
        let h = hash(key);
        let Keys { arena, table } = self;
        if let Some(s) = table.find_mut(h, |s| key_at(arena, s) == key) {
            return Some(std::mem::replace(&mut s.vid, vid));
        }
        let slot = Slot {
            off: arena.len() as u64,
            len: key.len() as u32,
            vid,
        };
        arena.extend_from_slice(key);
        table.insert_unique(h, slot, |s| hash(key_at(arena, s)));
        None
    }
}

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
const INTEGRAL_TAG: u8 = 0x49;

impl PkIndex {
    pub fn get(&self, key: &[u8]) -> Option<Vid> {
        self.inner.lock().find(key)
    }

    /// Returns the key's VID, allocating one with `alloc` if the key is new.
    pub fn get_or_insert(&self, key: Vec<u8>, alloc: impl FnOnce() -> Vid) -> (Vid, bool) {
        let mut k = self.inner.lock();
        if let Some(v) = k.find(&key) {
            return (v, false);
        }
        let v = alloc();
        k.set(&key, v);
        self.dirty.store(true, Ordering::Release);
        (v, true)
    }

    pub fn insert(&self, key: Vec<u8>, vid: Vid) {
        if self.inner.lock().set(&key, vid) != Some(vid) {
            self.dirty.store(true, Ordering::Release);
        }
    }

    pub fn len(&self) -> usize {
        self.inner.lock().table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All entries (for consistency checks).
    pub fn entries(&self) -> Vec<(Vec<u8>, Vid)> {
        let k = self.inner.lock();
        k.table.iter().map(|s| (k.key(s).to_vec(), s.vid)).collect()
    }

    /// Drops the entries whose VID `has_version` rejects (their key bytes
    /// stay in the arena until the index is next loaded). The index is
    /// then dirty: its file still names those VIDs, which the allocator
    /// may hand out again, so the next checkpoint must rewrite it.
    pub fn retain_vids(&self, mut has_version: impl FnMut(Vid) -> bool) -> usize {
        let mut k = self.inner.lock();
        let before = k.table.len();
        k.table.retain(|s| has_version(s.vid));
        let dropped = before - k.table.len();
        if dropped > 0 {
            self.dirty.store(true, Ordering::Release);
        }
        dropped
    }

    /// Writes the index of `table` into `dir` if it gained keys since its
    /// last write; returns whether it wrote.
    pub fn save(&self, dir: &Path, table: TableId) -> Result<bool> {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(false);
        }
        let mut w = Writer::new();
        {
            let k = self.inner.lock();
            w.raw(INDEX_MAGIC).u32(table.0).u64(k.table.len() as u64);
            for s in k.table.iter() {
                w.bytes(k.key(s)).u64(s.vid.0);
            }
        }
        let crc = crc32fast::hash(w.as_slice());
        w.u32(crc);
        if let Err(e) = write_atomically(&index_path(dir, table), w.as_slice()) {
            self.dirty.store(true, Ordering::Release);
            return Err(e);
        }
        Ok(true)
    }

    /// Reads the index of `table` written by [`PkIndex::save`].
    pub fn load(dir: &Path, table: TableId) -> Result<PkIndex> {
        let bytes = fs::read(index_path(dir, table)).map_err(io)?;
        let body = checked_body(&bytes, INDEX_MAGIC)?;
        let mut r = Reader::new(body);
        if r.u32()? != table.0 {
            return Err(Error::corrupted("PK index file of another table"));
        }
        let n = r.u64()?;
        // Each entry takes at least 12 bytes (length and VID).
        if n > (r.remaining() / 12) as u64 {
            return Err(Error::corrupted("PK index entry count beyond the file"));
        }
        let mut keys = Keys {
            arena: Vec::with_capacity(r.remaining()),
            table: HashTable::with_capacity(n as usize),
        };
        for _ in 0..n {
            let key = r.bytes()?;
            let vid = Vid(r.u64()?);
            if keys.set(key, vid).is_some() {
                return Err(Error::corrupted("PK index file holds a key twice"));
            }
        }
        r.finish("PK index")?;
        Ok(PkIndex {
            inner: Mutex::new(keys),
            dirty: AtomicBool::new(false),
        })
    }
}

/// Where the index files of a database directory live.
pub fn index_dir(db_dir: &Path) -> PathBuf {
    db_dir.join("pk")
}

fn index_path(dir: &Path, table: TableId) -> PathBuf {
    dir.join(format!("{}.idx", table.0))
}

/// Records that the index files in `dir` are current for the checkpoint
/// whose next transaction id is `checkpoint`.
pub fn write_manifest(dir: &Path, checkpoint: TxId) -> Result<()> {
    let mut w = Writer::new();
    w.raw(MANIFEST_MAGIC).u64(checkpoint.0);
    let crc = crc32fast::hash(w.as_slice());
    w.u32(crc);
    write_atomically(&dir.join("MANIFEST"), w.as_slice())
}

/// The checkpoint the index files in `dir` are current for, if any.
pub fn read_manifest(dir: &Path) -> Result<Option<TxId>> {
    let bytes = match fs::read(dir.join("MANIFEST")) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    let mut r = Reader::new(checked_body(&bytes, MANIFEST_MAGIC)?);
    let t = TxId(r.u64()?);
    r.finish("PK index manifest")?;
    Ok(Some(t))
}

/// Deletes the index file of a dropped table.
pub fn remove(dir: &Path, table: TableId) -> Result<()> {
    match fs::remove_file(index_path(dir, table)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(e)),
    }
}

/// The bytes between the magic and the trailing checksum, checked.
fn checked_body<'a>(bytes: &'a [u8], magic: &[u8; 8]) -> Result<&'a [u8]> {
    if bytes.len() < magic.len() + 4 || &bytes[..magic.len()] != magic {
        return Err(Error::corrupted("PK index file: bad magic"));
    }
    let (data, crc) = bytes.split_at(bytes.len() - 4);
    if crc32fast::hash(data).to_le_bytes() != crc {
        return Err(Error::corrupted("PK index file: checksum mismatch"));
    }
    Ok(&data[magic.len()..])
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(io)?;
    let tmp = path.with_extension("tmp");
    {
        let mut f = File::create(&tmp).map_err(io)?;
        f.write_all(bytes).map_err(io)?;
        f.sync_all().map_err(io)?;
    }
    fs::rename(&tmp, path).map_err(io)?;
    File::open(dir).and_then(|d| d.sync_all()).map_err(io)
}

fn io(e: std::io::Error) -> Error {
    Error::sql(
        ndpdb_formats::SqlState::IO_ERROR,
        format!("PK index file: {e}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn saved_indexes_load_and_damage_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let pk = PkIndex::default();
        for i in 0..1000u64 {
            pk.insert(encode_key(&[&Value::BigInt(i as i64)]), Vid(i * 2));
        }
        assert!(pk.save(dir.path(), TableId(7)).unwrap());
        // Nothing new: nothing written.
        assert!(!pk.save(dir.path(), TableId(7)).unwrap());
        let back = PkIndex::load(dir.path(), TableId(7)).unwrap();
        let mut a = pk.entries();
        let mut b = back.entries();
        a.sort();
        b.sort();
        assert_eq!(a, b);
        assert!(PkIndex::load(dir.path(), TableId(8)).is_err());

        write_manifest(dir.path(), TxId(42)).unwrap();
        assert_eq!(read_manifest(dir.path()).unwrap(), Some(TxId(42)));

        let path = index_path(dir.path(), TableId(7));
        let mut bytes = fs::read(&path).unwrap();
        for at in [0, 9, bytes.len() / 2, bytes.len() - 1] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x10;
            fs::write(&path, &bad).unwrap();
            assert!(PkIndex::load(dir.path(), TableId(7)).is_err());
        }
        bytes.truncate(bytes.len() - 7);
        fs::write(&path, &bytes).unwrap();
        assert!(PkIndex::load(dir.path(), TableId(7)).is_err());
    }
}
