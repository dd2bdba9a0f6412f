//! The overflow log of extended NDP logging (update NDP §6.2, Fig. 14):
//! the redo of an update job's new versions moves from the device to the
//! host before its transaction commits, so that the host holds what
//! media recovery needs once the device's store is lost.
//!
//! ```text
//!  device  the job's pages (ΔL2P) ──READ_PAGES, 1 MiB at a time──┐
//!  host    overflow/<Start-NDP LSN>.ovf  ◄───────────────────────┘  fsync file + dir
//!          End-NDP (WAL kind 8) names it by that LSN, its size and CRC
//!          commit record
//! ```
//!
//! The redo is physical: the pages as the device wrote them (PAX images
//! with their own checksums), so replaying a file is writing its pages
//! back and mapping them. One file per job; a job of a transaction that
//! aborts has its file removed. While an update job runs, the device
//! reports the pages it has written (`JobStatus::unloaded`, a batch per
//! MiB) and the host appends them to the job's file at once
//! ([`OverflowWriter`], synced every 32 MiB), so that at commit only the
//! last pages move and one fsync remains. Byte layout (little endian):
//!
//! ```text
//!  magic "NDPOVF2\n" | TxId u64 | table u32 | Start-NDP LSN u64
//!  n × (LPN u64 | PPN u64 | page [8192])          in the order they were written
//!  n u32 | crc32 u32 over every byte before it
//! ```
//!
//! (Format 1, `NDPOVF1`, had n in the header; it is still read.)
//!
//! Without a base backup a file is needed only until the device's maps
//! hold its job's pages durably: a checkpoint removes the files of
//! transactions whose End-NDP it covers, and those an open finds (its
//! recovery has put their pages into the maps) go with its next one.
//! While a backup is kept they stay until a newer backup covers them
//! (`crate::backup`): a restore writes their pages back. GC runs log
//! their new pages the same way then.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use ndpdb_formats::codec::Reader;
use ndpdb_formats::page::PAGE_SIZE;
use ndpdb_formats::{Lpn, Lsn, Ppn, SqlState, TableId, TxId};
use ndpdb_link::DeviceClient;

use crate::error::{Error, Result};

const MAGIC_V1: &[u8; 8] = b"NDPOVF1\n";
const MAGIC: &[u8; 8] = b"NDPOVF2\n";
/// Bytes a streaming writer lets accumulate before it syncs them.
const SYNC_EVERY: u64 = 32 << 20;
/// Pages per READ_PAGES while moving a log.
const BATCH_PAGES: usize = 128;
const HEADER: usize = 8 + 8 + 4 + 8;
const ENTRY: usize = 8 + 8 + PAGE_SIZE;

/// Where a job's overflow log is, as its End-NDP record names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverflowRef {
    /// The job's Start-NDP LSN (the file's name).
    pub start: Lsn,
    pub bytes: u64,
    pub crc: u32,
}

/// One overflow log read back.
#[derive(Debug)]
pub struct OverflowLog {
    pub txid: TxId,
    pub table: TableId,
    pub start: Lsn,
    pub pages: Vec<(Lpn, Ppn, Vec<u8>)>,
}

pub(crate) fn dir_of(db_dir: &Path) -> PathBuf {
    db_dir.join("overflow")
}

pub(crate) fn path_of(db_dir: &Path, start: Lsn) -> PathBuf {
    dir_of(db_dir).join(format!("{:020}.ovf", start.0))
}

fn io(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::new(
        SqlState::IO_ERROR,
        format!("could not {what} overflow log \"{}\": {e}", path.display()),
    )
}

/// Moves the log of a job that wrote `pages`: reads them from the device
/// and writes them to the job's file, durably.
pub(crate) fn write(
    db_dir: &Path,
    device: &DeviceClient,
    txid: TxId,
    table: TableId,
    start: Lsn,
    pages: &[(Lpn, Ppn)],
) -> Result<OverflowRef> {
    OverflowWriter::create(db_dir, txid, table, start)?.finish(device, pages)
}

