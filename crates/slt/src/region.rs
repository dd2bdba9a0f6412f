//! The shared-memory region the SLT lives in (DESIGN.md §7, §10) — the
//! only module of ndpdb with `unsafe` code.
//!
//! ```text
//!   in process:     mmap(MAP_SHARED | MAP_ANONYMOUS)       host and device threads
//!   across processes: shm_open("/ndpdb-…") + mmap(MAP_SHARED)  host ⇄ device process
//! ```
//!
//! Both are page-aligned, zero-filled mappings viewed as a slice of
//! 16-byte atomics. Nothing but atomic loads and compare-and-swaps ever
//! touches the memory, so a peer writing concurrently (even a faulty one)
//! can only produce odd *values*, which the table validates — never
//! undefined behaviour on our side.

use std::ffi::CString;
use std::ptr::NonNull;

use portable_atomic::AtomicU128;

use crate::error::{Result, SltError};

/// A mapped, zero-initialised region of 16-byte atomic words.
pub struct Region {
    ptr: NonNull<u8>,
    len: usize,
    /// The /dev/shm name to unlink on drop (the creator owns it).
    owned_name: Option<CString>,
}

// SAFETY: the mapping is process-wide memory that stays valid until
// `Drop`; it is only ever accessed through atomic operations
// (`AtomicU128` is `Sync`), so sharing and sending the handle is sound.
unsafe impl Send for Region {}
// SAFETY: as above — all access is atomic.
unsafe impl Sync for Region {}

fn os_error(what: &str) -> SltError {
    SltError::Io(format!("{what}: {}", std::io::Error::last_os_error()))
}

fn check_atomics() -> Result<()> {
    if AtomicU128::is_lock_free() {
        Ok(())
    } else {
        Err(SltError::Unsupported(
            "this CPU has no lock-free 128-bit compare-and-swap (cmpxchg16b)".into(),
        ))
    }
}

impl Region {
    /// An anonymous shared mapping of `words` 16-byte words (in process).
    pub fn anonymous(words: usize) -> Result<Region> {
        check_atomics()?;
        let len = words.max(1) * 16;
        // SAFETY: a fresh anonymous mapping: null hint, valid length and
        // flags, no file descriptor. The result is checked for MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        Self::from_mmap(p, len, None)
    }

    /// Creates the named region `/dev/shm/<name>` of `words` words; fails
    /// if it exists. The creator unlinks it when dropped.
    pub fn create_shm(name: &str, words: usize) -> Result<Region> {
        check_atomics()?;
        let cname = shm_name(name)?;
        let len = words.max(1) * 16;
        // SAFETY: `cname` is a valid NUL-terminated string; the flags and
        // mode are plain integers. The result is checked below.
        let fd = unsafe {
            libc::shm_open(
                cname.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
                0o600,
            )
        };
        if fd < 0 {
            return Err(os_error("shm_open"));
        }
        // SAFETY: `fd` is the descriptor just opened; ftruncate zero-fills.
        if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
            let e = os_error("ftruncate");
            // SAFETY: closing our own descriptor and unlinking our own name.
            unsafe {
                libc::close(fd);
                libc::shm_unlink(cname.as_ptr());
            }
            return Err(e);
        }
        let region = Self::map_fd(fd, len, Some(cname.clone()));
        if region.is_err() {
            // SAFETY: unlinking the name this call created.
            unsafe { libc::shm_unlink(cname.as_ptr()) };
        }
        region
    }

    /// Maps an existing named region (the peer process's side).
    pub fn open_shm(name: &str) -> Result<Region> {
        check_atomics()?;
        let cname = shm_name(name)?;
        // SAFETY: valid NUL-terminated name; result checked.
        let fd = unsafe { libc::shm_open(cname.as_ptr(), libc::O_RDWR, 0) };
        if fd < 0 {
            return Err(os_error("shm_open"));
        }
        // SAFETY: `stat` is plain old data, fully written by fstat on success.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is open and `st` is a valid out-pointer.
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            let e = os_error("fstat");
            // SAFETY: closing our own descriptor.
            unsafe { libc::close(fd) };
            return Err(e);
        }
        let len = st.st_size as usize;
        if len < 16 || !len.is_multiple_of(16) {
            // SAFETY: closing our own descriptor.
            unsafe { libc::close(fd) };
            return Err(SltError::Corrupted(format!(
                "shared region of {len} bytes is not a whole number of 16-byte words"
            )));
        }
        Self::map_fd(fd, len, None)
    }

    /// Maps `fd` (and closes it: the mapping keeps the memory alive).
    fn map_fd(fd: libc::c_int, len: usize, owned_name: Option<CString>) -> Result<Region> {
        // SAFETY: `fd` refers to a shared memory object of at least `len`
        // bytes; null hint; the result is checked for MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        // SAFETY: the descriptor is ours and no longer needed after mmap.
        unsafe { libc::close(fd) };
        Self::from_mmap(p, len, owned_name)
    }

    fn from_mmap(p: *mut libc::c_void, len: usize, owned_name: Option<CString>) -> Result<Region> {
        if p == libc::MAP_FAILED {
            return Err(os_error("mmap"));
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| os_error("mmap returned null"))?;
        Ok(Region {
            ptr,
            len,
            owned_name,
        })
    }

    /// The region as 16-byte atomic words.
    pub fn words(&self) -> &[AtomicU128] {
        // SAFETY: the mapping is page-aligned (so 16-byte aligned), `len`
        // is a multiple of 16, the memory lives until `self` is dropped
        // (the borrow ties the slice to `self`), every bit pattern is a
        // valid `u128`, and `AtomicU128` has the size and alignment of
        // `u128` and only permits atomic access through `&self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast::<AtomicU128>(), self.len / 16) }
    }

    pub fn bytes(&self) -> usize {
        self.len
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly the mapping created in the
        // constructor, and no borrow of `words()` can outlive `self`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
        if let Some(name) = &self.owned_name {
            // SAFETY: a valid NUL-terminated name this process created.
            unsafe { libc::shm_unlink(name.as_ptr()) };
        }
    }
}

fn shm_name(name: &str) -> Result<CString> {
    if name.is_empty() || name.len() > 200 || name.contains('/') || name.contains('\0') {
        return Err(SltError::Io(format!("invalid shared memory name {name:?}")));
    }
    CString::new(format!("/{name}")).map_err(|_| SltError::Io("invalid name".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn anonymous_region_is_zeroed_and_atomic() {
        let r = Region::anonymous(64).unwrap();
        assert_eq!(r.words().len(), 64);
        assert!(r.words().iter().all(|w| w.load(Ordering::Relaxed) == 0));
        let w = &r.words()[63];
        assert!(w
            .compare_exchange(0, u128::MAX - 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok());
        assert_eq!(w.load(Ordering::Acquire), u128::MAX - 1);
    }

    #[test]
    fn named_region_is_seen_by_a_second_mapping() {
        let name = format!("ndpdb-test-{}", std::process::id());
        let a = Region::create_shm(&name, 8).unwrap();
        assert!(Region::create_shm(&name, 8).is_err(), "O_EXCL");
        let b = Region::open_shm(&name).unwrap();
        a.words()[3].store(42 << 64, Ordering::Release);
        assert_eq!(b.words()[3].load(Ordering::Acquire), 42 << 64);
        drop(b);
        drop(a);
        assert!(Region::open_shm(&name).is_err(), "unlinked by its creator");
        assert!(Region::create_shm("bad/name", 1).is_err());
    }
}
