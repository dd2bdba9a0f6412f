//! The host write-ahead log (DESIGN.md §8, host part).
//!
//! A redo-only log: a transaction's new versions are logged as physical
//! redo images together with its commit record, in one append, when it
//! commits (its writes live in a private write set until then). Nothing
//! uncommitted ever reaches the log or storage, so recovery never undoes.
//!
//! ```text
//! wal/00000000000000000000.seg   ← segment named by the LSN of its first byte
//! record: len u32 | crc32 u32 | lsn u64 | kind u8 | payload
//!         └─ crc covers lsn, kind and payload; LSN = byte position in the stream
//! ```
//!
//! **Group commit**: appenders copy records into a shared buffer and then
//! call [`Wal::sync`]; one of them takes the turn and writes and fsyncs
//! everything buffered so far, the others sleep, and every committer
//! whose LSN that covered returns without its own fsync. When a turn
//! ends, its leader wakes exactly the sleepers it made durable, each
//! one directly, and hands the turn to the first sleeper it did not
//! cover; the other sleepers sleep on. So a committer that a turn
//! covers sleeps once, and the wake-ups do not queue behind one another
//! on a lock.
//! **Checkpoints** start a new segment with a checkpoint record and
//! delete the older segments. **Zero-filled ahead**: a leader whose
//! records pass the zeroed room writes zeros after them up to the next
//! multiple of [`PREALLOCATE`], synced with the records, so that most
//! commits overwrite blocks the file already has and their `fdatasync`
//! flushes data only, without a journal commit for the file's new size
//! (as PostgreSQL zero-fills its WAL segments). A segment is trimmed to its
//! records when the next one starts.
//!
//! ```text
//! segment: | records …                    | zeros … |
//!          0                          log's end   allocated
//! ```
//!
//! **Torn tails**: on open, the first record that is short, has a bad CRC
//! or an unexpected LSN ends the log. Zeros after it are the allocated
//! room; anything else there is a torn write and is zeroed (made durable
//! before the log goes on), and later segments are removed.

mod record;

pub use record::{CheckpointInfo, WalRecord};

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use ndpdb_formats::codec::{Reader, Writer};
use ndpdb_formats::Lsn;

#[derive(Debug, thiserror::Error)]
pub enum WalError {
    #[error("WAL I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("WAL corrupted: {0}")]
    Corrupted(String),
    /// A restore needs log that is no longer there.
    #[error("WAL {0}")]
    Missing(String),
}

pub type Result<T, E = WalError> = std::result::Result<T, E>;

const FRAME_HEADER: usize = 8;

struct Inner {
    file: Arc<File>,
    /// Bytes of the current segment on file (records, then zeros).
    allocated: u64,
    /// Frames appended and not yet written, in LSN order: encoded batches
    /// as they came, small appends copied into the last buffer.
    pending: Vec<Vec<u8>>,
    next_lsn: u64,
    /// LSN where the current segment (and its checkpoint) starts.
    segment_start: u64,
}

/// Counters of WAL activity since open.
#[derive(Default, Debug)]
pub struct WalStats {
    pub bytes: AtomicU64,
    pub records: AtomicU64,
    pub fsyncs: AtomicU64,
}

pub struct Wal {
    dir: PathBuf,
    inner: Mutex<Inner>,
    /// The turn to write and sync the log (one at a time: a group
    /// commit's leader, a checkpoint, a removal) and who sleeps for it.
    turns: Mutex<Turns>,
    durable: AtomicU64,
    /// Checkpoints keep the segments from this LSN on (a base backup's
    /// checkpoint); `u64::MAX`: none kept.
    retain_from: AtomicU64,
    pub stats: WalStats,
}

/// Whether the turn is held, and the threads asleep until a turn ends.
#[derive(Default)]
struct Turns {
    busy: bool,
    /// In the order they came: the LSN each waits to see durable
    /// (`u64::MAX`: the turn itself), the thread, and the flag its waker
    /// sets (a parked thread may wake for no reason and sleeps on then).
    sleepers: Vec<(u64, std::thread::Thread, Arc<AtomicBool>)>,
}

/// The turn to write and sync the log. Ending it wakes the sleepers
/// whose LSN is durable now, and the first one whose LSN is not (it takes
/// the turn next); the others sleep on.
struct SyncTurn<'a>(&'a Wal);

