//! The map image (`maps.snap`, the maps' "snapshot" in the merge log's
//! compaction — not an MVCC snapshot): every map in one file, written
//! whole at a compaction and read whole at open — straight into the
//! arrays the maps are kept in, without an intermediate copy of the file.
//!
//! ```text
//! maps.snap (format 2):
//!  "NDM2" │ payload_len u64 │ payload │ crc32 u32 (of the payload)
//!  payload: dense_len u64 │ dense_len × u64      L2P by LPN, u64::MAX = unmapped
//!           sparse u64    │ sparse × (lpn u64, ppn u64)
//!           tables u32    │ tables × (table u32 │ vids u64 │ vids × u64)
//!                                               VID map: raw head RecId by VID,
//!                                               RecId::NULL = no tuple
//! ```
//!
//! A format-1 image ("NDPM" │ crc u32 │ len u64 │ sorted (key, value)
//! pairs) is still read; the next compaction writes format 2.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use ndpdb_formats::codec::Reader;
use ndpdb_formats::ids::MAX_VID;
use ndpdb_formats::{Lpn, Ppn, RecId, TableId, Vid};
use ndpdb_link::{LinkError, Result, VidEntry};

use super::{io, L2p, Maps};

const MAGIC_V1: &[u8; 4] = b"NDPM";
const MAGIC: &[u8; 4] = b"NDM2";
/// Bytes converted per read or write call.
const CHUNK: usize = 1 << 20;

fn corrupted(what: &str) -> LinkError {
    LinkError::Corrupted(format!("map snapshot: {what}"))
}

/// Writes `maps` as a snapshot to `path` (and syncs it).
pub fn write(path: &Path, maps: &Maps) -> Result<u64> {
    let file = File::create(path).map_err(io)?;
    let (written, w) = write_to(BufWriter::with_capacity(CHUNK, file), maps)?;
    let f = w.into_inner().map_err(|e| io(e.into_error()))?;
    f.sync_all().map_err(io)?;
    Ok(written)
}

/// `maps` as snapshot bytes in memory (a RADOS store's snapshot).
pub fn encode(maps: &Maps) -> Result<Vec<u8>> {
    Ok(write_to(Vec::new(), maps)?.1)
}

/// Writes `maps` as a snapshot to `w`; the bytes written and `w`.
fn write_to<W: Write>(w: W, maps: &Maps) -> Result<(u64, W)> {
    let (dense, sparse) = maps.l2p.parts();
    let mut tables: Vec<_> = maps.vids.iter().collect();
    tables.sort_by_key(|(t, _)| **t);
    let payload_len = 8
        + 8 * dense.len() as u64
        + 8
        + 16 * sparse.len() as u64
        + 4
        + tables
            .iter()
            .map(|(_, v)| 12 + 8 * v.len() as u64)
            .sum::<u64>();
    let mut out = Sink {
        w,
        crc: crc32fast::Hasher::new(),
    };
    out.w.write_all(MAGIC).map_err(io)?;
    out.w.write_all(&payload_len.to_le_bytes()).map_err(io)?;
    out.u64s(&[dense.len() as u64])?;
    out.u64s(dense)?;
    out.u64s(&[sparse.len() as u64])?;
    for (l, p) in sparse {
        out.u64s(&[l.0, p.0])?;
    }
    out.put(&(tables.len() as u32).to_le_bytes())?;
    for (t, heads) in tables {
        out.put(&t.0.to_le_bytes())?;
        out.u64s(&[heads.len() as u64])?;
        out.u64s(heads)?;
    }
    let crc = out.crc.finalize();
    out.w.write_all(&crc.to_le_bytes()).map_err(io)?;
    Ok((payload_len + 16, out.w))
}

/// A snapshot read back.
#[derive(Debug, PartialEq)]
pub struct Snapshot {
    pub maps: Maps,
    /// Its length in bytes.
    pub len: u64,
    /// Written in an earlier format (to be rewritten).
    pub older_format: bool,
}

/// Reads the snapshot at `path`.
pub fn read(path: &Path) -> Result<Snapshot> {
    let file = File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    read_from(BufReader::with_capacity(CHUNK, file), len)
}

