//! The files of a base backup and the database's backup horizon; byte
//! layouts in docs/FORMATS.md. Every file ends with a CRC-32 of what
//! precedes it; a reader checks sizes, magic, ranges and checksums and
//! answers `Corrupted` (XX001), never a panic.

use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use ndpdb_formats::codec::{Reader, Writer};
use ndpdb_formats::ids::{MAX_LPN, MAX_VID};
use ndpdb_formats::page::{PageRef, PAGE_SIZE};
use ndpdb_formats::{Lsn, Ppn, SqlState, TableId, TxId};
use ndpdb_link::MapRuns;

use crate::error::{Error, Result};
use crate::ndp::overflow_log::Checksummed;

pub(crate) const LABEL: &str = "backup_label";
pub(crate) const MAPS: &str = "maps.bin";
pub(crate) const PAGES: &str = "pages.dat";
pub(crate) const CATALOG: &str = "catalog.bin";
/// In the database directory: the checkpoint of the newest backup.
pub(crate) const HORIZON: &str = "backup.horizon";

const LABEL_MAGIC: &[u8; 8] = b"NDPBKL1\n";
const MAPS_MAGIC: &[u8; 8] = b"NDPBKM1\n";
const PAGES_MAGIC: &[u8; 8] = b"NDPBKP1\n";
const HORIZON_MAGIC: &[u8; 8] = b"NDPBKH1\n";
const PAGE_ENTRY: usize = 8 + PAGE_SIZE;

/// What a backup is: written last, so a backup without one is unfinished.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackupLabel {
    /// The checkpoint the backup was taken at: a restore replays the WAL
    /// from here.
    pub checkpoint: Lsn,
    pub next_txid: TxId,
    pub pages: u64,
    /// Size and CRC-32 of `pages.dat` and `maps.bin`.
    pub pages_file: (u64, u32),
    pub maps_file: (u64, u32),
    /// Seconds since the Unix epoch when the backup finished.
    pub finished_at: u64,
}

fn corrupt(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::from(ndpdb_formats::Error::corrupted(format!(
        "backup file \"{}\": {what}",
        path.display()
    )))
}

pub(crate) fn io(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::new(
        SqlState::IO_ERROR,
        format!("could not {what} \"{}\": {e}", path.display()),
    )
}

/// Writes `bytes` + their CRC to `path` durably (temporary name, fsync,
/// rename, directory fsync).
fn write_checked(path: &Path, mut bytes: Vec<u8>) -> Result<()> {
    let crc = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
    let tmp = path.with_extension("tmp");
    (|| -> std::io::Result<()> {
        let mut f = File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent() {
            File::open(dir)?.sync_all()?;
        }
        Ok(())
    })()
    .map_err(|e| io("write", path, e))
}

/// Reads `path` and checks its trailing CRC; returns the bytes before it.
fn read_checked(path: &Path) -> Result<Vec<u8>> {
    let mut bytes = fs::read(path).map_err(|e| io("read", path, e))?;
    if bytes.len() < 4 {
        return Err(corrupt(path, "too short"));
    }
    let tail = bytes.split_off(bytes.len() - 4);
    if crc32fast::hash(&bytes).to_le_bytes() != tail[..] {
        return Err(corrupt(path, "checksum mismatch"));
    }
    Ok(bytes)
}

impl BackupLabel {
    pub(crate) fn write(&self, dir: &Path) -> Result<()> {
        let mut w = Writer::new();
        w.raw(LABEL_MAGIC)
            .u64(self.checkpoint.0)
            .u64(self.next_txid.0)
            .u64(self.pages)
            .u64(self.pages_file.0)
            .u32(self.pages_file.1)
            .u64(self.maps_file.0)
            .u32(self.maps_file.1)
            .u64(self.finished_at);
        write_checked(&dir.join(LABEL), w.into_inner())
    }

