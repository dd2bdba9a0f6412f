//! Sequences (`CREATE SEQUENCE`, SERIAL and identity columns): counters
//! outside transactions, as in PostgreSQL — a value `nextval` handed out
//! is never handed out again, even if its transaction rolls back.
//!
//! Persisted in `sequences.bin` (`"NDPS" | crc32 | len u64 | payload`,
//! replaced atomically like the catalog):
//!
//! ```text
//!  payload: n u32 | n × (name str | start i64 | increment i64 | min i64 |
//!           max i64 | cycle u8 | owner table u32 (0: none) | owner column u32 |
//!           last i64 | called u8)
//! ```
//!
//! `last` is durable before any value up to it is handed out: a `nextval`
//! past the stored `last` first stores `last` a batch ahead
//! ([`RESERVE`] values) and fsyncs. After a crash the sequence goes on
//! after the stored value — values reserved but never handed out are
//! skipped (PostgreSQL skips up to 32 for the same reason). Checkpoints
//! and DDL store the exact position.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use ndpdb_formats::codec::{Reader, Writer};
use ndpdb_formats::{SqlState, TableId};

use crate::error::{Error, Result};

/// Values reserved durably at a time.
pub const RESERVE: i64 = 1024;

const MAGIC: &[u8; 4] = b"NDPS";

/// A sequence's definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SequenceMeta {
    pub name: String,
    pub start: i64,
    pub increment: i64,
    pub min: i64,
    pub max: i64,
    pub cycle: bool,
    /// The column whose default it feeds (SERIAL, identity): dropped
    /// with its table.
    pub owner: Option<(TableId, usize)>,
}

#[derive(Clone, Debug)]
struct Seq {
    meta: SequenceMeta,
    /// The last value handed out (or `start` before the first, with
    /// `called` false).
    last: i64,
    called: bool,
    /// Values up to here may be handed out without storing again.
    stored: i64,
    /// Which sequence of its name this is ([`Incarnation`]).
    incarnation: Incarnation,
}

/// Tells apart the sequences one name has had in this process: a session
/// remembers `currval` per sequence, and a sequence dropped and made
/// again under the same name is another sequence (PostgreSQL's OIDs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Incarnation(u64);

impl Incarnation {
    fn fresh() -> Incarnation {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Incarnation(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

/// All sequences of a database.
pub struct Sequences {
    path: PathBuf,
    seqs: Mutex<BTreeMap<String, Seq>>,
}

fn undefined(name: &str) -> Error {
    Error::new(
        SqlState::UNDEFINED_TABLE,
        format!("relation \"{name}\" does not exist"),
    )
}

impl Sequences {
    pub fn open(dir: &Path) -> Result<Sequences> {
        let path = dir.join("sequences.bin");
        let mut seqs = BTreeMap::new();
        if path.exists() {
            let bytes = fs::read(&path)?;
            decode(&bytes, &mut seqs)
                .map_err(|e| Error::new(SqlState::DATA_CORRUPTED, format!("sequences: {e}")))?;
        }
        Ok(Sequences {
            path,
            seqs: Mutex::new(seqs),
        })
    }

    pub fn exists(&self, name: &str) -> bool {
        self.seqs.lock().contains_key(name)
    }

    /// The sequences' names, in order.
    pub fn names(&self) -> Vec<String> {
        self.seqs.lock().keys().cloned().collect()
    }

    pub fn get(&self, name: &str) -> Option<SequenceMeta> {
        self.seqs.lock().get(name).map(|s| s.meta.clone())
    }

    /// Which sequence `name` is now.
    pub fn incarnation(&self, name: &str) -> Option<Incarnation> {
        self.seqs.lock().get(name).map(|s| s.incarnation)
    }

    pub fn create(&self, meta: SequenceMeta) -> Result<()> {
        let mut seqs = self.seqs.lock();
        if seqs.contains_key(&meta.name) {
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{}\" already exists", meta.name),
            ));
        }
        let name = meta.name.clone();
        let start = meta.start;
        seqs.insert(
            name.clone(),
            Seq {
                meta,
                last: start,
                called: false,
                stored: start,
                incarnation: Incarnation::fresh(),
            },
        );
        if let Err(e) = self.store(&mut seqs, false) {
            seqs.remove(&name);
            return Err(e);
        }
        Ok(())
    }