/// A job's overflow log being written: pages appended as the job reports
/// them, the rest and the trailer at commit. Dropped unfinished, it
/// removes its file.
pub(crate) struct OverflowWriter {
    db_dir: PathBuf,
    txid: TxId,
    table: TableId,
    start: Lsn,
    out: Option<Checksummed<BufWriter<File>>>,
    written: rustc_hash::FxHashSet<(Lpn, Ppn)>,
    unsynced: u64,
    /// An append failed: the file is written again, whole, at commit.
    broken: bool,
}

impl OverflowWriter {
    /// Starts the file of the job that logged Start-NDP at `start`.
    pub(crate) fn create(
        db_dir: &Path,
        txid: TxId,
        table: TableId,
        start: Lsn,
    ) -> Result<OverflowWriter> {
        let mut w = OverflowWriter {
            db_dir: db_dir.to_path_buf(),
            txid,
            table,
            start,
            out: None,
            written: Default::default(),
            unsynced: 0,
            broken: false,
        };
        w.open()?;
        Ok(w)
    }

    fn path(&self) -> PathBuf {
        path_of(&self.db_dir, self.start)
    }

    /// (Re)creates the file with its header.
    fn open(&mut self) -> Result<()> {
        // Starting over: what the old writer still buffers must not reach
        // the new file (the same inode) when it drops.
        if let Some(old) = self.out.take() {
            let (_, _, buffered) = old.finish();
            let _ = buffered.into_parts();
        }
        let dir = dir_of(&self.db_dir);
        fs::create_dir_all(&dir).map_err(|e| io("create the directory of", &dir, e))?;
        let path = self.path();
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| io("create", &path, e))?;
        let mut out = Checksummed::new(BufWriter::with_capacity(1 << 20, file));
        let mut header = Vec::with_capacity(HEADER);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&self.txid.0.to_le_bytes());
        header.extend_from_slice(&self.table.0.to_le_bytes());
        header.extend_from_slice(&self.start.0.to_le_bytes());
        out.write(&header).map_err(|e| io("write", &path, e))?;
        self.out = Some(out);
        self.written.clear();
        self.unsynced = 0;
        Ok(())
    }

    /// Appends pages the job has written (read from the device now);
    /// returns the bytes appended. A failure is kept for
    /// [`OverflowWriter::finish`], which starts over.
    pub(crate) fn append(&mut self, device: &DeviceClient, pages: &[(Lpn, Ppn)]) -> u64 {
        if self.broken {
            return 0;
        }
        let before = self.written.len();
        if self.try_append(device, pages).is_err() {
            self.broken = true;
            return 0;
        }
        ((self.written.len() - before) * ENTRY) as u64
    }

    fn try_append(&mut self, device: &DeviceClient, pages: &[(Lpn, Ppn)]) -> Result<()> {
        let path = self.path();
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| Error::new(SqlState::INTERNAL_ERROR, "overflow log already finished"))?;
        for batch in pages.chunks(BATCH_PAGES) {
            let images = device.read_pages(batch.iter().map(|(_, p)| *p).collect())?;
            for ((lpn, ppn), image) in batch.iter().zip(images) {
                if image.len() != PAGE_SIZE {
                    return Err(Error::new(
                        SqlState::DATA_CORRUPTED,
                        format!("device page {} has {} bytes", ppn.0, image.len()),
                    ));
                }
                if !self.written.insert((*lpn, *ppn)) {
                    continue;
                }
                out.write(&lpn.0.to_le_bytes())
                    .and_then(|_| out.write(&ppn.0.to_le_bytes()))
                    .and_then(|_| out.write(&image))
                    .map_err(|e| io("write", &path, e))?;
                self.unsynced += ENTRY as u64;
            }
        }
        if self.unsynced >= SYNC_EVERY {
            // Keep what commit must sync small.
            out.flush_inner()
                .and_then(|f| f.sync_data())
                .map_err(|e| io("sync", &path, e))?;
            self.unsynced = 0;
        }
        Ok(())
    }

    /// Appends the pages of `all` (the job's ΔL2P) not written yet, then
    /// the trailer, and makes the file durable. Every page appended
    /// before must be one of `all`.
    pub(crate) fn finish(
        mut self,
        device: &DeviceClient,
        all: &[(Lpn, Ppn)],
    ) -> Result<OverflowRef> {
        let expected: rustc_hash::FxHashSet<(Lpn, Ppn)> = all.iter().copied().collect();
        if self.broken || self.written.iter().any(|p| !expected.contains(p)) {
            self.broken = false;
            self.open()?;
        }
        let rest: Vec<(Lpn, Ppn)> = all
            .iter()
            .filter(|p| !self.written.contains(p))
            .copied()
            .collect();
        self.try_append(device, &rest)?;
        let path = self.path();
        let mut out = self
            .out
            .take()
            .ok_or_else(|| Error::new(SqlState::INTERNAL_ERROR, "overflow log already finished"))?;
        out.write(&(self.written.len() as u32).to_le_bytes())
            .map_err(|e| io("write", &path, e))?;
        let (crc, bytes) = out.finish_durably().map_err(|e| io("write", &path, e))?;
        let dir = dir_of(&self.db_dir);
        File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io("sync the directory of", &path, e))?;
        self.written.clear();
        Ok(OverflowRef {
            start: self.start,
            bytes,
            crc,
        })
    }
}

