//! PPN-addressed page store: page `p` of a device is found by its
//! number alone, on one of two media.
//!
//! ```text
//!  PageStore (page count, verified bits, owners, NVM latency, PageBytes for PEs)
//!     ├─ file.rs   one file, page p at p × 8 KiB; mapped read-only for PEs
//!     └─ rados.rs  RADOS objects `PREFIX.pages.N` of 512 pages (4 MiB):
//!                  page p in object p / 512 at (p mod 512) × 8 KiB
//! ```
//!
//! On a file, writes go to the OS page cache and `sync` makes them
//! durable; on RADOS a write is durable on its replicas when it returns.
//! Either medium may tear a page on a crash (a file on power loss, a run
//! of pages across two objects in RADOS): that is why the host seals
//! every page with a checksum and only merges maps that point to pages
//! after a `sync`. A page never written reads as zeros on both.

mod file;
mod rados;

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use memmap2::Mmap;
use parking_lot::RwLock;

use ndpdb_formats::page::{PageRef, PAGE_SIZE};
use ndpdb_formats::{Ppn, TableId};
use ndpdb_link::{LinkError, NvmProfile, Result};

use file::FilePages;
pub(crate) use rados::link_err;
pub use rados::{ObjectCall, ObjectMethod, RadosPages, PAGES_PER_OBJECT};

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
    medium: Medium,
    page_count: AtomicU64,
    /// Added latency per access (see [`crate::nvm`]).
    pub(crate) nvm: NvmProfile,
    /// One bit per PPN: its checksum was verified since it was last
    /// written, so PEs check each page once, not on every scan.
    verified: RwLock<Vec<AtomicU64>>,
    /// Per PPN, the table whose page it holds as its id + 1, 0 where not
    /// known (written before this open, or not a page): GC lists one
    /// table's pages without reading every other table's (see
    /// [`PageStore::owner`]).
    owners: RwLock<Vec<AtomicU32>>,
}

/// Where the pages are.
enum Medium {
    File(FilePages),
    Rados(RadosPages),
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

/// The runs of consecutive PPNs in `items`, in the order given: ranges
/// of indexes.
fn runs<'a, T>(
    items: &'a [T],
    ppn: impl Fn(&T) -> Ppn + 'a,
) -> impl Iterator<Item = std::ops::Range<usize>> + 'a {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= items.len() {
            return None;
        }
        let mut end = start + 1;
        while end < items.len() && ppn(&items[end]).0 == ppn(&items[end - 1]).0 + 1 {
            end += 1;
        }
        let run = start..end;
        start = end;
        Some(run)
    })
}

/// Whether `ppn`'s bit is set in a bitmap of one bit per PPN.
fn bit_set(bits: &[AtomicU64], ppn: Ppn) -> bool {
    let (w, b) = (ppn.0 as usize / 64, ppn.0 % 64);
    bits.get(w)
        .is_some_and(|x| x.load(Ordering::Acquire) & (1 << b) != 0)
}

/// Grows a per-PPN table of atomics (zero: nothing known) to hold index
/// `i`, by a quarter at least, so a store growing page by page takes
/// the write lock rarely.
fn reach<A: Default>(table: &RwLock<Vec<A>>, i: usize) {
    if table.read().len() > i {
        return;
    }
    let mut g = table.write();
    if g.len() <= i {
        let len = (i + 1).max(g.len() * 5 / 4);
        g.resize_with(len, A::default);
    }
}

fn io(e: std::io::Error) -> LinkError {
    LinkError::Io(e.to_string())
}

impl PageStore {
    /// The store in one file at `path` (created if missing).
    pub fn open(path: &Path, nvm: NvmProfile) -> Result<PageStore> {
        let (medium, pages) = FilePages::open(path)?;
        Ok(PageStore::with(Medium::File(medium), pages, nvm))
    }

    /// The store in RADOS objects named after `prefix` in `pool`.
    pub fn open_rados(
        pool: Arc<ndpdb_rados::Pool>,
        prefix: &str,
        nvm: NvmProfile,
        objects_in_flight: usize,
    ) -> Result<PageStore> {
        let (medium, pages) = RadosPages::open(pool, prefix, objects_in_flight)?;
        Ok(PageStore::with(Medium::Rados(medium), pages, nvm))
    }

    fn with(medium: Medium, pages: u64, nvm: NvmProfile) -> PageStore {
        PageStore {
            medium,
            page_count: AtomicU64::new(pages),
            nvm,
            verified: RwLock::new(Vec::new()),
            owners: RwLock::new(Vec::new()),
        }
    }

