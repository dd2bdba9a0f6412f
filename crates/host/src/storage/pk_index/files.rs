//! The files of the PK indexes besides the mapped bases: the delta file
//! of each index (keys added since its base), the manifest naming the
//! checkpoint the files are current for, and publishing a file by
//! rename.
//!
//! ```text
//!  dir/pk/<table>.delta                     dir/pk/MANIFEST
//!  ┌──────────┬───────┬──────┐              ┌──────────┬────────────┬─────┐
//!  │ NDPPKIX2 │ table │ n    │              │ NDPPKMF1 │ checkpoint │ crc │
//!  ├──────────┴───────┴──────┴─────────┐    └──────────┴────────────┴─────┘
//!  │ n × (u32 key length, key, u64 VID)│    the checkpoint (its next
//!  ├───────────────────────────────────┤    transaction id) the files are
//!  │ crc32 of everything before        │    current for
//!  └───────────────────────────────────┘
//! ```
//!
//! A delta file is a sequence of such segments. The first checkpoint
//! after a merge writes one with every key of the delta (by rename);
//! each later one appends a segment with the keys added, or given
//! another VID, since the file's last segment, and syncs it: a
//! checkpoint writes what it added, not the whole delta. A later
//! segment's entry for a key overrides an earlier one's. A torn last
//! segment (a crash while appending) fails the load, and the index is
//! rebuilt from the heads, as for any file the manifest does not cover:
//! the manifest naming that checkpoint is written only after the append.
//!
//! The segment format is the whole-index format of earlier versions: an
//! `<table>.idx` in it loads as a delta over an empty base.

use std::fs::{self, File};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ndpdb_formats::codec::{Reader, Writer};
use ndpdb_formats::{Error, Result, TableId, TxId, Vid};

pub const DELTA_MAGIC: &[u8; 8] = b"NDPPKIX2";
const MANIFEST_MAGIC: &[u8; 8] = b"NDPPKMF1";

/// Encodes a delta segment of `entries`.
pub fn encode_delta<'a>(
    table: TableId,
    entries: impl ExactSizeIterator<Item = (&'a [u8], Vid)>,
) -> Vec<u8> {
    let mut w = Writer::new();
    w.raw(DELTA_MAGIC).u32(table.0).u64(entries.len() as u64);
    for (k, v) in entries {
        w.bytes(k).u64(v.0);
    }
    let crc = crc32fast::hash(w.as_slice());
    w.u32(crc);
    w.into_inner()
}

/// Calls `f` for every entry of the delta file `bytes` of `table`, with
/// the number of its segment; each segment is checked whole before the
/// first call for it.
pub fn decode_delta(
    mut bytes: &[u8],
    table: TableId,
    mut f: impl FnMut(&[u8], Vid, usize) -> Result<()>,
) -> Result<()> {
    let mut segment = 0;
    while !bytes.is_empty() {
        let len = segment_len(bytes)?;
        let mut r = Reader::new(checked_body(&bytes[..len], DELTA_MAGIC)?);
        if r.u32()? != table.0 {
            return Err(Error::corrupted("PK index file of another table"));
        }
        let n = r.u64()?;
        for _ in 0..n {
            let key = r.bytes()?;
            f(key, Vid(r.u64()?), segment)?;
        }
        r.finish("PK index")?;
        bytes = &bytes[len..];
        segment += 1;
    }
    Ok(())
}

/// The length of the segment `bytes` begins with (its entries walked,
/// bounds-checked; the checksum is not yet looked at).
fn segment_len(bytes: &[u8]) -> Result<usize> {
    let short = || Error::corrupted("PK index file: segment cut short");
    let header = DELTA_MAGIC.len() + 4 + 8;
    let n = bytes
        .get(header - 8..header)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .ok_or_else(short)?;
    // Each entry takes at least 12 bytes (length and VID).
    if n > (bytes.len() / 12) as u64 {
        return Err(Error::corrupted("PK index entry count beyond the file"));
    }
    let mut at = header;
    for _ in 0..n {
        let len = bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
            .ok_or_else(short)?;
        at = at
            .checked_add(4 + len + 8)
            .filter(|e| *e <= bytes.len())
            .ok_or_else(short)?;
    }
    at.checked_add(4)
        .filter(|e| *e <= bytes.len())
        .ok_or_else(short)
}

/// Appends a segment to the delta file at `path` whose first `valid`
/// bytes are the segments written so far (anything after them, left by
/// a failed append, is cut off first) and syncs it; returns the new
/// length.
pub fn append_segment(path: &Path, valid: u64, segment: &[u8]) -> Result<u64> {
    let mut f = fs::OpenOptions::new().write(true).open(path).map_err(io)?;
    f.set_len(valid).map_err(io)?;
    f.seek(SeekFrom::Start(valid)).map_err(io)?;
    f.write_all(segment).map_err(io)?;
    f.sync_data().map_err(io)?;
    Ok(valid + segment.len() as u64)
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

pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    publish(path, Pace::DiskSpeed, |f| f.write_all(bytes))
}