    pub fn drop_sequence(&self, name: &str) -> Result<()> {
        let mut seqs = self.seqs.lock();
        let old = seqs.remove(name).ok_or_else(|| undefined(name))?;
        if let Err(e) = self.store(&mut seqs, false) {
            seqs.insert(name.to_string(), old);
            return Err(e);
        }
        Ok(())
    }

    /// Drops the sequences owned by columns of `table`.
    pub fn drop_owned_by(&self, table: TableId) -> Result<()> {
        let mut seqs = self.seqs.lock();
        let before = seqs.len();
        seqs.retain(|_, s| s.meta.owner.is_none_or(|(t, _)| t != table));
        if seqs.len() != before {
            self.store(&mut seqs, false)?;
        }
        Ok(())
    }

    /// A rewritten table's sequences: owner `from` becomes `to`, column
    /// positions as `moved` maps them (`None`: the column went, and so
    /// does its sequence).
    pub fn move_owned(
        &self,
        from: TableId,
        to: TableId,
        moved: &[(usize, Option<usize>)],
    ) -> Result<()> {
        let mut seqs = self.seqs.lock();
        let mut changed = false;
        seqs.retain(|_, s| match s.meta.owner {
            Some((t, c)) if t == from => {
                changed = true;
                match moved
                    .iter()
                    .find(|(old, _)| *old == c)
                    .and_then(|(_, n)| *n)
                {
                    Some(n) => {
                        s.meta.owner = Some((to, n));
                        true
                    }
                    None => false,
                }
            }
            _ => true,
        });
        if changed {
            self.store(&mut seqs, false)?;
        }
        Ok(())
    }

    /// `nextval(name)`.
    pub fn next(&self, name: &str) -> Result<(i64, Incarnation)> {
        let mut seqs = self.seqs.lock();
        let s = seqs.get_mut(name).ok_or_else(|| undefined(name))?;
        let m = &s.meta;
        let value = if !s.called {
            s.last
        } else {
            match s.last.checked_add(m.increment) {
                Some(v) if v >= m.min && v <= m.max => v,
                _ if m.cycle => {
                    if m.increment > 0 {
                        m.min
                    } else {
                        m.max
                    }
                }
                _ => {
                    return Err(Error::new(
                        SqlState::SEQUENCE_GENERATOR_LIMIT_EXCEEDED,
                        format!(
                            "nextval: reached {} value of sequence \"{name}\" ({})",
                            if m.increment > 0 {
                                "maximum"
                            } else {
                                "minimum"
                            },
                            if m.increment > 0 { m.max } else { m.min }
                        ),
                    ))
                }
            }
        };
        let beyond = if m.increment > 0 {
            value > s.stored
        } else {
            value < s.stored
        };
        let cycled = s.called && (value - s.last).signum() != m.increment.signum();
        s.last = value;
        s.called = true;
        let incarnation = s.incarnation;
        if beyond || cycled {
            self.store(&mut seqs, true)?;
        }
        Ok((value, incarnation))
    }

    /// `setval(name, value, called)`.
    pub fn set(&self, name: &str, value: i64, called: bool) -> Result<(i64, Incarnation)> {
        let mut seqs = self.seqs.lock();
        let s = seqs.get_mut(name).ok_or_else(|| undefined(name))?;
        if value < s.meta.min || value > s.meta.max {
            return Err(Error::new(
                SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
                format!(
                    "setval: value {value} is out of bounds for sequence \"{name}\" ({}..{})",
                    s.meta.min, s.meta.max
                ),
            ));
        }
        s.last = value;
        s.called = called;
        let incarnation = s.incarnation;
        self.store(&mut seqs, false)?;
        Ok((value, incarnation))
    }

    /// Stores every sequence's exact position (at a checkpoint).
    pub fn checkpoint(&self) -> Result<()> {
        let mut seqs = self.seqs.lock();
        if seqs.is_empty() {
            return Ok(());
        }
        self.store(&mut seqs, false)
    }