    pub fn page_count(&self) -> u64 {
        self.page_count.load(Ordering::Acquire)
    }

    fn in_range(&self, ppn: Ppn) -> Result<()> {
        if ppn.0 >= self.page_count() {
            return Err(LinkError::OutOfRange(format!(
                "PPN {} beyond the store's {} pages",
                ppn.0,
                self.page_count()
            )));
        }
        Ok(())
    }

    /// Reads a page as one NVM access.
    pub fn read(&self, ppn: Ppn) -> Result<Vec<u8>> {
        self.nvm.read_access();
        self.read_untimed(ppn)
    }

    /// Reads pages in the order asked for, one NVM access each, each run
    /// of consecutive PPNs in one piece (on RADOS one read per object the
    /// run touches, not one per page).
    pub fn read_many(&self, ppns: &[Ppn]) -> Result<Vec<Vec<u8>>> {
        let mut pages = Vec::with_capacity(ppns.len());
        for run in runs(ppns, |p| *p) {
            self.in_range(ppns[run.end - 1])?;
            let mut bytes = vec![0u8; run.len() * PAGE_SIZE];
            self.read_run(ppns[run.start], &mut bytes)?;
            for page in bytes.chunks_exact(PAGE_SIZE) {
                self.nvm.read_access();
                pages.push(page.to_vec());
            }
        }
        Ok(pages)
    }

    /// Reads a page without charging NVM latency: for callers that charge
    /// their accesses themselves (a PE per record, the preloader per batch).
    pub(crate) fn read_untimed(&self, ppn: Ppn) -> Result<Vec<u8>> {
        self.in_range(ppn)?;
        let mut buf = vec![0u8; PAGE_SIZE];
        self.read_run(ppn, &mut buf)?;
        Ok(buf)
    }

    /// Pages `first…` into `out` (whole pages), from the medium.
    fn read_run(&self, first: Ppn, out: &mut [u8]) -> Result<()> {
        match &self.medium {
            Medium::File(f) => f.read_at(first, out),
            Medium::Rados(r) => r.read_run(first, out),
        }
    }

