//! `cls_ndp`: ndpdb's object class for Ceph RADOS. Every OSD loads
//! `libcls_ndp.so` from its class folder and runs its methods on the
//! objects it holds, so an NDP call reads pages where they lie and only
//! the answer crosses the network.
//!
//! ```text
//!  host ── Pool::exec(oid, "ndp", "scrub_v1") ──▶ OSD
//!                                                 └─ __cls_init → ndp_cls_register (src/shim.cc)
//!                                                      └─ scrub: cls_cxx_read(object)
//!                                                           └─ ndp_cls_scrub (here) → ndpdb_formats kernels
//!  host ── Pool::exec_all(objects, "ndp", "scan_v1", requests) ──▶ OSDs
//!                                                 └─ scan: cls_cxx_read(object) → ndp_cls_scan → ndpdb_scan
//! ```
//!
//! The Rust side sees byte slices only; the C++ shim owns everything of
//! Ceph's (bufferlists, registration). A panic never unwinds into the
//! OSD: it becomes `-EIO` for that call.
//!
//! Methods (versioned: a running OSD keeps the class it loaded first):
//! - `scrub_v1`: [`ndpdb_formats::page::scrub`] over the whole object.
//! - `scan_v1`: one object's share of an NDP scan or aggregate
//!   ([`ndpdb_scan::object_scan`]): the request carries the snapshot, the
//!   plan and the heads on the object's pages; the reply the partial.
//! - `versions_v1`: the same entry point for an update's read
//!   ([`ndpdb_scan::object_scan::ObjectOp::Versions`]).

use std::panic::{catch_unwind, AssertUnwindSafe};

const EIO: i64 = 5;
const ERANGE: i64 = 34;

/// Runs `f` and copies what it returns into `out[..cap]`.
///
/// # Safety
/// `out` must have `cap` writable bytes.
unsafe fn reply(out: *mut u8, cap: usize, f: impl FnOnce() -> Vec<u8>) -> i64 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(bytes) if bytes.len() <= cap => {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), out, bytes.len());
            bytes.len() as i64
        }
        Ok(_) => -ERANGE,
        Err(_) => -EIO,
    }
}

/// The kernel behind `scrub_v1`.
///
/// # Safety
/// `run` holds `len` readable bytes (or is anything when `len` is 0);
/// `out` holds `cap` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ndp_cls_scrub(
    run: *const u8,
    len: usize,
    out: *mut u8,
    cap: usize,
) -> i64 {
    let run = if len == 0 {
        &[][..]
    } else {
        std::slice::from_raw_parts(run, len)
    };
    reply(out, cap, || {
        ndpdb_formats::page::scrub::scrub(run).encode().to_vec()
    })
}

/// The kernel behind `scan_v1`: one object's share of an NDP scan or
/// aggregate ([`ndpdb_scan::object_scan::serve`]). The reply, of any
/// size, is handed over in `*reply`/`*reply_len` and must be released
/// with [`ndp_cls_free`]. Returns 0, or `-EIO` if the kernel panicked
/// (a failed scan is a reply that carries its SQLSTATE).
///
/// # Safety
/// `request` holds `request_len` readable bytes and `object` holds
/// `object_len` (either may be anything when its length is 0); `reply`
/// and `reply_len` are writable.
#[no_mangle]
pub unsafe extern "C" fn ndp_cls_scan(
    request: *const u8,
    request_len: usize,
    object: *const u8,
    object_len: usize,
    reply: *mut *mut u8,
    reply_len: *mut usize,
) -> i64 {
    let slice = |p: *const u8, n: usize| {
        if n == 0 {
            &[][..]
        } else {
            std::slice::from_raw_parts(p, n)
        }
    };
    let (request, object) = (slice(request, request_len), slice(object, object_len));
    match catch_unwind(AssertUnwindSafe(|| {
        ndpdb_scan::object_scan::serve(request, object)
    })) {
        Ok(bytes) => {
            let len = bytes.len();
            *reply = Box::into_raw(bytes.into_boxed_slice()).cast::<u8>();
            *reply_len = len;
            0
        }
        Err(_) => -EIO,
    }
}

/// Releases a reply of [`ndp_cls_scan`].
///
/// # Safety
/// `reply` and `len` are what one `ndp_cls_scan` call handed over, and
/// this is their only release.
#[no_mangle]
pub unsafe extern "C" fn ndp_cls_free(reply: *mut u8, len: usize) {
    if !reply.is_null() {
        drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
            reply, len,
        )));
    }
}

#[cfg(ndp_cls_shim)]
extern "C" {
    fn ndp_cls_register();
}

/// The OSD's entry point (`CLS_INIT`): registers the class and methods.
#[cfg(ndp_cls_shim)]
#[no_mangle]
pub extern "C" fn __cls_init() {
    // SAFETY: the shim's registration only calls the OSD's class API,
    // on the OSD's loading thread, once.
    unsafe { ndp_cls_register() }
}