    /// Writes the file; with `reserve`, each sequence's stored position
    /// runs [`RESERVE`] values ahead of its last.
    fn store(&self, seqs: &mut BTreeMap<String, Seq>, reserve: bool) -> Result<()> {
        for s in seqs.values_mut() {
            s.stored = if reserve && s.called {
                let ahead = s.meta.increment.saturating_mul(RESERVE - 1);
                s.last.saturating_add(ahead).clamp(s.meta.min, s.meta.max)
            } else {
                s.last
            };
        }
        let mut p = Writer::new();
        p.u32(seqs.len() as u32);
        for s in seqs.values() {
            let m = &s.meta;
            p.str(&m.name)
                .i64(m.start)
                .i64(m.increment)
                .i64(m.min)
                .i64(m.max)
                .u8(m.cycle as u8)
                .u32(m.owner.map_or(0, |(t, _)| t.0))
                .u32(m.owner.map_or(0, |(_, c)| c as u32))
                .i64(s.stored)
                .u8((s.called || s.stored != s.last) as u8);
        }
        crate::storage::framed_file::write(&self.path, MAGIC, p.as_slice())
    }
}

fn decode(bytes: &[u8], out: &mut BTreeMap<String, Seq>) -> ndpdb_formats::Result<()> {
    let mut r = Reader::new(crate::storage::framed_file::payload(
        bytes,
        MAGIC,
        "sequences",
    )?);
    let n = r.count(50)?;
    for _ in 0..n {
        let name = r.str()?.to_string();
        let (start, increment, min, max) = (r.i64()?, r.i64()?, r.i64()?, r.i64()?);
        let cycle = r.u8()? != 0;
        let (table, column) = (r.u32()?, r.u32()?);
        let last = r.i64()?;
        let called = r.u8()? != 0;
        if increment == 0 || min > max {
            return Err(ndpdb_formats::Error::corrupted("bad sequence bounds"));
        }
        let meta = SequenceMeta {
            name: name.clone(),
            start,
            increment,
            min,
            max,
            cycle,
            owner: (table != 0).then_some((TableId(table), column as usize)),
        };
        out.insert(
            name,
            Seq {
                meta,
                last,
                called,
                stored: last,
                incarnation: Incarnation::fresh(),
            },
        );
    }
    r.finish("sequences")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(name: &str, increment: i64, max: i64, cycle: bool) -> SequenceMeta {
        SequenceMeta {
            name: name.into(),
            start: 1,
            increment,
            min: 1,
            max,
            cycle,
            owner: None,
        }
    }

    #[test]
    fn values_never_repeat_across_a_crash_and_continue_after_a_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = Sequences::open(dir.path()).unwrap();
            s.create(meta("a", 1, i64::MAX, false)).unwrap();
            assert_eq!((s.next("a").unwrap().0, s.next("a").unwrap().0), (1, 2));
            // No checkpoint: reopening is a crash.
        }
        let s = Sequences::open(dir.path()).unwrap();
        let after_crash = s.next("a").unwrap().0;
        assert!(
            after_crash > 2 && after_crash <= 2 + RESERVE,
            "{after_crash}"
        );
        s.checkpoint().unwrap();
        drop(s);
        let s = Sequences::open(dir.path()).unwrap();
        assert_eq!(s.next("a").unwrap().0, after_crash + 1);
    }

    #[test]
    fn bounds_cycle_and_setval_behave_as_in_postgresql() {
        let dir = tempfile::tempdir().unwrap();
        let s = Sequences::open(dir.path()).unwrap();
        s.create(meta("c", 2, 5, true)).unwrap();
        let got: Vec<i64> = (0..5).map(|_| s.next("c").unwrap().0).collect();
        assert_eq!(got, vec![1, 3, 5, 1, 3]);
        s.create(meta("d", 1, 2, false)).unwrap();
        s.next("d").unwrap();
        s.next("d").unwrap();
        assert_eq!(
            s.next("d").unwrap_err().code,
            SqlState::SEQUENCE_GENERATOR_LIMIT_EXCEEDED
        );
        s.set("d", 1, false).unwrap();
        assert_eq!(s.next("d").unwrap().0, 1);
        assert_eq!(
            s.set("d", 9, true).unwrap_err().code,
            SqlState::NUMERIC_VALUE_OUT_OF_RANGE
        );
        assert_eq!(s.next("nope").unwrap_err().code, SqlState::UNDEFINED_TABLE);
    }
}