/// Reads a snapshot from bytes in memory (a RADOS store's snapshot).
pub fn decode(bytes: &[u8]) -> Result<Snapshot> {
    read_from(bytes, bytes.len() as u64)
}

/// Reads a snapshot of `len` bytes from `r`.
fn read_from<R: Read>(mut r: R, len: u64) -> Result<Snapshot> {
    let mut magic = [0u8; 4];
    r.read_exact(&mut magic)
        .map_err(|_| corrupted("truncated header"))?;
    if &magic == MAGIC_V1 {
        let mut bytes = magic.to_vec();
        r.read_to_end(&mut bytes).map_err(io)?;
        return Ok(Snapshot {
            maps: decode_v1(&bytes)?,
            len,
            older_format: true,
        });
    }
    if &magic != MAGIC {
        return Err(corrupted("bad magic"));
    }
    let mut n = [0u8; 8];
    r.read_exact(&mut n)
        .map_err(|_| corrupted("truncated header"))?;
    let payload_len = u64::from_le_bytes(n);
    if payload_len.checked_add(16) != Some(len) {
        return Err(corrupted("length disagrees with the file"));
    }
    let mut s = Stream {
        r,
        crc: crc32fast::Hasher::new(),
        left: payload_len,
        buf: Vec::new(),
    };
    let maps = decode_payload(&mut s)?;
    if s.left != 0 {
        return Err(corrupted("bytes after the last table"));
    }
    let mut crc = [0u8; 4];
    s.r.read_exact(&mut crc)
        .map_err(|_| corrupted("truncated"))?;
    if s.crc.finalize() != u32::from_le_bytes(crc) {
        return Err(corrupted("checksum mismatch"));
    }
    Ok(Snapshot {
        maps,
        len,
        older_format: false,
    })
}

fn decode_payload<R: Read>(s: &mut Stream<R>) -> Result<Maps> {
    let dense_len = s.u64()?;
    let dense = s.u64s(dense_len)?;
    let sparse_len = s.u64()?;
    if sparse_len > s.left / 16 {
        return Err(corrupted("sparse L2P beyond the file"));
    }
    let mut sparse = Vec::with_capacity(sparse_len as usize);
    for _ in 0..sparse_len {
        sparse.push((Lpn(s.u64()?), Ppn(s.u64()?)));
    }
    let mut maps = Maps {
        l2p: L2p::from_parts(dense, sparse),
        ..Maps::default()
    };
    let tables = u32::from_le_bytes(s.take(4)?.try_into().expect("4 bytes"));
    for _ in 0..tables {
        let t = TableId(u32::from_le_bytes(s.take(4)?.try_into().expect("4 bytes")));
        let n = s.u64()?;
        if n > MAX_VID {
            return Err(corrupted("VID map beyond the VID space"));
        }
        if maps.vids.insert(t, s.u64s(n)?).is_some() {
            return Err(corrupted("a table twice"));
        }
    }
    Ok(maps)
}

/// The payload being read, checksummed as it goes.
struct Stream<R> {
    r: R,
    crc: crc32fast::Hasher,
    left: u64,
    buf: Vec<u8>,
}

impl<R: Read> Stream<R> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if n as u64 > self.left {
            return Err(corrupted("a field beyond the payload"));
        }
        self.buf.resize(n, 0);
        self.r
            .read_exact(&mut self.buf)
            .map_err(|_| corrupted("truncated"))?;
        self.crc.update(&self.buf);
        self.left -= n as u64;
        Ok(&self.buf)
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    /// `n` words, checked against the bytes left before anything is
    /// allocated.
    fn u64s(&mut self, n: u64) -> Result<Vec<u64>> {
        if n > self.left / 8 {
            return Err(corrupted("an array beyond the payload"));
        }
        let mut out = Vec::with_capacity(n as usize);
        let mut left = n as usize;
        while left > 0 {
            let k = left.min(CHUNK / 8);
            let bytes = self.take(8 * k)?;
            out.extend(
                bytes
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))),
            );
            left -= k;
        }
        Ok(out)
    }
}

