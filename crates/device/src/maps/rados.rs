//! The maps' snapshot and merge log in RADOS objects, with the same
//! recovery rules as in a directory (store.rs): a snapshot, then logs
//! replayed in order up to the first torn or corrupt batch.
//!
//! ```text
//!  PREFIX.head            "NDH1" │ format u32 │ snapshot gen u64 │ snapshot len u64
//!                         │ chunks u32 │ logs u32 │ log gen u64 × logs │ crc32     (LE)
//!  PREFIX.maps.snap.G.I   the snapshot of generation G, in chunks of 16 MiB
//!  PREFIX.maps.log.G      the merge log of generation G: { len u32 │ crc32 u32 │ batch }*
//! ```
//!
//! The head names what is current; it is replaced whole (`write_full`
//! is atomic), which is the commit point a rename is in a directory.
//! Snapshot G holds every batch of the logs before G. A compaction:
//!
//! ```text
//!  under the store's lock   head: logs [.., G] (a fresh log G takes the merges)
//!  in the background        snapshot chunks PREFIX.maps.snap.G.* written;
//!                           head: snapshot G, logs [G]; older logs and snapshots removed
//! ```
//!
//! A crash before the second head write leaves logs [.., G] over the old
//! snapshot: open replays them all (batches only assign, so replaying is
//! idempotent) and compacts in place, as a directory's maps.log.old is.
//! A crash after it leaves unreferenced objects, removed by the next
//! compaction. Each batch is one RADOS write, all or nothing; the crc
//! frames still guard against a log object damaged some other way.
//!
//! One device writes a store at a time; nothing here fences a second
//! one (the host attaches one device per store).

use ndpdb_formats::codec::{Reader, Writer};
use ndpdb_link::{LinkError, Result};
use ndpdb_rados::{Error as RadosError, Pool};

use super::{image, Maps};
use crate::store::link_err;

const HEAD_MAGIC: &[u8; 4] = b"NDH1";
/// Bytes per snapshot object.
const SNAPSHOT_CHUNK: usize = 16 << 20;

/// What the head object records.
#[derive(Clone, Debug, Default, PartialEq)]
struct Head {
    format: u32,
    /// 0: no snapshot yet.
    snapshot_gen: u64,
    snapshot_len: u64,
    chunks: u32,
    /// Logs to replay after the snapshot, oldest first; the last takes
    /// new batches.
    logs: Vec<u64>,
}

impl Head {
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.raw(HEAD_MAGIC)
            .u32(self.format)
            .u64(self.snapshot_gen)
            .u64(self.snapshot_len)
            .u32(self.chunks)
            .u32(self.logs.len() as u32);
        for g in &self.logs {
            w.u64(*g);
        }
        let crc = crc32fast::hash(w.as_slice());
        w.u32(crc);
        w.as_slice().to_vec()
    }

    fn decode(bytes: &[u8]) -> Result<Head> {
        let bad = |what: &str| LinkError::Corrupted(format!("map store head: {what}"));
        if bytes.len() < 8 || &bytes[..4] != HEAD_MAGIC {
            return Err(bad("bad magic"));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        if crc32fast::hash(body) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
            return Err(bad("checksum mismatch"));
        }
        let mut r = Reader::new(&body[4..]);
        let f = |e: ndpdb_formats::Error| bad(&e.to_string());
        let mut head = Head {
            format: r.u32().map_err(f)?,
            snapshot_gen: r.u64().map_err(f)?,
            snapshot_len: r.u64().map_err(f)?,
            chunks: r.u32().map_err(f)?,
            logs: Vec::new(),
        };
        let n = r.u32().map_err(f)?;
        for _ in 0..n {
            head.logs.push(r.u64().map_err(f)?);
        }
        r.finish("map store head").map_err(f)?;
        if head.logs.is_empty() || head.logs.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad("log generations out of order"));
        }
        Ok(head)
    }
}

/// A store's map objects.
pub struct RadosMaps {
    pool: std::sync::Arc<Pool>,
    prefix: String,
    head: Head,
}

