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

use std::sync::Arc;

use memmap2::{Mmap, MmapOptions};
use parking_lot::RwLock;

use ndpdb_formats::page::{PageRef, PAGE_SIZE};
use ndpdb_formats::Ppn;
use ndpdb_link::{LinkError, Result};

use ndpdb_link::NvmProfile;

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
    /// The file mapped read-only for processing elements (remapped when
    /// the store grows past it).
    map: RwLock<Option<Arc<Mmap>>>,
    /// One bit per PPN: its checksum was verified since it was last
    /// written, so PEs check each page once, not on every scan.
    verified: RwLock<Vec<AtomicU64>>,
}

/// A page as a PE holds it: a slice of the mapped store or an owned copy
/// (passed-along delta-buffer pages, pages read past the mapping).
#[derive(Clone)]
pub enum PageBytes {
    Owned(Arc<Vec<u8>>),
    Mapped(Arc<Mmap>, usize),
}

impl AsRef<[u8]> for PageBytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl std::ops::Deref for PageBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            PageBytes::Owned(v) => v,
            PageBytes::Mapped(m, off) => &m[*off..*off + PAGE_SIZE],
        }
    }
}

/// Whether `ppn`'s bit is set in a bitmap of one bit per PPN.
fn bit_set(bits: &[AtomicU64], ppn: Ppn) -> bool {
    let (w, b) = (ppn.0 as usize / 64, ppn.0 % 64);
    bits.get(w)
        .is_some_and(|x| x.load(Ordering::Acquire) & (1 << b) != 0)
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
            map: RwLock::new(None),
            verified: RwLock::new(Vec::new()),
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

    /// Copies a page into `out` (one copy: from the mapped store, or read
    /// straight into it), charging one NVM read.
    pub fn read_into(&self, ppn: Ppn, out: &mut [u8]) -> Result<()> {
        self.nvm.read_access();
        debug_assert_eq!(out.len(), PAGE_SIZE);
        if ppn.0 >= self.page_count() {
            return Err(LinkError::OutOfRange(format!(
                "PPN {} beyond the store's {} pages",
                ppn.0,
                self.page_count()
            )));
        }
        let off = ppn.0 as usize * PAGE_SIZE;
        match self.mapping(off + PAGE_SIZE)? {
            Some(m) => out.copy_from_slice(&m[off..off + PAGE_SIZE]),
            None => self.file.read_exact_at(out, off as u64).map_err(io)?,
        }
        Ok(())
    }

    /// Appends page `ppn` to `out` (copied from the mapping without
    /// zeroing first).
    pub fn append_page(&self, ppn: Ppn, out: &mut Vec<u8>) -> Result<()> {
        if ppn.0 >= self.page_count() {
            return self.read_into(ppn, &mut [0u8; PAGE_SIZE]);
        }
        let off = ppn.0 as usize * PAGE_SIZE;
        match self.mapping(off + PAGE_SIZE)? {
            Some(m) => {
                self.nvm.read_access();
                out.extend_from_slice(&m[off..off + PAGE_SIZE]);
                Ok(())
            }
            None => {
                let start = out.len();
                out.resize(start + PAGE_SIZE, 0);
                self.read_into(ppn, &mut out[start..])
            }
        }
    }

    /// A checksum-verified page for a PE, without copying it: a view into
    /// the mapped store (no NVM latency is charged; callers charge it).
    ///
    /// The mapping is read-only and the store is append-only where it
    /// matters: a page is written before any map points to it, and a freed
    /// page is written again only once no job or transaction may still
    /// read it (the host's free-space epochs). A store
    /// file truncated behind the engine's back would fault the process,
    /// as it would any database that maps its files.
    pub(crate) fn page(&self, ppn: Ppn) -> Result<PageBytes> {
        if ppn.0 >= self.page_count() {
            return Err(LinkError::OutOfRange(format!(
                "PPN {} beyond the store's {} pages",
                ppn.0,
                self.page_count()
            )));
        }
        let off = ppn.0 as usize * PAGE_SIZE;
        let map = self.mapping(off + PAGE_SIZE)?;
        let page = match map {
            Some(m) => PageBytes::Mapped(m, off),
            None => PageBytes::Owned(Arc::new(self.read_untimed(ppn)?)),
        };
        if !self.is_verified(ppn) {
            PageRef::parse_verified(&page)?;
            self.set_verified(ppn, true);
        }
        Ok(page)
    }

    /// Checksum-verified pages for a PE's batch, as [`PageStore::page`]
    /// reads them one by one, with the mapping and the verified bits
    /// looked up once for the batch. `ppns` are sorted.
    pub(crate) fn pages(&self, ppns: &[Ppn], out: &mut Vec<(Ppn, PageBytes)>) -> Result<()> {
        let Some(&last) = ppns.last() else {
            return Ok(());
        };
        if last.0 >= self.page_count() {
            return Err(LinkError::OutOfRange(format!(
                "PPN {} beyond the store's {} pages",
                last.0,
                self.page_count()
            )));
        }
        let Some(map) = self.mapping((last.0 as usize + 1) * PAGE_SIZE)? else {
            for &ppn in ppns {
                out.push((ppn, self.page(ppn)?));
            }
            return Ok(());
        };
        let mut unverified = Vec::new();
        {
            let bits = self.verified.read();
            for &ppn in ppns {
                if !bit_set(&bits, ppn) {
                    unverified.push(ppn);
                }
                out.push((
                    ppn,
                    PageBytes::Mapped(map.clone(), ppn.0 as usize * PAGE_SIZE),
                ));
            }
        }
        for ppn in unverified {
            let off = ppn.0 as usize * PAGE_SIZE;
            PageRef::parse_verified(&map[off..off + PAGE_SIZE])?;
            self.set_verified(ppn, true);
        }
        Ok(())
    }

    /// The mapping if it covers `end` bytes, remapping once if the file
    /// has grown; `None` if it still does not (read by copy instead).
    fn mapping(&self, end: usize) -> Result<Option<Arc<Mmap>>> {
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
        // file and never truncates it while open (see `page`).
        let m = Arc::new(unsafe { MmapOptions::new().len(len).map(&self.file) }.map_err(io)?);
        *g = Some(m.clone());
        Ok(Some(m))
    }

    fn is_verified(&self, ppn: Ppn) -> bool {
        bit_set(&self.verified.read(), ppn)
    }

    fn set_verified(&self, ppn: Ppn, on: bool) {
        let (w, b) = (ppn.0 as usize / 64, ppn.0 % 64);
        if !on {
            if let Some(x) = self.verified.read().get(w) {
                x.fetch_and(!(1 << b), Ordering::AcqRel);
            }
            return;
        }
        if self.verified.read().len() <= w {
            let mut g = self.verified.write();
            while g.len() <= w {
                g.push(AtomicU64::new(0));
            }
        }
        if let Some(x) = self.verified.read().get(w) {
            x.fetch_or(1 << b, Ordering::AcqRel);
        }
    }

    pub fn write(&self, ppn: Ppn, page: &[u8]) -> Result<()> {
        self.write_many(&[(ppn, page)])
    }

    /// Writes pages; a run of consecutive PPNs goes down in one write (a
    /// flush allocates its pages' PPNs in one block). A page of the wrong
    /// size fails its run before anything of the run is written.
    pub fn write_many(&self, pages: &[(Ppn, &[u8])]) -> Result<()> {
        let mut joined: Vec<u8> = Vec::new();
        let mut start = 0;
        while start < pages.len() {
            let mut end = start + 1;
            while end < pages.len() && pages[end].0 .0 == pages[end - 1].0 .0 + 1 {
                end += 1;
            }
            let run = &pages[start..end];
            if let Some((_, bad)) = run.iter().find(|(_, p)| p.len() != PAGE_SIZE) {
                return Err(LinkError::Corrupted(format!("page of {} bytes", bad.len())));
            }
            for (ppn, _) in run {
                self.nvm.write_access();
                self.set_verified(*ppn, false);
            }
            // One page is written from where it is; a run is joined first.
            let bytes: &[u8] = if let [(_, page)] = run {
                page
            } else {
                joined.clear();
                run.iter()
                    .for_each(|(_, page)| joined.extend_from_slice(page));
                &joined
            };
            self.file
                .write_all_at(bytes, run[0].0 .0 * PAGE_SIZE as u64)
                .map_err(io)?;
            self.page_count
                .fetch_max(run[run.len() - 1].0 .0 + 1, Ordering::AcqRel);
            start = end;
        }
        Ok(())
    }

    pub fn sync(&self) -> Result<()> {
        self.file.sync_data().map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(fill: u8) -> Vec<u8> {
        vec![fill; PAGE_SIZE]
    }

    #[test]
    fn runs_and_single_pages_land_at_their_ppns() {
        let dir = tempfile::tempdir().unwrap();
        let store = PageStore::open(&dir.path().join("pages"), NvmProfile::OFF).unwrap();
        let (a, b, c, d) = (page(1), page(2), page(3), page(4));
        // 4–6 are one run, 9 stands alone, 2 comes after a gap backwards.
        let pages: Vec<(Ppn, &[u8])> = vec![
            (Ppn(4), &a),
            (Ppn(5), &b),
            (Ppn(6), &c),
            (Ppn(9), &d),
            (Ppn(2), &a),
        ];
        store.write_many(&pages).unwrap();
        for (ppn, want) in [(4, 1u8), (5, 2), (6, 3), (9, 4), (2, 1)] {
            assert_eq!(
                store.read_untimed(Ppn(ppn)).unwrap(),
                page(want),
                "PPN {ppn}"
            );
        }
        assert_eq!(store.page_count(), 10);
        let short: Vec<(Ppn, &[u8])> = vec![(Ppn(11), &a), (Ppn(12), &a[..100])];
        assert!(store.write_many(&short).is_err());
    }
}