/// The payload being written, checksummed as it goes.
struct Sink<W> {
    w: W,
    crc: crc32fast::Hasher,
}

impl<W: Write> Sink<W> {
    fn put(&mut self, b: &[u8]) -> Result<()> {
        self.crc.update(b);
        self.w.write_all(b).map_err(io)
    }

    fn u64s(&mut self, words: &[u64]) -> Result<()> {
        let mut buf = Vec::with_capacity(CHUNK.min(words.len() * 8));
        for chunk in words.chunks(CHUNK / 8) {
            buf.clear();
            chunk
                .iter()
                .for_each(|w| buf.extend_from_slice(&w.to_le_bytes()));
            self.put(&buf)?;
        }
        Ok(())
    }
}

fn decode_v1(bytes: &[u8]) -> Result<Maps> {
    let mut r = Reader::new(bytes);
    r.take(4)?;
    let crc = r.u32()?;
    let len = r.u64()? as usize;
    let payload = r.take(len)?;
    if crc32fast::hash(payload) != crc {
        return Err(corrupted("checksum mismatch"));
    }
    let mut pr = Reader::new(payload);
    let maps = decode_v1_payload(&mut pr)?;
    pr.finish("map snapshot")?;
    Ok(maps)
}

fn decode_v1_payload(r: &mut Reader<'_>) -> ndpdb_formats::Result<Maps> {
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
#[cfg(test)]
mod tests {
    use super::*;
    use ndpdb_formats::codec::Writer;

    fn sample() -> Maps {
        let mut m = Maps::default();
        let l2p: Vec<_> = (0..3000).map(|i| (Lpn(i), Ppn(i + 5))).collect();
        let vids: Vec<_> = (0..5000)
            .filter(|v| v % 7 != 0)
            .map(|v| VidEntry {
                table: TableId(1 + v as u32 % 2),
                vid: Vid(v),
                head: RecId::new(Lpn(v / 60), (v % 60) as u16),
            })
            .collect();
        m.apply_merge(&l2p, &vids);
        // An LPN far past the dense array, and an unmapped one.
        m.apply_merge(&[(Lpn(1 << 40), Ppn(9)), (Lpn(17), Ppn::NONE)], &[]);
        m
    }

    #[test]
    fn snapshots_round_trip_and_damage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("maps.snap");
        let maps = sample();
        let len = write(&path, &maps).unwrap();
        let back = read(&path).unwrap();
        assert_eq!((back.maps, back.len, back.older_format), (maps, len, false));
        let good = std::fs::read(&path).unwrap();
        assert_eq!(good.len() as u64, len);
        for at in [0, 5, 13, good.len() / 2, good.len() - 9, good.len() - 1] {
            let mut bad = good.clone();
            bad[at] ^= 0x20;
            std::fs::write(&path, &bad).unwrap();
            assert!(read(&path).is_err(), "byte {at}");
        }
        std::fs::write(&path, &good[..good.len() - 3]).unwrap();
        assert!(read(&path).is_err());
    }

    #[test]
    fn a_format_1_snapshot_is_still_read() {
        let maps = sample();
        let mut p = Writer::new();
        let mut l2p: Vec<_> = maps.l2p.iter().collect();
        l2p.sort();
        p.u64(l2p.len() as u64);
        l2p.iter().for_each(|(l, ph)| {
            p.u64(l.0).u64(ph.0);
        });
        let mut tables: Vec<_> = maps.vids.keys().copied().collect();
        tables.sort();
        p.u32(tables.len() as u32);
        for t in tables {
            let e = maps.vid_runs(t);
            p.u32(t.0).u64(e.len());
            e.iter().for_each(|(v, r)| {
                p.u64(v).u64(r);
            });
        }
        let mut w = Writer::new();
        w.raw(MAGIC_V1)
            .u32(crc32fast::hash(p.as_slice()))
            .u64(p.len() as u64)
            .raw(p.as_slice());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("maps.snap");
        std::fs::write(&path, w.as_slice()).unwrap();
        let back = read(&path).unwrap();
        assert_eq!((back.maps, back.older_format), (maps, true));
    }
}
