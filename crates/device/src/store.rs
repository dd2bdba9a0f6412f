//! PPN-addressed page store in one file: page `p` lives at `p × 8 KiB`.
//!
//! Writes go to the OS page cache; `sync` makes them durable. The store
//! assumes a medium that may tear a page on power loss: that is why the
//! host seals every page with a checksum and only merges maps that point
//! to pages after a `sync`.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use ndpdb_formats::page::PAGE_SIZE;
use ndpdb_formats::Ppn;
use ndpdb_link::{LinkError, Result};

use crate::nvm::NvmProfile;

/// The store format this build writes and reads: 2 = PAX pages.
pub const STORE_FORMAT: u32 = ndpdb_formats::page::PAGE_VERSION as u32;
const FORMAT_FILE: &str = "FORMAT";

/// Checks (or, for a new store, writes) the store's format marker in `dir`.
/// A store of another format is refused with its version named: stores of
/// format 1 (NSM pages) have a page file but no marker.
pub fn check_format(dir: &Path) -> Result<()> {
    let marker = dir.join(FORMAT_FILE);
    let refuse = |v: &str| {
        LinkError::Unsupported(format!(
            "the device store in {} has format {v}; this build reads format {STORE_FORMAT} \
             (PAX pages): load the data again with this build",
            dir.display()
        ))
    };
    match std::fs::read_to_string(&marker) {
        Ok(text) => {
            let v = text
                .trim()
                .strip_prefix("ndpdb device store format ")
                .unwrap_or("unknown");
            if v != STORE_FORMAT.to_string() {
                return Err(refuse(v));
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let pages = dir.join("pages.dat");
            if std::fs::metadata(&pages).is_ok_and(|m| m.len() > 0) {
                return Err(refuse("1 (NSM pages)"));
            }
            let tmp = dir.join("FORMAT.tmp");
            std::fs::write(&tmp, format!("ndpdb device store format {STORE_FORMAT}\n"))
                .map_err(io)?;
            File::open(&tmp).and_then(|f| f.sync_all()).map_err(io)?;
            std::fs::rename(&tmp, &marker).map_err(io)?;
            File::open(dir).and_then(|d| d.sync_all()).map_err(io)
        }
        Err(e) => Err(io(e)),
    }
}

pub struct PageStore {
    file: File,
    page_count: AtomicU64,
    /// Added latency per access (see [`crate::nvm`]).
    pub(crate) nvm: NvmProfile,
}

fn io(e: std::io::Error) -> LinkError {
    LinkError::Io(e.to_string())
}

impl PageStore {
    pub fn open(path: &Path, nvm: NvmProfile) -> Result<PageStore> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        Ok(PageStore {
            file,
            page_count: AtomicU64::new(len / PAGE_SIZE as u64),
            nvm,
        })
    }

    pub fn page_count(&self) -> u64 {
        self.page_count.load(Ordering::Acquire)
    }

    /// Reads a page as one NVM access.
    pub fn read(&self, ppn: Ppn) -> Result<Vec<u8>> {
        self.nvm.read_access();
        self.read_untimed(ppn)
    }

    /// Reads a page without charging NVM latency: for callers that charge
    /// their accesses themselves (a PE per record, the preloader per batch).
    pub(crate) fn read_untimed(&self, ppn: Ppn) -> Result<Vec<u8>> {
        if ppn.0 >= self.page_count() {
            return Err(LinkError::OutOfRange(format!(
                "PPN {} beyond the store's {} pages",
                ppn.0,
                self.page_count()
            )));
        }
        let mut buf = vec![0u8; PAGE_SIZE];
        self.file
            .read_exact_at(&mut buf, ppn.0 * PAGE_SIZE as u64)
            .map_err(io)?;
        Ok(buf)
    }

    pub fn write(&self, ppn: Ppn, page: &[u8]) -> Result<()> {
        if page.len() != PAGE_SIZE {
            return Err(LinkError::Corrupted(format!(
                "page of {} bytes",
                page.len()
            )));
        }
        self.nvm.write_access();
        self.file
            .write_all_at(page, ppn.0 * PAGE_SIZE as u64)
            .map_err(io)?;
        self.page_count.fetch_max(ppn.0 + 1, Ordering::AcqRel);
        Ok(())
    }

    pub fn sync(&self) -> Result<()> {
        self.file.sync_data().map_err(io)
    }
}