impl Drop for SyncTurn<'_> {
    fn drop(&mut self) {
        let durable = self.0.durable.load(Ordering::Acquire);
        let mut wake = Vec::new();
        {
            let mut turns = self.0.turns.lock();
            turns.busy = false;
            let mut handed = false;
            turns.sleepers.retain(|(want, thread, flag)| {
                let covered = *want <= durable;
                if covered || !handed {
                    handed |= !covered;
                    wake.push((thread.clone(), flag.clone()));
                    false
                } else {
                    true
                }
            });
        }
        for (thread, flag) in wake {
            flag.store(true, Ordering::Release);
            thread.unpark();
        }
    }
}

/// What [`Wal::open`] found: the records from the last checkpoint on.
pub struct Recovered {
    pub checkpoint: Option<CheckpointInfo>,
    pub records: Vec<(Lsn, WalRecord)>,
    /// Bytes cut from a torn or corrupt tail.
    pub cut_bytes: u64,
}

fn segment_name(start: u64) -> String {
    format!("{start:020}.seg")
}

fn list_segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut segs = Vec::new();
    for e in fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".seg") {
            if let Ok(start) = stem.parse::<u64>() {
                segs.push((start, e.path()));
            }
        }
    }
    segs.sort();
    Ok(segs)
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)?.sync_all()?;
    Ok(())
}

impl Wal {
    /// Opens the log in `dir`, cutting any torn tail, and returns the
    /// records from the last checkpoint on.
    pub fn open(dir: &Path) -> Result<(Wal, Recovered)> {
        Wal::open_from(dir, None)
    }

    /// [`Wal::open`], or with `from` (the checkpoint a base backup was
    /// taken at) the records after that checkpoint, through every later
    /// one, for a restore: fails with [`WalError::Missing`] when the
    /// segments from there on are not all present.
    pub fn open_from(dir: &Path, from: Option<Lsn>) -> Result<(Wal, Recovered)> {
        fs::create_dir_all(dir)?;
        let mut segs = list_segments(dir)?;
        if segs.is_empty() {
            if let Some(c) = from {
                return Err(WalError::Missing(format!(
                    "from LSN {} is needed, and {} holds no segment",
                    c.0,
                    dir.display()
                )));
            }
            File::create(dir.join(segment_name(0)))?;
            sync_dir(dir)?;
            segs.push((0, dir.join(segment_name(0))));
        }
        let first = match from {
            Some(c) => segs.iter().position(|(s, _)| *s == c.0).ok_or_else(|| {
                WalError::Missing(format!(
                    "segment {} (the backup's checkpoint) has been removed from {}",
                    segment_name(c.0),
                    dir.display()
                ))
            })?,
            None => last_checkpoint_segment(&segs)?,
        };
        let segs = segs.split_off(first);
        let mut all: Vec<(Lsn, WalRecord)> = Vec::new();
        let mut cut_bytes = 0u64;
        let mut end_lsn = segs[0].0;
        let mut last = 0;
        let mut allocated = 0u64;
        for (i, (start, path)) in segs.iter().enumerate() {
            if *start != end_lsn && i > 0 {
                if from.is_some() {
                    return Err(WalError::Missing(format!(
                        "segments between LSN {end_lsn} and {start} are missing from {}",
                        dir.display()
                    )));
                }
                // A gap between segments: everything from here on is unreachable.
                break;
            }
            last = i;
            let bytes = fs::read(path)?;
            let valid = parse_segment(*start, &bytes, &mut all);
            end_lsn = start + valid as u64;
            allocated = bytes.len() as u64;
            // Zeros after the records: room allocated ahead, not a tear.
            if let Some(torn) = bytes[valid..].iter().rposition(|&b| b != 0) {
                let torn = torn as u64 + 1;
                cut_bytes += torn;
                let f = OpenOptions::new().write(true).open(path)?;
                write_zeros(&f, valid as u64, valid as u64 + torn)?;
                f.sync_data()?;
                break;
            }
        }
        for (_, path) in segs.iter().skip(last + 1) {
            cut_bytes += fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            fs::remove_file(path)?;
        }
        let file = OpenOptions::new().write(true).open(&segs[last].1)?;
        let ckpt_at = match from {
            Some(c) => match all.first() {
                Some((lsn, WalRecord::Checkpoint(_))) if *lsn == c => Some(0),
                _ => {
                    return Err(WalError::Missing(format!(
                        "has no checkpoint record at LSN {} (the backup's)",
                        c.0
                    )))
                }
            },
            None => all
                .iter()
                .rposition(|(_, r)| matches!(r, WalRecord::Checkpoint(_))),
        };
        let (checkpoint, records) = match ckpt_at {
            Some(i) => {
                let c = match &all[i].1 {
                    WalRecord::Checkpoint(c) => Some(c.clone()),
                    _ => None,
                };
                (c, all.split_off(i + 1))
            }
            None => (None, all),
        };
        let wal = Wal {
            dir: dir.to_path_buf(),
            inner: Mutex::new(Inner {
                file: Arc::new(file),
                allocated,
                pending: Vec::new(),
                next_lsn: end_lsn,
                segment_start: segs[0].0,
            }),
            turns: Mutex::new(Turns::default()),
            durable: AtomicU64::new(end_lsn),
            retain_from: AtomicU64::new(u64::MAX),
            stats: WalStats::default(),
        };
        Ok((
            wal,
            Recovered {
                checkpoint,
                records,
                cut_bytes,
            },
        ))
    }

