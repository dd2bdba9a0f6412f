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
//! ```
//!
//! The Rust side sees byte slices only; the C++ shim owns everything of
//! Ceph's (bufferlists, registration). A panic never unwinds into the
//! OSD: it becomes `-EIO` for that call.
//!
//! Methods (versioned: a running OSD keeps the class it loaded first):
//! - `scrub_v1`: [`ndpdb_formats::page::scrub`] over the whole object.

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