/// An [`OverflowWriter`] fed on a thread of its own: the NDP status loop
/// hands it the pages the job reports and goes straight back to the
/// device (a job that runs out of pages gets more without waiting for a
/// copy or an fsync). Dropped, it stops and its file goes.
pub(crate) struct OverflowStream {
    pages: Option<std::sync::mpsc::Sender<Vec<(Lpn, Ppn)>>>,
    thread: Option<std::thread::JoinHandle<OverflowWriter>>,
}

impl OverflowStream {
    /// Starts the thread; `appended(bytes)` counts what it writes.
    pub(crate) fn start(
        mut writer: OverflowWriter,
        device: DeviceClient,
        appended: impl Fn(u64) + Send + 'static,
    ) -> Result<OverflowStream> {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<(Lpn, Ppn)>>();
        let thread = std::thread::Builder::new()
            .name("overflow-log".into())
            .spawn(move || {
                for pages in rx {
                    appended(writer.append(&device, &pages));
                }
                writer
            })
            .map_err(|e| {
                Error::new(
                    SqlState::INTERNAL_ERROR,
                    format!("cannot start the overflow-log thread: {e}"),
                )
            })?;
        Ok(OverflowStream {
            pages: Some(tx),
            thread: Some(thread),
        })
    }

    /// Queues pages the job has written.
    pub(crate) fn send(&self, pages: &[(Lpn, Ppn)]) {
        if let Some(tx) = &self.pages {
            // A thread that died left its writer broken: commit rewrites.
            let _ = tx.send(pages.to_vec());
        }
    }

    /// Waits for the queued pages; the writer for the commit.
    pub(crate) fn into_writer(mut self) -> Result<OverflowWriter> {
        self.pages = None;
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .ok_or_else(|| Error::new(SqlState::INTERNAL_ERROR, "the overflow-log thread panicked"))
    }
}