    /// Buffers `records` contiguously; returns the LSN just past the last.
    pub fn append(&self, records: &[WalRecord]) -> Lsn {
        self.append_encoded(Encoded::of(records))
    }

    /// [`Wal::append`] of one record: returns its own LSN (what a later
    /// record refers to it by) and the LSN just past it.
    pub fn append_one(&self, record: &WalRecord) -> (Lsn, Lsn) {
        self.append_span(Encoded::of(std::slice::from_ref(record)))
    }

    /// Buffers records encoded beforehand (outside the caller's locks):
    /// only their LSNs and checksums are filled in here, and their
    /// buffers are kept as they are, without a copy.
    pub fn append_encoded(&self, encoded: Encoded) -> Lsn {
        self.append_span(encoded).1
    }

    /// Appends `encoded`: the LSN of its first record and the one just
    /// past its last.
    fn append_span(&self, encoded: Encoded) -> (Lsn, Lsn) {
        let mut inner = self.inner.lock();
        let first = Lsn(inner.next_lsn);
        let (mut bytes, n) = (0u64, encoded.frames.len());
        for (mut frame, rest_crc) in encoded.frames {
            let lsn = inner.next_lsn;
            seal_frame(&mut frame, lsn, &rest_crc);
            inner.next_lsn += frame.len() as u64;
            bytes += frame.len() as u64;
            match inner.pending.last_mut() {
                Some(last) if frame.len() <= SMALL_FRAME && last.len() < PENDING_CHUNK => {
                    last.extend_from_slice(&frame)
                }
                _ => inner.pending.push(frame),
            }
        }
        self.stats.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.stats.records.fetch_add(n as u64, Ordering::Relaxed);
        (first, Lsn(inner.next_lsn))
    }

    pub fn durable_lsn(&self) -> Lsn {
        Lsn(self.durable.load(Ordering::Acquire))
    }

    pub fn current_lsn(&self) -> Lsn {
        Lsn(self.inner.lock().next_lsn)
    }

