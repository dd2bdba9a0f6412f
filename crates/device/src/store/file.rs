//! The page store's file medium: page `p` at byte `p × 8 KiB` of one
//! file, mapped read-only for the PEs (remapped when the file grows).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use memmap2::{Mmap, MmapOptions};
use parking_lot::RwLock;

use ndpdb_formats::page::PAGE_SIZE;
use ndpdb_formats::Ppn;
use ndpdb_link::Result;

use super::io;

pub(super) struct FilePages {
    file: File,
    /// The file mapped read-only for processing elements (remapped when
    /// the store grows past it).
    map: RwLock<Option<Arc<Mmap>>>,
}

impl FilePages {
    /// Opens (or creates) the file; with the pages it holds.
    pub(super) fn open(path: &Path) -> Result<(FilePages, u64)> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let pages = FilePages {
            file,
            map: RwLock::new(None),
        };
        Ok((pages, len / PAGE_SIZE as u64))
    }

    /// Fills `out` from page `first` on.
    pub(super) fn read_at(&self, first: Ppn, out: &mut [u8]) -> Result<()> {
        self.file
            .read_exact_at(out, first.0 * PAGE_SIZE as u64)
            .map_err(io)
    }

    pub(super) fn write_run(&self, first: Ppn, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all_at(bytes, first.0 * PAGE_SIZE as u64)
            .map_err(io)
    }

    pub(super) fn sync(&self) -> Result<()> {
        self.file.sync_data().map_err(io)
    }

    /// The mapping if it covers `end` bytes, remapping once if the file
    /// has grown; `None` if it still does not (read by copy instead).
    pub(super) fn mapping(&self, end: usize) -> Result<Option<Arc<Mmap>>> {
        if let Some(m) = self.map.read().as_ref().filter(|m| m.len() >= end) {
            return Ok(Some(m.clone()));
        }
        let mut g = self.map.write();
        if let Some(m) = g.as_ref().filter(|m| m.len() >= end) {
            return Ok(Some(m.clone()));
        }
        let len = self.file.metadata().map_err(io)?.len() as usize;
        if len < end {
            return Ok(None);
        }
        // SAFETY: the map is read-only; the engine only appends to the
        // file and never truncates it while open (see `PageStore::page`).
        let m = Arc::new(unsafe { MmapOptions::new().len(len).map(&self.file) }.map_err(io)?);
        *g = Some(m.clone());
        Ok(Some(m))
    }
}