impl Drop for OverflowStream {
    fn drop(&mut self) {
        self.pages = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for OverflowWriter {
    fn drop(&mut self) {
        if self.out.is_some() {
            self.out = None;
            let _ = remove(&self.db_dir, self.start);
        }
    }
}

/// Reads and checks the log `r` names.
pub fn read(db_dir: &Path, r: &OverflowRef) -> Result<OverflowLog> {
    let path = path_of(db_dir, r.start);
    let bytes = fs::read(&path).map_err(|e| io("read", &path, e))?;
    let corrupt = |what: String| {
        Error::from(ndpdb_formats::Error::corrupted(format!(
            "overflow log \"{}\": {what}",
            path.display()
        )))
    };
    if bytes.len() as u64 != r.bytes || bytes.len() < HEADER + 4 {
        return Err(corrupt(format!(
            "{} bytes, End-NDP says {}",
            bytes.len(),
            r.bytes
        )));
    }
    let (body, tail) = bytes.split_at(bytes.len() - 4);
    let stored = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
    let crc = crc32fast::hash(body);
    if crc != stored || crc != r.crc {
        return Err(corrupt(format!(
            "checksum {crc:08x}, stored {stored:08x}, End-NDP says {:08x}",
            r.crc
        )));
    }
    let mut rd = Reader::new(body);
    let decode = |e: ndpdb_formats::Error| corrupt(e.to_string());
    let magic = rd.take(8).map_err(decode)?;
    let v1 = magic == MAGIC_V1;
    if !v1 && magic != MAGIC {
        return Err(corrupt("not an overflow log".into()));
    }
    let txid = TxId(rd.u64().map_err(decode)?);
    let table = TableId(rd.u32().map_err(decode)?);
    let start = Lsn(rd.u64().map_err(decode)?);
    let n = if v1 {
        rd.count(ENTRY).map_err(decode)?
    } else {
        // The count is the body's last four bytes.
        let entries = rd.remaining().saturating_sub(4);
        let tail = &body[body.len() - 4..];
        let n = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) as usize;
        if !entries.is_multiple_of(ENTRY) || entries / ENTRY != n {
            return Err(corrupt(format!("{entries} bytes of entries for {n} pages")));
        }
        n
    };
    if start != r.start {
        return Err(corrupt(format!("written for LSN {}", start.0)));
    }
    let mut pages = Vec::with_capacity(n);
    for _ in 0..n {
        let lpn = Lpn(rd.u64().map_err(decode)?);
        let ppn = Ppn(rd.u64().map_err(decode)?);
        pages.push((lpn, ppn, rd.take(PAGE_SIZE).map_err(decode)?.to_vec()));
    }
    if !v1 {
        rd.u32().map_err(decode)?;
    }
    rd.finish("overflow log").map_err(decode)?;
    Ok(OverflowLog {
        txid,
        table,
        start,
        pages,
    })
}

/// Takes pages of an overflow log as they are read: (LPN, PPN, image).
pub type PageSink<'a> = dyn FnMut(&[(Lpn, Ppn, Vec<u8>)]) -> Result<()> + 'a;

/// Streams the pages of the log `r` names to `f`, `batch` at a time,
/// each page's checksum checked as it is read and the file's size, magic,
/// LSN, count and CRC by the end (so a restore never holds a whole log in
/// memory; a damaged file fails it, after some pages were handed on).
/// Returns the (LPN, PPN) of every page.
pub fn for_each_page(
    db_dir: &Path,
    r: &OverflowRef,
    batch: usize,
    f: &mut PageSink<'_>,
) -> Result<Vec<(Lpn, Ppn)>> {
    use std::io::Read;
    let path = path_of(db_dir, r.start);
    let corrupt = |what: String| {
        Error::from(ndpdb_formats::Error::corrupted(format!(
            "overflow log \"{}\": {what}",
            path.display()
        )))
    };
    let file = File::open(&path).map_err(|e| io("read", &path, e))?;
    let size = file.metadata().map_err(|e| io("read", &path, e))?.len();
    if size != r.bytes || size < (HEADER + 8) as u64 {
        return Err(corrupt(format!("{size} bytes, End-NDP says {}", r.bytes)));
    }
    let mut input = std::io::BufReader::with_capacity(1 << 20, file);
    let mut crc = crc32fast::Hasher::new();
    let mut take = |buf: &mut [u8], crc: &mut crc32fast::Hasher| -> Result<()> {
        input.read_exact(buf).map_err(|e| io("read", &path, e))?;
        crc.update(buf);
        Ok(())
    };
    let mut header = [0u8; HEADER];
    take(&mut header, &mut crc)?;
    let v1 = &header[..8] == MAGIC_V1;
    if !v1 && &header[..8] != MAGIC {
        return Err(corrupt("not an overflow log".into()));
    }
    let start = u64::from_le_bytes(header[20..28].try_into().unwrap_or_default());
    if start != r.start.0 {
        return Err(corrupt(format!("written for LSN {start}")));
    }
    let body = size - HEADER as u64 - 4;
    let n = if v1 {
        let mut n = [0u8; 4];
        take(&mut n, &mut crc)?;
        u32::from_le_bytes(n) as u64
    } else {
        (body - 4) / ENTRY as u64
    };
    // v1: the count before the entries; v2: after them.
    let entries_bytes = body - 4;
    if n * ENTRY as u64 != entries_bytes {
        return Err(corrupt(format!(
            "{entries_bytes} bytes of entries for {n} pages"
        )));
    }
    let mut all = Vec::with_capacity(n as usize);
    let mut pages: Vec<(Lpn, Ppn, Vec<u8>)> = Vec::with_capacity(batch);
    for i in 0..n {
        let mut ids = [0u8; 16];
        take(&mut ids, &mut crc)?;
        let mut image = vec![0u8; PAGE_SIZE];
        take(&mut image, &mut crc)?;
        let lpn = Lpn(u64::from_le_bytes(ids[..8].try_into().unwrap_or_default()));
        let ppn = Ppn(u64::from_le_bytes(ids[8..].try_into().unwrap_or_default()));
        ndpdb_formats::page::PageRef::parse_verified(&image)
            .map_err(|e| corrupt(format!("page {}: {e}", ppn.0)))?;
        all.push((lpn, ppn));
        pages.push((lpn, ppn, image));
        if pages.len() == batch || i + 1 == n {
            f(&pages)?;
            pages.clear();
        }
    }
    if !v1 {
        let mut count = [0u8; 4];
        take(&mut count, &mut crc)?;
        if u32::from_le_bytes(count) as u64 != n {
            return Err(corrupt("page count mismatch".into()));
        }
    }
    let mut stored = [0u8; 4];
    input
        .read_exact(&mut stored)
        .map_err(|e| io("read", &path, e))?;
    let crc = crc.finalize();
    if crc != u32::from_le_bytes(stored) || crc != r.crc {
        return Err(corrupt(format!(
            "checksum {crc:08x}, stored {:08x}, End-NDP says {:08x}",
            u32::from_le_bytes(stored),
            r.crc
        )));
    }
    Ok(all)
}

/// Removes the log of the job that started at `start` (if any).
pub(crate) fn remove(db_dir: &Path, start: Lsn) -> Result<()> {
    let path = path_of(db_dir, start);
    match fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io("remove", &path, e)),
    }
}