    /// Copies a page into `out` (one copy: from the mapped store, or read
    /// straight into it), charging one NVM read.
    pub fn read_into(&self, ppn: Ppn, out: &mut [u8]) -> Result<()> {
        self.nvm.read_access();
        debug_assert_eq!(out.len(), PAGE_SIZE);
        self.in_range(ppn)?;
        let off = ppn.0 as usize * PAGE_SIZE;
        match self.mapping(off + PAGE_SIZE)? {
            Some(m) => out.copy_from_slice(&m[off..off + PAGE_SIZE]),
            None => self.read_run(ppn, out)?,
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

    /// A checksum-verified page for a PE, without copying it where the
    /// medium allows: a view into the mapped file (no NVM latency is
    /// charged; callers charge it), an owned copy from RADOS.
    ///
    /// The mapping is read-only and the store is append-only where it
    /// matters: a page is written before any map points to it, and a freed
    /// page is written again only once no job or transaction may still
    /// read it (the host's free-space epochs). A store
    /// file truncated behind the engine's back would fault the process,
    /// as it would any database that maps its files.
    pub(crate) fn page(&self, ppn: Ppn) -> Result<PageBytes> {
        self.in_range(ppn)?;
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
    /// looked up once for the batch (without a mapping: one read per run
    /// of consecutive pages). `ppns` are sorted.
    pub(crate) fn pages(&self, ppns: &[Ppn], out: &mut Vec<(Ppn, PageBytes)>) -> Result<()> {
        let Some(&last) = ppns.last() else {
            return Ok(());
        };
        self.in_range(last)?;
        let Some(map) = self.mapping((last.0 as usize + 1) * PAGE_SIZE)? else {
            return self.pages_by_run(ppns, out);
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

    /// Checksum-verified pages in the order asked for (a host scan's
    /// READ_PAGES): views of the mapping where it reaches, else each run
    /// of consecutive PPNs read in one piece (on RADOS one read per
    /// object the run touches, not one per page).
    pub(crate) fn pages_as_asked(&self, ppns: &[Ppn]) -> Result<Vec<PageBytes>> {
        let Some(&last) = ppns.iter().max() else {
            return Ok(Vec::new());
        };
        self.in_range(last)?;
        if self.mapping((last.0 as usize + 1) * PAGE_SIZE)?.is_some() {
            return ppns.iter().map(|&ppn| self.page(ppn)).collect();
        }
        let mut out = Vec::with_capacity(ppns.len());
        self.pages_by_run(ppns, &mut out)?;
        Ok(out.into_iter().map(|(_, page)| page).collect())
    }

    /// [`PageStore::pages`] without a mapping (RADOS, or a file grown
    /// past its mapping): each run of consecutive PPNs read in one piece,
    /// then cut into owned pages.
    fn pages_by_run(&self, ppns: &[Ppn], out: &mut Vec<(Ppn, PageBytes)>) -> Result<()> {
        for run in runs(ppns, |p| *p) {
            let mut bytes = vec![0u8; run.len() * PAGE_SIZE];
            self.read_run(ppns[run.start], &mut bytes)?;
            for (&ppn, page) in ppns[run].iter().zip(bytes.chunks_exact(PAGE_SIZE)) {
                if !self.is_verified(ppn) {
                    PageRef::parse_verified(page)?;
                    self.set_verified(ppn, true);
                }
                out.push((ppn, PageBytes::Owned(Arc::new(page.to_vec()))));
            }
        }
        Ok(())
    }

    /// The file's mapping if it covers `end` bytes; `None` on RADOS or
    /// where the mapping does not reach (read by copy instead).
    fn mapping(&self, end: usize) -> Result<Option<Arc<Mmap>>> {
        match &self.medium {
            Medium::File(f) => f.mapping(end),
            Medium::Rados(_) => Ok(None),
        }
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
        reach(&self.verified, w);
        if let Some(x) = self.verified.read().get(w) {
            x.fetch_or(1 << b, Ordering::AcqRel);
        }
    }

    /// The table whose page `ppn` holds, if known without reading it:
    /// every write records the owner its header names, and
    /// [`PageStore::note_owner`] what a reader found. `None` is no
    /// answer (read the page); a PPN holds what was last written to it,
    /// so a known owner is the page's.
    pub(crate) fn owner(&self, ppn: Ppn) -> Option<TableId> {
        let raw = self
            .owners
            .read()
            .get(ppn.0 as usize)
            .map_or(0, |o| o.load(Ordering::Acquire));
        raw.checked_sub(1).map(TableId)
    }

    /// Records the owner a reader found in `ppn`'s header (a page written
    /// before this open).
    pub(crate) fn note_owner(&self, ppn: Ppn, table: TableId) {
        self.set_owner(ppn, Some(table));
    }

    fn set_owner(&self, ppn: Ppn, table: Option<TableId>) {
        // A table id of u32::MAX has no slot: it stays unknown, and read.
        let raw = table.map_or(0, |t| t.0.wrapping_add(1));
        let i = ppn.0 as usize;
        if raw != 0 {
            reach(&self.owners, i);
        }
        if let Some(o) = self.owners.read().get(i) {
            o.store(raw, Ordering::Release);
        }
    }

    pub fn write(&self, ppn: Ppn, page: &[u8]) -> Result<()> {
        self.write_many(&[(ppn, page)])
    }

    /// Writes pages: on a file each run of consecutive PPNs in one write
    /// (a flush allocates its pages' PPNs in one block); on RADOS one
    /// write operation per object the pages fall in. A page of the wrong
    /// size fails the batch before anything is written.
    pub fn write_many(&self, pages: &[(Ppn, &[u8])]) -> Result<()> {
        if let Some((_, bad)) = pages.iter().find(|(_, p)| p.len() != PAGE_SIZE) {
            return Err(LinkError::Corrupted(format!("page of {} bytes", bad.len())));
        }
        let Some(last) = pages.iter().map(|(ppn, _)| ppn.0).max() else {
            return Ok(());
        };
        for (ppn, _) in pages {
            self.nvm.write_access();
            self.set_verified(*ppn, false);
            self.set_owner(*ppn, None);
        }
        match &self.medium {
            Medium::Rados(r) => r.write_pages(pages)?,
            Medium::File(f) => {
                let mut joined: Vec<u8> = Vec::new();
                for run in runs(pages, |(ppn, _)| *ppn) {
                    let run = &pages[run];
                    // One page is written from where it is; a run is joined first.
                    let bytes: &[u8] = if let [(_, page)] = run {
                        page
                    } else {
                        joined.clear();
                        run.iter()
                            .for_each(|(_, page)| joined.extend_from_slice(page));
                        &joined
                    };
                    f.write_run(run[0].0, bytes)?;
                }
            }
        }
        for (ppn, page) in pages {
            self.set_owner(*ppn, PageRef::parse(page).ok().map(|v| v.table()));
        }
        self.page_count.fetch_max(last + 1, Ordering::AcqRel);
        Ok(())
    }

    /// Makes every write so far durable (on RADOS they already are).
    pub fn sync(&self) -> Result<()> {
        match &self.medium {
            Medium::File(f) => f.sync(),
            Medium::Rados(_) => Ok(()),
        }
    }

    /// The medium's objects, when `method` can run inside them (RADOS
    /// with class `ndp` on its OSDs); `None` on a file, or once an OSD
    /// answered that it does not have the method.
    pub(crate) fn objects_with(&self, method: ObjectMethod) -> Option<&RadosPages> {
        match &self.medium {
            Medium::Rados(r) if r.has(method) => Some(r),
            _ => None,
        }
    }

    /// Verifies every stored page where it lies: on RADOS by the object
    /// class `ndp` inside the OSDs, one call per object at once (only the
    /// summaries cross the network); on a file, here.
    pub fn scrub(&self) -> Result<ndpdb_formats::page::scrub::Scrub> {
        match &self.medium {
            Medium::Rados(r) => r.scrub(self.page_count()),
            Medium::File(_) => {
                let mut total = ndpdb_formats::page::scrub::Scrub::default();
                let mut buf = vec![0u8; PAGES_PER_OBJECT as usize * PAGE_SIZE];
                let mut first = 0;
                while first < self.page_count() {
                    let n = (self.page_count() - first).min(PAGES_PER_OBJECT);
                    let run = &mut buf[..n as usize * PAGE_SIZE];
                    self.read_run(Ppn(first), run)?;
                    total.add(first, &ndpdb_formats::page::scrub::scrub(run));
                    first += n;
                }
                Ok(total)
            }
        }
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

    #[test]
    fn a_page_owner_is_what_was_last_written_there_and_unknown_after_reopen() {
        use ndpdb_formats::ids::Lpn;
        use ndpdb_formats::page::PageBuf;
        use ndpdb_formats::types::DataType;
        let of = |table: u32| {
            let mut p = PageBuf::new(TableId(table), Lpn(7), &[DataType::Int]);
            p.seal();
            p.as_bytes().to_vec()
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pages");
        let store = PageStore::open(&path, NvmProfile::OFF).unwrap();
        let (t3, t4, zeros) = (of(3), of(4), page(0));
        let pages: Vec<(Ppn, &[u8])> = vec![(Ppn(0), &t3), (Ppn(1), &t4), (Ppn(5000), &zeros)];
        store.write_many(&pages).unwrap();
        assert_eq!(store.owner(Ppn(0)), Some(TableId(3)));
        assert_eq!(store.owner(Ppn(1)), Some(TableId(4)));
        // Not a page, never written, beyond the store: no answer.
        assert_eq!(store.owner(Ppn(5000)), None);
        assert_eq!(store.owner(Ppn(2)), None);
        assert_eq!(store.owner(Ppn(1 << 40)), None);
        // A PPN written again belongs to its new page's table; one
        // written with something else is unknown again.
        store.write(Ppn(0), &t4).unwrap();
        store.write(Ppn(1), &zeros).unwrap();
        assert_eq!(store.owner(Ppn(0)), Some(TableId(4)));
        assert_eq!(store.owner(Ppn(1)), None);
        store.sync().unwrap();
        drop(store);
        let store = PageStore::open(&path, NvmProfile::OFF).unwrap();
        assert_eq!(store.owner(Ppn(0)), None);
        store.note_owner(Ppn(0), TableId(4));
        assert_eq!(store.owner(Ppn(0)), Some(TableId(4)));
    }

    #[test]
    fn a_file_scrub_counts_sealed_unwritten_and_damaged_pages() {
        use ndpdb_formats::ids::{Lpn, TableId};
        use ndpdb_formats::page::scrub::Scrub;
        use ndpdb_formats::page::PageBuf;
        use ndpdb_formats::types::DataType;
        let sealed = |lpn: u64| {
            let mut p = PageBuf::new(TableId(1), Lpn(lpn), &[DataType::Int]);
            p.seal();
            p.as_bytes().to_vec()
        };
        let dir = tempfile::tempdir().unwrap();
        let store = PageStore::open(&dir.path().join("pages"), NvmProfile::OFF).unwrap();
        let last = PAGES_PER_OBJECT + 3;
        let mut damaged = sealed(last);
        damaged[100] ^= 1;
        let (p0, p1) = (sealed(0), sealed(1));
        let pages: Vec<(Ppn, &[u8])> = vec![(Ppn(0), &p0), (Ppn(1), &p1), (Ppn(last), &damaged)];
        store.write_many(&pages).unwrap();
        assert_eq!(
            store.scrub().unwrap(),
            Scrub {
                pages: last + 1,
                verified: 2,
                never_written: last - 2,
                bad: 1,
                first_bad: Some(last)
            }
        );
    }
}