    /// Waits for the turn to write and sync the log.
    fn turn(&self) -> SyncTurn<'_> {
        loop {
            if let Some(turn) = self.turn_unless(u64::MAX) {
                return turn;
            }
        }
    }

    /// Waits for the turn, asleep, unless everything up to `upto` is
    /// durable first (checked whenever this thread is woken): `None` then.
    fn turn_unless(&self, upto: u64) -> Option<SyncTurn<'_>> {
        loop {
            let woken = {
                let mut turns = self.turns.lock();
                if self.durable.load(Ordering::Acquire) >= upto {
                    return None;
                }
                if !turns.busy {
                    turns.busy = true;
                    return Some(SyncTurn(self));
                }
                let woken = Arc::new(AtomicBool::new(false));
                turns
                    .sleepers
                    .push((upto, std::thread::current(), woken.clone()));
                woken
            };
            while !woken.load(Ordering::Acquire) {
                std::thread::park();
            }
        }
    }

    /// Makes everything up to `upto` durable (group commit).
    pub fn sync(&self, upto: Lsn) -> Result<()> {
        if self.durable.load(Ordering::Acquire) >= upto.0 {
            return Ok(());
        }
        let Some(_turn) = self.turn_unless(upto.0) else {
            return Ok(());
        };
        let (pending, end, file, segment_start, allocated) = {
            let mut inner = self.inner.lock();
            (
                std::mem::take(&mut inner.pending),
                inner.next_lsn,
                inner.file.clone(),
                inner.segment_start,
                inner.allocated,
            )
        };
        // Only the turn's holder writes or replaces the segment, so
        // `allocated` is still the file's.
        let allocated = write_pending(&file, pending, end - segment_start, allocated)?;
        file.sync_data()?;
        self.inner.lock().allocated = allocated;
        self.stats.fsyncs.fetch_add(1, Ordering::Relaxed);
        self.durable.store(end, Ordering::Release);
        Ok(())
    }

    /// Starts a new segment whose first record is `checkpoint`, makes it
    /// durable and deletes all older segments. The caller guarantees that
    /// everything logged before is reflected in durable storage.
    pub fn checkpoint(&self, checkpoint: CheckpointInfo) -> Result<Lsn> {
        let start = self.log_checkpoint(checkpoint)?;
        self.remove_obsolete()?;
        Ok(start)
    }

    /// [`Wal::checkpoint`] without deleting the older segments: a caller
    /// that holds back commits meanwhile deletes them after letting the
    /// commits go on ([`Wal::remove_obsolete`]); deleting a large
    /// segment takes about 10 ms.
    pub fn log_checkpoint(&self, checkpoint: CheckpointInfo) -> Result<Lsn> {
        let _turn = self.turn();
        let mut inner = self.inner.lock();
        // Flush what is buffered into the old segment first, and trim its
        // zeros: a finished segment holds its records only.
        let pending = std::mem::take(&mut inner.pending);
        let end = inner.next_lsn - inner.segment_start;
        write_pending(&inner.file, pending, end, inner.allocated)?;
        inner.file.set_len(end)?;
        inner.file.sync_data()?;
        let start = inner.next_lsn;
        let path = self.dir.join(segment_name(start));
        let mut file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&path)?;
        let mut f = Encoded::of(&[WalRecord::Checkpoint(checkpoint)])
            .frames
            .remove(0);
        seal_frame(&mut f.0, start, &f.1);
        let f = f.0;
        file.write_all(&f)?;
        file.sync_all()?;
        sync_dir(&self.dir)?;
        inner.next_lsn = start + f.len() as u64;
        inner.segment_start = start;
        inner.allocated = f.len() as u64;
        inner.file = Arc::new(file);
        self.durable.store(inner.next_lsn, Ordering::Release);
        self.stats.fsyncs.fetch_add(1, Ordering::Relaxed);
        Ok(Lsn(start))
    }

    /// Deletes the segments before the last checkpoint's that no kept
    /// backup needs ([`Wal::retain_from`]).
    pub fn remove_obsolete(&self) -> Result<()> {
        let start = self.inner.lock().segment_start;
        let keep = self.retain_from.load(Ordering::Acquire).min(start);
        self.remove_before(Lsn(keep))
    }

    /// Keeps the segments from `lsn` on at every later checkpoint (`None`:
    /// keep only what recovery needs).
    pub fn retain_from(&self, lsn: Option<Lsn>) {
        self.retain_from
            .store(lsn.map_or(u64::MAX, |l| l.0), Ordering::Release);
    }

    /// Where the kept log starts (see [`Wal::retain_from`]).
    pub fn retained_from(&self) -> Option<Lsn> {
        match self.retain_from.load(Ordering::Acquire) {
            u64::MAX => None,
            l => Some(Lsn(l)),
        }
    }

    /// Deletes the segments that hold only records before `lsn` (never
    /// the last one, which appends go to).
    pub fn remove_before(&self, lsn: Lsn) -> Result<()> {
        let _turn = self.turn();
        let segs = list_segments(&self.dir)?;
        let mut removed = false;
        for (pair, (_, p)) in segs.windows(2).zip(&segs) {
            if pair[1].0 <= lsn.0 {
                fs::remove_file(p)?;
                removed = true;
            }
        }
        if removed {
            sync_dir(&self.dir)?;
        }
        Ok(())
    }

    /// The segment files (first LSN, path) there are, oldest first.
    pub fn segments(&self) -> Result<Vec<(Lsn, PathBuf)>> {
        Ok(list_segments(&self.dir)?
            .into_iter()
            .map(|(s, p)| (Lsn(s), p))
            .collect())
    }

    /// Bytes logged since the last checkpoint (what recovery would read).
    pub fn bytes_since_checkpoint(&self) -> u64 {
        let inner = self.inner.lock();
        inner.next_lsn - inner.segment_start
    }
}