/// The Start-NDP LSNs of the log files there are (at open, before any
/// job of this run).
pub(crate) fn list(db_dir: &Path) -> Result<Vec<Lsn>> {
    let dir = dir_of(db_dir);
    let entries = match fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io("list", &dir, e)),
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if let Some(n) = name.strip_suffix(".ovf").and_then(|s| s.parse().ok()) {
            out.push(Lsn(n));
        }
    }
    Ok(out)
}

/// A writer that checksums and counts what passes through it.
pub(crate) struct Checksummed<W: Write> {
    inner: W,
    crc: crc32fast::Hasher,
    bytes: u64,
}

impl<W: Write> Checksummed<W> {
    pub(crate) fn new(inner: W) -> Self {
        Checksummed {
            inner,
            crc: crc32fast::Hasher::new(),
            bytes: 0,
        }
    }

    pub(crate) fn write(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.crc.update(b);
        self.bytes += b.len() as u64;
        self.inner.write_all(b)
    }

    pub(crate) fn finish(self) -> (u32, u64, W) {
        (self.crc.finalize(), self.bytes, self.inner)
    }
}

impl Checksummed<BufWriter<File>> {
    /// Writes the buffer out; the file, to sync.
    fn flush_inner(&mut self) -> std::io::Result<&File> {
        self.inner.flush()?;
        Ok(self.inner.get_ref())
    }