/// What [`RadosMaps::open`] found.
pub struct Opened {
    pub maps: RadosMaps,
    /// The snapshot's bytes, if there is one.
    pub snapshot: Option<Vec<u8>>,
    /// Each log's bytes, oldest first.
    pub logs: Vec<Vec<u8>>,
}

/// A background compaction's part (see the module docs).
pub struct RadosCompaction {
    pool: std::sync::Arc<Pool>,
    prefix: String,
    /// The head to write once the snapshot is there.
    head: Head,
    /// Logs and the snapshot the new head no longer names.
    old_logs: Vec<u64>,
    old_snapshot: (u64, u32),
}

impl RadosMaps {
    /// Opens the map objects under `prefix` (a new store gets a head of
    /// `format` and an empty log 1).
    pub fn open(pool: std::sync::Arc<Pool>, prefix: &str, format: u32) -> Result<Opened> {
        let name = format!("{prefix}.head");
        let head = match pool.read_all(&name) {
            Ok(bytes) => Head::decode(&bytes)?,
            Err(RadosError::NotFound(_)) => {
                let head = Head {
                    format,
                    logs: vec![1],
                    ..Head::default()
                };
                pool.write_full(&name, &head.encode()).map_err(link_err)?;
                head
            }
            Err(e) => return Err(link_err(e)),
        };
        if head.format != format {
            return Err(LinkError::Unsupported(format!(
                "the device store {prefix} in pool {} has format {}; this build reads format {format}",
                pool.name(),
                head.format
            )));
        }
        let maps = RadosMaps {
            pool,
            prefix: prefix.to_string(),
            head,
        };
        let snapshot = match maps.head.snapshot_gen {
            0 => None,
            g => Some(maps.read_snapshot(g, maps.head.chunks, maps.head.snapshot_len)?),
        };
        let logs = maps
            .head
            .logs
            .iter()
            .map(|&g| match maps.pool.read_all(&maps.log_name(g)) {
                Ok(bytes) => Ok(bytes),
                Err(RadosError::NotFound(_)) => Ok(Vec::new()),
                Err(e) => Err(link_err(e)),
            })
            .collect::<Result<_>>()?;
        Ok(Opened {
            maps,
            snapshot,
            logs,
        })
    }

    fn log_name(&self, gen: u64) -> String {
        format!("{}.maps.log.{gen}", self.prefix)
    }

    fn current_log(&self) -> u64 {
        *self.head.logs.last().expect("a head names a log")
    }

    /// Whether open found more than one log (a compaction did not finish).
    pub fn interrupted(&self) -> bool {
        self.head.logs.len() > 1
    }

    fn read_snapshot(&self, gen: u64, chunks: u32, len: u64) -> Result<Vec<u8>> {
        let mut bytes = Vec::with_capacity(len as usize);
        for i in 0..chunks {
            let part = self
                .pool
                .read_all(&snapshot_name(&self.prefix, gen, i))
                .map_err(link_err)?;
            bytes.extend_from_slice(&part);
        }
        if bytes.len() as u64 != len {
            return Err(LinkError::Corrupted(format!(
                "map snapshot {gen}: {} bytes, the head says {len}",
                bytes.len()
            )));
        }
        Ok(bytes)
    }

    /// Appends framed batches at `at` (the valid length of the current
    /// log), durable on return.
    pub fn append(&mut self, at: u64, framed: &[u8]) -> Result<()> {
        self.pool
            .write(&self.log_name(self.current_log()), framed, at)
            .map_err(link_err)
    }

    /// Cuts the current log's torn tail at `valid` bytes.
    pub fn cut_log(&mut self, valid: u64) -> Result<()> {
        self.pool
            .truncate(&self.log_name(self.current_log()), valid)
            .map_err(link_err)
    }

    /// Writes `maps` as the snapshot of a new generation and makes it
    /// the only thing current (an empty log of that generation after it),
    /// in place; the snapshot's size.
    pub fn compact(&mut self, maps: &Maps) -> Result<u64> {
        let gen = self.current_log() + 1;
        let written = self.job(gen).write(maps)?;
        self.end_compaction(gen, written);
        Ok(written)
    }