/// Frames up to this size are copied into the pending buffer before them.
const SMALL_FRAME: usize = 64 << 10;
/// How large a pending buffer grows with small frames.
const PENDING_CHUNK: usize = 4 << 20;

/// Records encoded into frames whose LSN and checksum are not known yet
/// (see [`Wal::append_encoded`]).
#[derive(Default)]
pub struct Encoded {
    /// Each frame's bytes (header and LSN zero) and the CRC state of what
    /// follows its LSN.
    frames: Vec<(Vec<u8>, crc32fast::Hasher)>,
}

impl Encoded {
    pub fn of(records: &[WalRecord]) -> Encoded {
        let mut e = Encoded::default();
        records.iter().for_each(|r| e.push(r));
        e
    }

    pub fn push(&mut self, rec: &WalRecord) {
        // Sized up front: a bulk load's redo records are a megabyte each,
        // and growing them by doubling copies and touches twice the memory.
        let mut w = Writer::with_capacity(FRAME_HEADER + 8 + rec.encoded_len_hint());
        w.u32(0).u32(0).u64(0);
        rec.encode(&mut w);
        let frame = w.into_inner();
        let mut crc = crc32fast::Hasher::new();
        crc.update(&frame[FRAME_HEADER + 8..]);
        self.frames.push((frame, crc));
    }

    /// Appends `other`'s frames after these.
    pub fn extend(&mut self, other: Encoded) {
        self.frames.extend(other.frames);
    }
}

/// Fills in the length, checksum and LSN of a frame [`Encoded`] made.
fn seal_frame(frame: &mut [u8], lsn: u64, rest: &crc32fast::Hasher) {
    let body_len = (frame.len() - FRAME_HEADER) as u32;
    frame[FRAME_HEADER..FRAME_HEADER + 8].copy_from_slice(&lsn.to_le_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&lsn.to_le_bytes());
    crc.combine(rest);
    frame[..4].copy_from_slice(&body_len.to_le_bytes());
    frame[4..8].copy_from_slice(&crc.finalize().to_le_bytes());
}

/// How far ahead of the log's end a segment is zero-filled.
pub const PREALLOCATE: u64 = 4 << 20;

/// Writes `pending`, the frames that end `end` bytes into the segment,
/// in place; where they pass the `allocated` bytes, zero-fills after them
/// up to the next multiple of [`PREALLOCATE`]. Returns the bytes now
/// allocated.
fn write_pending(file: &File, pending: Vec<Vec<u8>>, end: u64, allocated: u64) -> Result<u64> {
    use std::os::unix::fs::FileExt;
    let len: u64 = pending.iter().map(|c| c.len() as u64).sum();
    let mut at = end - len;
    for chunk in pending {
        file.write_all_at(&chunk, at)?;
        at += chunk.len() as u64;
    }
    if end <= allocated {
        return Ok(allocated);
    }
    let to = (end / PREALLOCATE + 1) * PREALLOCATE;
    write_zeros(file, end, to)?;
    Ok(to)
}

/// Writes zeros over bytes `from..to` of `file`.
fn write_zeros(file: &File, from: u64, to: u64) -> Result<()> {
    use std::os::unix::fs::FileExt;
    static ZEROS: [u8; 64 << 10] = [0; 64 << 10];
    let mut at = from;
    while at < to {
        let n = (to - at).min(ZEROS.len() as u64);
        file.write_all_at(&ZEROS[..n as usize], at)?;
        at += n;
    }
    Ok(())
}