    /// Ends the file with the CRC of everything written and makes it
    /// durable; returns that CRC and the file's size.
    pub(crate) fn finish_durably(self) -> std::io::Result<(u32, u64)> {
        let (crc, bytes, mut w) = self.finish();
        w.write_all(&crc.to_le_bytes())?;
        w.flush()?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok((crc, bytes + 4))
    }
}

#[cfg(test)]
mod tests {
    //! The overflow log against a device that holds a few pages: written
    //! while the job runs and at commit, read back whole and streamed,
    //! and refused — never a panic — once cut short or damaged.

    use std::collections::HashMap;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    use ndpdb_formats::page::PageBuf;
    use ndpdb_formats::DataType;
    use ndpdb_link::{CommandHandler, InProcessTransport, LinkError, Request, Response};

    use super::*;

    const TX: TxId = TxId(42);
    const TABLE: TableId = TableId(3);
    const START: Lsn = Lsn(4096);

    /// A device answering READ_PAGES from its pages; the next
    /// `fail_reads` reads fail as an I/O error would.
    struct Pages {
        pages: HashMap<Ppn, Vec<u8>>,
        fail_reads: AtomicU32,
    }

    impl CommandHandler for Pages {
        fn handle(&self, frame: &[u8]) -> Vec<u8> {
            match Request::decode(frame) {
                Ok(Request::ReadPages(ppns)) => {
                    let failing = self
                        .fail_reads
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                        .is_ok();
                    if failing {
                        return Response::encode_error(&LinkError::Io("injected".into()));
                    }
                    Response::Pages(ppns.iter().map(|p| self.pages[p].clone()).collect()).encode()
                }
                _ => Response::encode_error(&LinkError::Unsupported("not here".into())),
            }
        }
    }

    /// A job's pages: LPN 100 + i on PPN 7 + i, each a sealed page image
    /// of its own.
    fn job(n: u64) -> Vec<(Lpn, Ppn)> {
        (0..n).map(|i| (Lpn(100 + i), Ppn(7 + i))).collect()
    }

    fn device(pages: &[(Lpn, Ppn)], fail_reads: u32) -> (DeviceClient, Arc<Pages>) {
        let images = pages
            .iter()
            .map(|&(lpn, ppn)| {
                let image = PageBuf::new(TABLE, lpn, &[DataType::Int]).into_sealed_image();
                (ppn, image)
            })
            .collect();
        let dev = Arc::new(Pages {
            pages: images,
            fail_reads: AtomicU32::new(fail_reads),
        });
        let client = DeviceClient::new(Arc::new(InProcessTransport::new(dev.clone())));
        (client, dev)
    }

    /// The log of a job that wrote `pages`, the first `streamed` of them
    /// appended while it ran.
    fn written(dir: &Path, pages: &[(Lpn, Ppn)], streamed: usize) -> (OverflowRef, Arc<Pages>) {
        let (client, dev) = device(pages, 0);
        let mut w = OverflowWriter::create(dir, TX, TABLE, START).unwrap();
        let appended = w.append(&client, &pages[..streamed]);
        assert_eq!(appended, (streamed * ENTRY) as u64);
        (w.finish(&client, pages).unwrap(), dev)
    }

    fn assert_corrupt(dir: &Path, r: &OverflowRef) {
        let e = read(dir, r).unwrap_err();
        assert_eq!(e.code, SqlState::DATA_CORRUPTED, "read: {e:?}");
        let e = for_each_page(dir, r, 2, &mut |_| Ok(())).unwrap_err();
        assert_eq!(e.code, SqlState::DATA_CORRUPTED, "for_each_page: {e:?}");
    }