    /// Sets the current log aside: a fresh log takes the merges that
    /// follow; the compaction's snapshot will hold everything before it.
    pub fn begin_compaction(&mut self) -> Result<RadosCompaction> {
        let gen = self.current_log() + 1;
        let mut head = self.head.clone();
        head.logs.push(gen);
        self.write_head(&head)?;
        self.head = head;
        Ok(self.job(gen))
    }

    /// Records that a compaction installed snapshot `gen` (the head it
    /// wrote: that snapshot, and log `gen` alone).
    pub fn end_compaction(&mut self, gen: u64, written: u64) {
        self.head.snapshot_gen = gen;
        self.head.snapshot_len = written;
        self.head.chunks = chunks_of(written);
        self.head.logs = vec![gen];
    }

    /// The compaction that writes snapshot `gen` and leaves log `gen`
    /// as the only one.
    fn job(&self, gen: u64) -> RadosCompaction {
        RadosCompaction {
            pool: self.pool.clone(),
            prefix: self.prefix.clone(),
            head: Head {
                format: self.head.format,
                snapshot_gen: gen,
                snapshot_len: 0,
                chunks: 0,
                logs: vec![gen],
            },
            old_logs: self
                .head
                .logs
                .iter()
                .copied()
                .filter(|&g| g < gen)
                .collect(),
            old_snapshot: (self.head.snapshot_gen, self.head.chunks),
        }
    }

    fn write_head(&self, head: &Head) -> Result<()> {
        self.pool
            .write_full(&format!("{}.head", self.prefix), &head.encode())
            .map_err(link_err)
    }
}

impl RadosCompaction {
    /// The generation whose snapshot this writes.
    pub fn generation(&self) -> u64 {
        self.head.snapshot_gen
    }

    /// Writes the snapshot's chunks, then the head naming them (the
    /// commit point), then removes what the old head named.
    pub fn write(mut self, maps: &Maps) -> Result<u64> {
        let bytes = image::encode(maps)?;
        let gen = self.head.snapshot_gen;
        for (i, chunk) in bytes.chunks(SNAPSHOT_CHUNK).enumerate() {
            self.pool
                .write_full(&snapshot_name(&self.prefix, gen, i as u32), chunk)
                .map_err(link_err)?;
        }
        self.head.snapshot_len = bytes.len() as u64;
        self.head.chunks = chunks_of(bytes.len() as u64);
        self.pool
            .write_full(&format!("{}.head", self.prefix), &self.head.encode())
            .map_err(link_err)?;
        // Garbage from here on: a failure leaves objects nothing names.
        for g in &self.old_logs {
            let _ = self.pool.remove(&format!("{}.maps.log.{g}", self.prefix));
        }
        let (old_gen, old_chunks) = self.old_snapshot;
        if old_gen != 0 {
            for i in 0..old_chunks {
                let _ = self.pool.remove(&snapshot_name(&self.prefix, old_gen, i));
            }
        }
        Ok(bytes.len() as u64)
    }
}

fn snapshot_name(prefix: &str, gen: u64, chunk: u32) -> String {
    format!("{prefix}.maps.snap.{gen}.{chunk}")
}

fn chunks_of(len: u64) -> u32 {
    len.div_ceil(SNAPSHOT_CHUNK as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_round_trip_and_damage_is_corrupted() {
        let h = Head {
            format: 2,
            snapshot_gen: 7,
            snapshot_len: 123,
            chunks: 1,
            logs: vec![7, 8],
        };
        let bytes = h.encode();
        assert_eq!(Head::decode(&bytes).unwrap(), h);
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x10;
            assert!(Head::decode(&b).is_err(), "byte {i}");
        }
        assert!(Head::decode(&bytes[..bytes.len() - 1]).is_err());
        let unordered = Head {
            logs: vec![8, 7],
            ..h
        };
        assert!(Head::decode(&unordered.encode()).is_err());
    }
}