/// How fast [`publish`] sends a file to the disk.
#[derive(Clone, Copy, Debug)]
pub enum Pace<'a> {
    /// In steps, as fast as the disk takes them (a checkpoint a session
    /// or a shutdown waits for).
    DiskSpeed,
    /// In steps spread to [`PACE_BYTES_PER_SECOND`] (the background
    /// checkpointer, which nothing waits for), until `hurry` is set (a
    /// shutdown or a checkpoint someone waits for wants the files):
    /// then at the disk's speed, as PostgreSQL's checkpointer finishes
    /// a spread checkpoint when an immediate one is asked for.
    Spread { hurry: &'a AtomicBool },
}

/// Writes a file through `write` under a temporary name, syncs it and
/// renames it to `path` (then syncs the directory): readers see the old
/// file or the whole new one.
pub fn publish(
    path: &Path,
    pace: Pace<'_>,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(io)?;
    let tmp = path.with_extension("tmp");
    {
        let file = PacedFile::new(File::create(&tmp).map_err(io)?, pace);
        let mut f = BufWriter::with_capacity(1 << 20, file);
        write(&mut f).map_err(io)?;
        let f = f.into_inner().map_err(|e| io(e.into_error()))?;
        f.file.sync_all().map_err(io)?;
    }
    fs::rename(&tmp, path).map_err(io)?;
    File::open(dir).and_then(|d| d.sync_all()).map_err(io)
}

/// Bytes written between two waits for the disk ([`PacedFile`]).
const PACE_BYTES: u64 = 1 << 20;
/// The rate a [`PacedFile`] goes to the disk at, at most.
const PACE_BYTES_PER_SECOND: f64 = (32u64 << 20) as f64;

/// A file written out to the disk in steps of [`PACE_BYTES`], each
/// before the next is written (Linux `sync_file_range`), and with
/// [`Pace::Spread`] at no more than [`PACE_BYTES_PER_SECOND`], as
/// PostgreSQL's checkpointer writes in small steps
/// (`checkpoint_flush_after`) spread over time
/// (`checkpoint_completion_target`). A WAL sync waits for the writes
/// the disk has in flight: sent in one piece, the 200 MB base of a large
/// PK index held every WAL sync up until it was on the disk. Durability
/// still comes from the `sync_all` after the last step.
struct PacedFile<'a> {
    file: File,
    written: u64,
    /// Bytes already written out.
    out: u64,
    /// When the first byte was written, and the hurry flag, with
    /// [`Pace::Spread`].
    spread: Option<(Instant, &'a AtomicBool)>,
}

impl<'a> PacedFile<'a> {
    fn new(file: File, pace: Pace<'a>) -> PacedFile<'a> {
        PacedFile {
            file,
            written: 0,
            out: 0,
            spread: match pace {
                Pace::DiskSpeed => None,
                Pace::Spread { hurry } => Some((Instant::now(), hurry)),
            },
        }
    }

    /// Writes out what was written since the last step and waits for it.
    fn write_out(&mut self) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE
                | libc::SYNC_FILE_RANGE_WRITE
                | libc::SYNC_FILE_RANGE_WAIT_AFTER;
            // SAFETY: sync_file_range reads only its arguments; the
            // descriptor is this open file's. A failure only loses the
            // pacing: the final sync_all reports what matters.
            unsafe {
                libc::sync_file_range(
                    self.file.as_raw_fd(),
                    self.out as libc::off64_t,
                    (self.written - self.out) as libc::off64_t,
                    flags,
                );
            }
        }
        self.out = self.written;
        if let Some((from, hurry)) = self.spread {
            if hurry.load(Ordering::Relaxed) {
                return;
            }
            let due = Duration::from_secs_f64(self.out as f64 / PACE_BYTES_PER_SECOND);
            if let Some(early) = due.checked_sub(from.elapsed()) {
                std::thread::sleep(early);
            }
        }
    }
}

impl Write for PacedFile<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // No write crosses a step's end: a base's data comes as one slice
        // of hundreds of megabytes, which would otherwise go to the disk
        // as one step.
        let room = (PACE_BYTES - (self.written - self.out)) as usize;
        let n = self.file.write(&buf[..buf.len().min(room)])?;
        self.written += n as u64;
        if self.written - self.out >= PACE_BYTES {
            self.write_out();
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Removes `path` if it is there.
pub fn remove_if_present(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(e)),
    }
}

pub fn io(e: std::io::Error) -> Error {
    Error::sql(
        ndpdb_formats::SqlState::IO_ERROR,
        format!("PK index file: {e}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_slice_goes_to_the_disk_in_steps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("paced");
        let data: Vec<u8> = (0..(11 * PACE_BYTES / 2)).map(|i| i as u8).collect();
        // A hurried spread pace does not sleep, so the test stays short.
        let hurry = AtomicBool::new(true);
        for pace in [Pace::DiskSpeed, Pace::Spread { hurry: &hurry }] {
            let mut f = PacedFile::new(File::create(&path).unwrap(), pace);
            f.write_all(&data).unwrap();
            // Five whole steps written out; the half step waits for the
            // final sync.
            assert_eq!((f.written, f.out), (data.len() as u64, 5 * PACE_BYTES));
            drop(f);
            assert_eq!(fs::read(&path).unwrap(), data);
        }
    }
}