    #[test]
    fn a_job_s_pages_read_back_as_the_device_wrote_them() {
        let dir = tempfile::tempdir().unwrap();
        let pages = job(3);
        let (r, dev) = written(dir.path(), &pages, 2);
        assert_eq!(r.start, START);
        assert_eq!(r.bytes, (HEADER + 3 * ENTRY + 4 + 4) as u64);
        assert_eq!(list(dir.path()).unwrap(), vec![START]);

        let log = read(dir.path(), &r).unwrap();
        assert_eq!((log.txid, log.table, log.start), (TX, TABLE, START));
        let got: Vec<(Lpn, Ppn)> = log.pages.iter().map(|(l, p, _)| (*l, *p)).collect();
        assert_eq!(got, pages, "in the order they were written");
        for (_, ppn, image) in &log.pages {
            assert_eq!(image, &dev.pages[ppn]);
        }

        // A restore streams them, `batch` at a time.
        let mut batches = Vec::new();
        let all = for_each_page(dir.path(), &r, 2, &mut |b| {
            batches.push(b.iter().map(|(l, _, _)| *l).collect::<Vec<_>>());
            Ok(())
        })
        .unwrap();
        assert_eq!(all, pages);
        assert_eq!(batches, vec![vec![Lpn(100), Lpn(101)], vec![Lpn(102)]]);

        // A checkpoint that covered the commit removes it (twice is fine).
        remove(dir.path(), START).unwrap();
        remove(dir.path(), START).unwrap();
        assert!(list(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn a_page_the_job_reports_twice_is_logged_once() {
        let dir = tempfile::tempdir().unwrap();
        let pages = job(2);
        let (client, _dev) = device(&pages, 0);
        let mut w = OverflowWriter::create(dir.path(), TX, TABLE, START).unwrap();
        assert_eq!(w.append(&client, &pages[..1]), ENTRY as u64);
        assert_eq!(w.append(&client, &pages[..1]), 0);
        let r = w.finish(&client, &pages).unwrap();
        assert_eq!(read(dir.path(), &r).unwrap().pages.len(), 2);
    }

    #[test]
    fn a_failed_append_is_redone_whole_at_commit() {
        // The device read failed while the job ran: nothing is appended
        // then, and the commit writes the file again from the start.
        let dir = tempfile::tempdir().unwrap();
        let pages = job(3);
        let (client, _dev) = device(&pages, 1);
        let mut w = OverflowWriter::create(dir.path(), TX, TABLE, START).unwrap();
        assert_eq!(w.append(&client, &pages[..2]), 0);
        assert_eq!(w.append(&client, &pages[2..]), 0, "broken until the commit");
        let r = w.finish(&client, &pages).unwrap();
        let got: Vec<(Lpn, Ppn)> = read(dir.path(), &r)
            .unwrap()
            .pages
            .iter()
            .map(|(l, p, _)| (*l, *p))
            .collect();
        assert_eq!(got, pages);
    }

    #[test]
    fn streamed_pages_outside_the_job_s_final_delta_l2p_are_dropped() {
        // What the commit (and lock violation, which moves the logs while
        // waiters take the job's locks) relies on: the file holds exactly
        // the ΔL2P that End-NDP names, whatever was streamed before.
        let dir = tempfile::tempdir().unwrap();
        let pages = job(3);
        let (client, _dev) = device(&pages, 0);
        let mut w = OverflowWriter::create(dir.path(), TX, TABLE, START).unwrap();
        w.append(&client, &pages);
        let r = w.finish(&client, &pages[1..]).unwrap();
        let got: Vec<(Lpn, Ppn)> = read(dir.path(), &r)
            .unwrap()
            .pages
            .iter()
            .map(|(l, p, _)| (*l, *p))
            .collect();
        assert_eq!(got, pages[1..].to_vec());
    }

    #[test]
    fn a_stream_hands_its_writer_back_for_the_commit() {
        let dir = tempfile::tempdir().unwrap();
        let pages = job(4);
        let (client, _dev) = device(&pages, 0);
        let writer = OverflowWriter::create(dir.path(), TX, TABLE, START).unwrap();
        let counted = Arc::new(AtomicU32::new(0));
        let c = counted.clone();
        let stream = OverflowStream::start(writer, client.clone(), move |b| {
            c.fetch_add(b as u32, Ordering::SeqCst);
        })
        .unwrap();
        stream.send(&pages[..2]);
        stream.send(&pages[2..3]);
        let writer = stream.into_writer().unwrap();
        assert_eq!(counted.load(Ordering::SeqCst), (3 * ENTRY) as u32);
        let r = writer.finish(&client, &pages).unwrap();
        assert_eq!(read(dir.path(), &r).unwrap().pages.len(), 4);
    }

    #[test]
    fn an_aborted_job_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let pages = job(2);
        let (client, _dev) = device(&pages, 0);
        let mut w = OverflowWriter::create(dir.path(), TX, TABLE, START).unwrap();
        w.append(&client, &pages);
        assert_eq!(list(dir.path()).unwrap(), vec![START]);
        drop(w);
        assert!(list(dir.path()).unwrap().is_empty());
        // So is a stream dropped before the commit.
        let w = OverflowWriter::create(dir.path(), TX, TABLE, START).unwrap();
        let stream = OverflowStream::start(w, client, |_| {}).unwrap();
        stream.send(&pages);
        drop(stream);
        assert!(list(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn a_crash_truncated_tail_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let pages = job(3);
        let (r, _dev) = written(dir.path(), &pages, 1);
        let path = path_of(dir.path(), START);
        let whole = fs::read(&path).unwrap();
        for keep in [
            0,
            7,
            HEADER,
            HEADER + 10,
            HEADER + ENTRY,
            HEADER + 2 * ENTRY + 100,
            whole.len() - 4,
            whole.len() - 1,
        ] {
            fs::write(&path, &whole[..keep]).unwrap();
            // As End-NDP names it, and as if it named the short file.
            assert_corrupt(dir.path(), &r);
            let short = OverflowRef {
                bytes: keep as u64,
                ..r
            };
            for result in [
                read(dir.path(), &short).map(|_| ()),
                for_each_page(dir.path(), &short, 2, &mut |_| Ok(())).map(|_| ()),
            ] {
                let e = result.unwrap_err();
                assert_eq!(e.code, SqlState::DATA_CORRUPTED, "{keep} bytes: {e:?}");
            }
        }
    }

    #[test]
    fn corrupt_bytes_are_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let pages = job(2);
        let (r, _dev) = written(dir.path(), &pages, 0);
        let path = path_of(dir.path(), START);
        let whole = fs::read(&path).unwrap();
        // The magic, the Start-NDP LSN, a page's id, a page's image, the
        // count and the CRC.
        for at in [
            0,
            HEADER - 1,
            HEADER + 3,
            HEADER + 16 + 1000,
            whole.len() - 6,
            whole.len() - 1,
        ] {
            let mut bad = whole.clone();
            bad[at] ^= 0x20;
            fs::write(&path, &bad).unwrap();
            assert_corrupt(dir.path(), &r);
        }
        // A file of another job, or from before End-NDP's CRC.
        fs::write(&path, &whole).unwrap();
        assert_corrupt(
            dir.path(),
            &OverflowRef {
                crc: r.crc ^ 1,
                ..r
            },
        );
        fs::write(path_of(dir.path(), Lsn(1)), &whole).unwrap();
        assert_corrupt(dir.path(), &OverflowRef { start: Lsn(1), ..r });
        // A missing file is an I/O error.
        remove(dir.path(), START).unwrap();
        assert_eq!(read(dir.path(), &r).unwrap_err().code, SqlState::IO_ERROR);
    }
}