    /// The label of the backup in `dir`.
    pub fn read(dir: &Path) -> Result<BackupLabel> {
        let path = dir.join(LABEL);
        if !path.exists() {
            return Err(Error::new(
                SqlState::UNDEFINED_FILE,
                format!(
                    "\"{}\" is not a complete backup: it has no {LABEL}",
                    dir.display()
                ),
            ));
        }
        let bytes = read_checked(&path)?;
        let mut r = Reader::new(&bytes);
        let decode = |e: ndpdb_formats::Error| corrupt(&path, e);
        if r.take(8).map_err(decode)? != LABEL_MAGIC {
            return Err(corrupt(&path, "not a backup label"));
        }
        let label = BackupLabel {
            checkpoint: Lsn(r.u64().map_err(decode)?),
            next_txid: TxId(r.u64().map_err(decode)?),
            pages: r.u64().map_err(decode)?,
            pages_file: (r.u64().map_err(decode)?, r.u32().map_err(decode)?),
            maps_file: (r.u64().map_err(decode)?, r.u32().map_err(decode)?),
            finished_at: r.u64().map_err(decode)?,
        };
        r.finish("backup label").map_err(decode)?;
        Ok(label)
    }
}

/// The device's maps at the backup's checkpoint.
pub(crate) struct BackupMaps {
    pub l2p: MapRuns,
    pub vids: Vec<(TableId, MapRuns)>,
}

impl BackupMaps {
    /// Writes `maps.bin`; returns its size and CRC.
    pub(crate) fn write(&self, dir: &Path) -> Result<(u64, u32)> {
        let mut w = Writer::new();
        w.raw(MAPS_MAGIC);
        self.l2p.encode(&mut w);
        w.u32(self.vids.len() as u32);
        for (t, runs) in &self.vids {
            w.u32(t.0);
            runs.encode(&mut w);
        }
        let bytes = w.into_inner();
        let crc = crc32fast::hash(&bytes);
        let size = bytes.len() as u64 + 4;
        write_checked(&dir.join(MAPS), bytes)?;
        Ok((size, crc))
    }

    pub(crate) fn read(dir: &Path, label: &BackupLabel) -> Result<BackupMaps> {
        let path = dir.join(MAPS);
        let bytes = read_checked(&path)?;
        if (bytes.len() as u64 + 4, crc32fast::hash(&bytes)) != label.maps_file {
            return Err(corrupt(&path, "not the file its label names"));
        }
        let mut r = Reader::new(&bytes);
        let decode = |e: ndpdb_formats::Error| corrupt(&path, e);
        let link = |e: ndpdb_link::LinkError| corrupt(&path, e);
        if r.take(8).map_err(decode)? != MAPS_MAGIC {
            return Err(corrupt(&path, "not a backup's maps"));
        }
        let l2p = MapRuns::decode(&mut r, MAX_LPN + 1).map_err(link)?;
        let n = r.count(8).map_err(decode)?;
        let mut vids = Vec::with_capacity(n);
        for _ in 0..n {
            let t = TableId(r.u32().map_err(decode)?);
            vids.push((t, MapRuns::decode(&mut r, MAX_VID).map_err(link)?));
        }
        r.finish("backup maps").map_err(decode)?;
        Ok(BackupMaps { l2p, vids })
    }
}

/// Streams the backed-up pages into `pages.dat`.
pub(crate) struct PagesWriter {
    path: PathBuf,
    out: Checksummed<BufWriter<File>>,
    pages: u64,
}

impl PagesWriter {
    /// Starts the file for `n` pages.
    pub(crate) fn create(dir: &Path, n: u64) -> Result<PagesWriter> {
        let path = dir.join(PAGES);
        let file = OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&path)
            .map_err(|e| io("create", &path, e))?;
        let mut out = Checksummed::new(BufWriter::with_capacity(1 << 20, file));
        let mut head = PAGES_MAGIC.to_vec();
        head.extend_from_slice(&n.to_le_bytes());
        out.write(&head).map_err(|e| io("write", &path, e))?;
        Ok(PagesWriter {
            path,
            out,
            pages: 0,
        })
    }

    pub(crate) fn push(&mut self, ppn: Ppn, image: &[u8]) -> Result<()> {
        if image.len() != PAGE_SIZE {
            return Err(Error::new(
                SqlState::DATA_CORRUPTED,
                format!("device page {} has {} bytes", ppn.0, image.len()),
            ));
        }
        self.out
            .write(&ppn.0.to_le_bytes())
            .and_then(|_| self.out.write(image))
            .map_err(|e| io("write", &self.path, e))?;
        self.pages += 1;
        Ok(())
    }

    /// Ends the file durably; returns its size and CRC.
    pub(crate) fn finish(self) -> Result<(u64, u32)> {
        let (crc, bytes) = self
            .out
            .finish_durably()
            .map_err(|e| io("write", &self.path, e))?;
        Ok((bytes, crc))
    }
}

