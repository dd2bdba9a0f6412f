//! The librados C API (`rados/librados.h`), loaded at run time.
//!
//! ndpdb does not link librados: a build of ndpdb runs on machines
//! without Ceph, and only `--device rados` needs the library. The first
//! use opens `librados.so.2` (Debian's `librados2`) with `dlopen` and
//! looks up each function this crate calls; a missing library or symbol
//! is an [`Error::Unavailable`](crate::Error::Unavailable), not a failed
//! start of the whole binary.
//!
//! Only the declarations below cross into C; the safe wrappers are in
//! `cluster.rs` and `pool.rs`.

use std::ffi::{c_char, c_int, c_uchar, c_void};
use std::sync::OnceLock;

pub type RadosT = *mut c_void;
pub type IoctxT = *mut c_void;
pub type CompletionT = *mut c_void;
pub type WriteOpT = *mut c_void;
pub type ReadOpT = *mut c_void;
pub type ListCtxT = *mut c_void;
pub type OmapIterT = *mut c_void;
pub type CallbackT = Option<unsafe extern "C" fn(cb: CompletionT, arg: *mut c_void)>;

/// The `flags` of `rados_write_op_create`: fail if the object exists.
pub const LIBRADOS_CREATE_EXCLUSIVE: c_int = 1;
/// librados' `MAX_ERRNO`: a compare that fails returns
/// `-MAX_ERRNO - offset_of_the_first_difference`.
pub const MAX_ERRNO: i64 = 4095;

macro_rules! api {
    ($($name:ident: fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        /// Every librados function this crate calls.
        #[allow(non_snake_case)]
        pub struct Api {
            $(pub $name: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
            _lib: libloading::Library,
        }

        impl Api {
            fn load(path: &str) -> Result<Api, String> {
                // SAFETY: librados' initialisers only set up its own state;
                // each symbol is declared with its librados.h signature.
                unsafe {
                    let lib = libloading::Library::new(path).map_err(|e| e.to_string())?;
                    Ok(Api {
                        $($name: *lib
                            .get(concat!(stringify!($name), "\0").as_bytes())
                            .map_err(|e| format!("{path}: {e}"))?,)*
                        _lib: lib,
                    })
                }
            }
        }
    };
}

api! {
    rados_create2: fn(*mut RadosT, *const c_char, *const c_char, u64) -> c_int;
    rados_conf_read_file: fn(RadosT, *const c_char) -> c_int;
    rados_conf_set: fn(RadosT, *const c_char, *const c_char) -> c_int;
    rados_conf_get: fn(RadosT, *const c_char, *mut c_char, usize) -> c_int;
    rados_connect: fn(RadosT) -> c_int;
    rados_shutdown: fn(RadosT);
    rados_ioctx_create: fn(RadosT, *const c_char, *mut IoctxT) -> c_int;
    rados_ioctx_destroy: fn(IoctxT);
    rados_write_full: fn(IoctxT, *const c_char, *const c_char, usize) -> c_int;
    rados_write: fn(IoctxT, *const c_char, *const c_char, usize, u64) -> c_int;
    rados_read: fn(IoctxT, *const c_char, *mut c_char, usize, u64) -> c_int;
    rados_stat: fn(IoctxT, *const c_char, *mut u64, *mut libc::time_t) -> c_int;
    rados_remove: fn(IoctxT, *const c_char) -> c_int;
    rados_trunc: fn(IoctxT, *const c_char, u64) -> c_int;
    rados_exec: fn(IoctxT, *const c_char, *const c_char, *const c_char, *const c_char, usize, *mut c_char, usize) -> c_int;
    rados_aio_create_completion2: fn(*mut c_void, CallbackT, *mut CompletionT) -> c_int;
    rados_aio_wait_for_complete: fn(CompletionT) -> c_int;
    rados_aio_get_return_value: fn(CompletionT) -> c_int;
    rados_aio_release: fn(CompletionT);
    rados_aio_exec: fn(IoctxT, *const c_char, CompletionT, *const c_char, *const c_char, *const c_char, usize, *mut c_char, usize) -> c_int;
    rados_create_write_op: fn() -> WriteOpT;
    rados_release_write_op: fn(WriteOpT);
    rados_write_op_create: fn(WriteOpT, c_int, *const c_char);
    rados_write_op_cmpext: fn(WriteOpT, *const c_char, usize, u64, *mut c_int);
    rados_write_op_write: fn(WriteOpT, *const c_char, usize, u64);
    rados_write_op_write_full: fn(WriteOpT, *const c_char, usize);
    rados_write_op_omap_set2: fn(WriteOpT, *const *const c_char, *const *const c_char, *const usize, *const usize, usize);
    rados_write_op_omap_rm_keys2: fn(WriteOpT, *const *const c_char, *const usize, usize);
    rados_write_op_operate: fn(WriteOpT, IoctxT, *const c_char, *mut libc::time_t, c_int) -> c_int;
    rados_create_read_op: fn() -> ReadOpT;
    rados_release_read_op: fn(ReadOpT);
    rados_read_op_omap_get_vals2: fn(ReadOpT, *const c_char, *const c_char, u64, *mut OmapIterT, *mut c_uchar, *mut c_int);
    rados_read_op_operate: fn(ReadOpT, IoctxT, *const c_char, c_int) -> c_int;
    rados_omap_get_next2: fn(OmapIterT, *mut *mut c_char, *mut *mut c_char, *mut usize, *mut usize) -> c_int;
    rados_omap_get_end: fn(OmapIterT);
    rados_nobjects_list_open: fn(IoctxT, *mut ListCtxT) -> c_int;
    rados_nobjects_list_next: fn(ListCtxT, *mut *const c_char, *mut *const c_char, *mut *const c_char) -> c_int;
    rados_nobjects_list_close: fn(ListCtxT);
}

/// The library, opened once per process.
pub fn api() -> Result<&'static Api, crate::Error> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(|| {
        let path = std::env::var("NDPDB_LIBRADOS").unwrap_or_else(|_| "librados.so.2".into());
        Api::load(&path)
    })
    .as_ref()
    .map_err(|e| {
        crate::Error::Unavailable(format!(
            "{e} (install Debian's librados2, or set NDPDB_LIBRADOS to the library)"
        ))
    })
}