/// The index of the last segment that starts with a checkpoint record
/// (the first segment if none does): recovery reads from there.
fn last_checkpoint_segment(segs: &[(u64, PathBuf)]) -> Result<usize> {
    use std::io::Read;
    // A checkpoint frame: header, LSN, kind, next TxId.
    let mut head = [0u8; FRAME_HEADER + 8 + 1 + 8];
    for (i, (start, path)) in segs.iter().enumerate().rev() {
        let mut f = File::open(path)?;
        let mut n = 0;
        while n < head.len() {
            match f.read(&mut head[n..])? {
                0 => break,
                k => n += k,
            }
        }
        let mut first = Vec::new();
        parse_segment(*start, &head[..n], &mut first);
        if matches!(first.first(), Some((_, WalRecord::Checkpoint(_)))) {
            return Ok(i);
        }
    }
    Ok(0)
}

/// Parses records; returns the length of the valid prefix.
fn parse_segment(start: u64, bytes: &[u8], out: &mut Vec<(Lsn, WalRecord)>) -> usize {
    let mut pos = 0usize;
    loop {
        let mut r = Reader::new(&bytes[pos..]);
        let (Ok(len), Ok(crc)) = (r.u32(), r.u32()) else {
            break;
        };
        let Ok(body) = r.take(len as usize) else {
            break;
        };
        if crc32fast::hash(body) != crc {
            break;
        }
        let mut br = Reader::new(body);
        let lsn = start + pos as u64;
        match br.u64() {
            Ok(l) if l == lsn => {}
            _ => break,
        }
        let Ok(rec) = WalRecord::decode(&mut br) else {
            break;
        };
        if br.finish("wal record").is_err() {
            break;
        }
        out.push((Lsn(lsn), rec));
        pos += FRAME_HEADER + len as usize;
    }
    pos
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndpdb_formats::{Lpn, RecId, TableId, TxId};

    /// Logs a redo record and the commit of `tx`, and syncs them.
    fn commit(wal: &Wal, tx: u64) {
        let lsn = wal.append(&[redo(tx), WalRecord::Commit { txid: TxId(tx) }]);
        wal.sync(lsn).unwrap();
    }

    /// The transactions whose commit records `rec` holds, in log order.
    fn committed(rec: &Recovered) -> Vec<u64> {
        rec.records
            .iter()
            .filter_map(|(_, r)| match r {
                WalRecord::Commit { txid } => Some(txid.0),
                _ => None,
            })
            .collect()
    }

    fn redo(tx: u64) -> WalRecord {
        WalRecord::Redo {
            txid: TxId(tx),
            table: TableId(1),
            entries: vec![(RecId::new(Lpn(tx), 0), vec![tx as u8; 40])],
        }
    }

    #[test]
    fn append_sync_reopen_and_cut_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let end;
        {
            let (wal, rec) = Wal::open(dir.path()).unwrap();
            assert!(rec.records.is_empty());
            for tx in 1..=5 {
                commit(&wal, tx);
            }
            end = wal.durable_lsn().0;
            // Buffered but never synced: lost, which is fine (not acknowledged).
            wal.append(&[redo(6)]);
        }
        let seg = list_segments(dir.path()).unwrap()[0].1.clone();
        // The segment starts at LSN 0 and has room zero-filled past its end.
        assert_eq!(fs::metadata(&seg).unwrap().len(), PREALLOCATE);
        let len = end;
        {
            let (_, rec) = Wal::open(dir.path()).unwrap();
            assert_eq!(rec.records.len(), 10);
            assert_eq!(rec.cut_bytes, 0);
        }
        // Tear the last record in half and flip a byte: both are cut.
        let f = OpenOptions::new().write(true).open(&seg).unwrap();
        f.set_len(len - 7).unwrap();
        drop(f);
        let (wal, rec) = Wal::open(dir.path()).unwrap();
        assert_eq!(rec.records.len(), 9);
        assert!(rec.cut_bytes > 0);
        // Appends continue after the cut and are readable.
        let lsn = wal.append(&[WalRecord::Commit { txid: TxId(5) }]);
        wal.sync(lsn).unwrap();
        drop(wal);
        let (_, rec) = Wal::open(dir.path()).unwrap();
        assert_eq!(rec.records.len(), 10);
    }

    /// A torn write in the zero-filled room past the log's end (bytes of a
    /// record that never became whole) is zeroed on open: it is cut, it
    /// cannot come back as a record later, and the log goes on after it.
    #[test]
    fn torn_bytes_in_the_allocated_room_are_zeroed_and_the_log_goes_on() {
        use std::os::unix::fs::FileExt;
        let dir = tempfile::tempdir().unwrap();
        let end = {
            let (wal, _) = Wal::open(dir.path()).unwrap();
            commit(&wal, 1);
            wal.durable_lsn().0
        };
        let seg = list_segments(dir.path()).unwrap()[0].1.clone();
        // A whole, valid frame for the LSN 100 bytes past the end: a
        // record the log would take if the bytes before it were records.
        let mut frame = Encoded::of(&[WalRecord::Commit { txid: TxId(9) }])
            .frames
            .remove(0);
        seal_frame(&mut frame.0, end + 100, &frame.1);
        let f = OpenOptions::new().write(true).open(&seg).unwrap();
        f.write_all_at(&frame.0, end + 100).unwrap();
        drop(f);
        let (wal, rec) = Wal::open(dir.path()).unwrap();
        assert_eq!(rec.records.len(), 2);
        let last_nonzero = frame.0.iter().rposition(|&b| b != 0).unwrap();
        assert_eq!(rec.cut_bytes, 100 + last_nonzero as u64 + 1);
        let bytes = fs::read(&seg).unwrap();
        assert!(bytes[end as usize..].iter().all(|&b| b == 0));
        // 100 bytes of records later, the old frame's LSN is reached
        // again; only what was written since counts.
        for tx in 2..=6 {
            commit(&wal, tx);
        }
        assert!(wal.durable_lsn().0 > end + 100);
        drop(wal);
        let (_, rec) = Wal::open(dir.path()).unwrap();
        assert_eq!(rec.cut_bytes, 0);
        assert_eq!(committed(&rec), vec![1, 2, 3, 4, 5, 6]);
    }

    /// A segment left behind by a checkpoint holds its records only; the
    /// new one has room zero-filled once records are synced to it; both
    /// read back whole.
    #[test]
    fn a_finished_segment_is_trimmed_to_its_records() {
        let dir = tempfile::tempdir().unwrap();
        let (wal, _) = Wal::open(dir.path()).unwrap();
        commit(&wal, 1);
        let old_end = wal.durable_lsn().0;
        let start = wal
            .log_checkpoint(CheckpointInfo { next_txid: TxId(2) })
            .unwrap();
        assert_eq!(start.0, old_end);
        commit(&wal, 2);
        let segs = list_segments(dir.path()).unwrap();
        assert_eq!(segs.len(), 2);
        assert_eq!(fs::metadata(&segs[0].1).unwrap().len(), old_end);
        assert_eq!(fs::metadata(&segs[1].1).unwrap().len(), PREALLOCATE);
        drop(wal);
        let (_, rec) = Wal::open_from(dir.path(), None).unwrap();
        assert!(rec.checkpoint.is_some());
        assert_eq!(rec.records.len(), 2);
        assert_eq!(rec.cut_bytes, 0);
    }

    /// Committers at once, with checkpoints among them: each sync returns
    /// only once its records are durable, one turn at a time writes, and
    /// the log reads back whole.
    #[test]
    fn concurrent_commits_and_checkpoints_take_turns() {
        let dir = tempfile::tempdir().unwrap();
        let (wal, _) = Wal::open(dir.path()).unwrap();
        let (threads, per_thread) = (6u64, 80u64);
        std::thread::scope(|s| {
            for t in 0..threads {
                let wal = &wal;
                s.spawn(move || {
                    for i in 0..per_thread {
                        let tx = 1 + t * per_thread + i;
                        let lsn = wal.append(&[redo(tx), WalRecord::Commit { txid: TxId(tx) }]);
                        wal.sync(lsn).unwrap();
                        assert!(wal.durable_lsn() >= lsn, "sync returned before {lsn:?}");
                    }
                });
            }
            let wal = &wal;
            s.spawn(move || {
                for n in 0..4 {
                    wal.log_checkpoint(CheckpointInfo { next_txid: TxId(n) })
                        .unwrap();
                    wal.remove_obsolete().unwrap();
                }
            });
        });
        let commits = threads * per_thread;
        assert!(wal.stats.fsyncs.load(Ordering::Relaxed) <= commits + 8);
        drop(wal);
        let (_, rec) = Wal::open(dir.path()).unwrap();
        assert_eq!(rec.cut_bytes, 0);
        assert_eq!(rec.checkpoint.unwrap().next_txid, TxId(3));
        // After the last checkpoint every redo is followed by its commit.
        let mut open = None;
        for (_, r) in &rec.records {
            match r {
                WalRecord::Redo { txid, .. } => {
                    assert_eq!(open.replace(*txid), None);
                }
                WalRecord::Commit { txid } => assert_eq!(open.take(), Some(*txid)),
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(open, None);
    }

    #[test]
    fn checkpoint_starts_new_segment() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (wal, _) = Wal::open(dir.path()).unwrap();
            commit(&wal, 1);
            wal.checkpoint(CheckpointInfo { next_txid: TxId(2) })
                .unwrap();
            commit(&wal, 2);
        }
        assert_eq!(list_segments(dir.path()).unwrap().len(), 1);
        let (_, rec) = Wal::open(dir.path()).unwrap();
        assert_eq!(rec.checkpoint.unwrap().next_txid, TxId(2));
        assert_eq!(rec.records.len(), 2);
    }

    /// A checkpoint logged without deleting: commits after it append to
    /// the new segment, an open reads from the checkpoint on, and the old
    /// segment goes when deleted later.
    #[test]
    fn a_checkpoint_logged_first_deletes_the_old_segment_later() {
        let dir = tempfile::tempdir().unwrap();
        let (wal, _) = Wal::open(dir.path()).unwrap();
        commit(&wal, 1);
        let at = wal
            .log_checkpoint(CheckpointInfo { next_txid: TxId(2) })
            .unwrap();
        commit(&wal, 2);
        assert_eq!(list_segments(dir.path()).unwrap().len(), 2);
        let (_, rec) = Wal::open(dir.path()).unwrap();
        assert_eq!(rec.checkpoint.unwrap().next_txid, TxId(2));
        assert_eq!(rec.records.len(), 2);
        wal.remove_obsolete().unwrap();
        let segs = list_segments(dir.path()).unwrap();
        assert_eq!(segs.len(), 1);
        assert_eq!(segs[0].0, at.0);
    }

    #[test]
    fn garbage_is_cut_not_replayed() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(segment_name(0)), vec![0xAB; 1000]).unwrap();
        let (_, rec) = Wal::open(dir.path()).unwrap();
        assert!(rec.records.is_empty());
        assert_eq!(rec.cut_bytes, 1000);
    }

    /// With a backup's checkpoint retained, later checkpoints keep every
    /// segment from it on; an open still reads only the last one, and a
    /// restore reads from the retained checkpoint through the later ones.
    #[test]
    fn retained_segments_are_kept_and_replayable_from_a_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let backup_at;
        {
            let (wal, _) = Wal::open(dir.path()).unwrap();
            commit(&wal, 1);
            backup_at = wal
                .checkpoint(CheckpointInfo { next_txid: TxId(2) })
                .unwrap();
            wal.retain_from(Some(backup_at));
            for tx in 2..5 {
                commit(&wal, tx);
                wal.checkpoint(CheckpointInfo {
                    next_txid: TxId(tx + 1),
                })
                .unwrap();
            }
            commit(&wal, 5);
        }
        let segs = list_segments(dir.path()).unwrap();
        assert_eq!(segs.len(), 4, "the backup's segment and the later ones");
        assert_eq!(segs[0].0, backup_at.0);
        let (_, rec) = Wal::open(dir.path()).unwrap();
        assert_eq!(rec.checkpoint.unwrap().next_txid, TxId(5));
        assert_eq!(rec.records.len(), 2);
        let (wal, rec) = Wal::open_from(dir.path(), Some(backup_at)).unwrap();
        assert_eq!(rec.checkpoint.as_ref().unwrap().next_txid, TxId(2));
        assert_eq!(committed(&rec), vec![2, 3, 4, 5]);
        // A newer backup: the older segments go.
        let last = segs.last().unwrap().0;
        wal.remove_before(Lsn(last)).unwrap();
        drop(wal);
        assert_eq!(list_segments(dir.path()).unwrap().len(), 1);
        match Wal::open_from(dir.path(), Some(backup_at)) {
            Err(WalError::Missing(m)) => assert!(m.contains("removed"), "{m}"),
            other => panic!("expected Missing, got {:?}", other.err()),
        }
    }
}