/// Reads `pages.dat` batch by batch; each page's own checksum is checked
/// as it is read, the file's CRC by [`PagesReader::finish`].
pub(crate) struct PagesReader {
    path: PathBuf,
    input: BufReader<File>,
    crc: crc32fast::Hasher,
    left: u64,
    expected: (u64, u32),
}

impl PagesReader {
    pub(crate) fn open(dir: &Path, label: &BackupLabel) -> Result<PagesReader> {
        let path = dir.join(PAGES);
        let file = File::open(&path).map_err(|e| io("open", &path, e))?;
        let len = file.metadata().map_err(|e| io("read", &path, e))?.len();
        if len != label.pages_file.0 || len != 16 + label.pages * PAGE_ENTRY as u64 + 4 {
            return Err(corrupt(
                &path,
                format!(
                    "{len} bytes, the label says {} pages in {} bytes",
                    label.pages, label.pages_file.0
                ),
            ));
        }
        let mut r = PagesReader {
            path,
            input: BufReader::with_capacity(1 << 20, file),
            crc: crc32fast::Hasher::new(),
            left: label.pages,
            expected: label.pages_file,
        };
        let mut head = [0u8; 16];
        r.read_exact(&mut head)?;
        if &head[..8] != PAGES_MAGIC || head[8..] != label.pages.to_le_bytes() {
            return Err(corrupt(&r.path, "not the pages of this backup"));
        }
        Ok(r)
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<()> {
        self.input
            .read_exact(buf)
            .map_err(|e| io("read", &self.path, e))?;
        self.crc.update(buf);
        Ok(())
    }

    /// Up to `max` more pages (none at the end).
    pub(crate) fn next_batch(&mut self, max: usize) -> Result<Vec<(Ppn, Vec<u8>)>> {
        let n = self.left.min(max as u64) as usize;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let mut ppn = [0u8; 8];
            self.read_exact(&mut ppn)?;
            let mut image = vec![0u8; PAGE_SIZE];
            self.read_exact(&mut image)?;
            let ppn = Ppn(u64::from_le_bytes(ppn));
            PageRef::parse_verified(&image)
                .map_err(|e| corrupt(&self.path, format!("page {}: {e}", ppn.0)))?;
            out.push((ppn, image));
        }
        self.left -= n as u64;
        Ok(out)
    }

    /// Checks the file's CRC once every page is read.
    pub(crate) fn finish(mut self) -> Result<()> {
        let mut tail = [0u8; 4];
        self.input
            .read_exact(&mut tail)
            .map_err(|e| io("read", &self.path, e))?;
        let crc = self.crc.finalize();
        if self.left != 0 || u32::from_le_bytes(tail) != crc || crc != self.expected.1 {
            return Err(corrupt(&self.path, "checksum mismatch"));
        }
        Ok(())
    }
}

/// The checkpoint of the newest complete backup of the database in
/// `db_dir`, if it has one.
pub(crate) fn read_horizon(db_dir: &Path) -> Result<Option<Lsn>> {
    let path = db_dir.join(HORIZON);
    if !path.exists() {
        return Ok(None);
    }
    let bytes = read_checked(&path)?;
    let mut r = Reader::new(&bytes);
    let decode = |e: ndpdb_formats::Error| corrupt(&path, e);
    if r.take(8).map_err(decode)? != HORIZON_MAGIC {
        return Err(corrupt(&path, "not a backup horizon"));
    }
    let lsn = Lsn(r.u64().map_err(decode)?);
    r.finish("backup horizon").map_err(decode)?;
    Ok(Some(lsn))
}

pub(crate) fn write_horizon(db_dir: &Path, at: Lsn) -> Result<()> {
    let mut w = Writer::new();
    w.raw(HORIZON_MAGIC).u64(at.0);
    write_checked(&db_dir.join(HORIZON), w.into_inner())
}
