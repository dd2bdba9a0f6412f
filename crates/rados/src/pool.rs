//! The cluster handle and a pool's objects.
//!
//! ```text
//!  Cluster ──Arc──▶ rados_t (shut down with its last handle)
//!     └── Pool ──▶ rados_ioctx_t (one pool; destroyed before the cluster)
//! ```

use std::ffi::{c_int, CStr, CString};
use std::path::Path;
use std::sync::Arc;

use crate::error::{check, Error, Result};
use crate::ffi::{self, Api, CompletionT, IoctxT, RadosT};

/// Client-side limits where the config file leaves Ceph's own defaults
/// (first value: Ceph's default, second: ours): with Ceph's, a call
/// against a cluster that lost its monitor or every replica of a
/// placement group waits for ever (or 5 minutes to connect).
const CLIENT_DEFAULTS: &[(&str, &str, &str)] = &[
    ("client_mount_timeout", "300", "20"),
    ("rados_mon_op_timeout", "0", "30"),
    ("rados_osd_op_timeout", "0", "60"),
];

pub(crate) fn cstr(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::BadName(s.to_string()))
}

struct Handle {
    api: &'static Api,
    cluster: RadosT,
}

// SAFETY: librados' cluster handle is thread-safe for the calls made
// through it (connect happens before it is shared).
unsafe impl Send for Handle {}
unsafe impl Sync for Handle {}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle was created by rados_create2 and every I/O
        // context holds an Arc to it, so none outlives the shutdown.
        unsafe { (self.api.rados_shutdown)(self.cluster) }
    }
}

/// A connected client of one Ceph cluster.
#[derive(Clone)]
pub struct Cluster {
    h: Arc<Handle>,
}

impl Cluster {
    /// Connects as `client.admin` with the settings of `conf` (a
    /// `ceph.conf`: monitor addresses, authentication).
    pub fn connect(conf: &Path) -> Result<Cluster> {
        let api = ffi::api()?;
        let conf_s = conf.display().to_string();
        let fail = |reason: String| Error::Connect {
            conf: conf_s.clone(),
            reason,
        };
        let os = |r: c_int| std::io::Error::from_raw_os_error(-r).to_string();
        let mut cluster: RadosT = std::ptr::null_mut();
        let (name, who) = (cstr("ceph")?, cstr("client.admin")?);
        // SAFETY: out-pointer to a local; strings live across the call.
        let r = unsafe { (api.rados_create2)(&mut cluster, name.as_ptr(), who.as_ptr(), 0) };
        if r < 0 {
            return Err(fail(format!("rados_create2: {}", os(r))));
        }
        let h = Handle { api, cluster };
        let path = cstr(&conf_s)?;
        // SAFETY: a live, not yet connected handle; `path` lives across.
        let r = unsafe { (api.rados_conf_read_file)(h.cluster, path.as_ptr()) };
        if r < 0 {
            return Err(fail(format!("reading the config: {}", os(r))));
        }
        for (key, ceph_default, ours) in CLIENT_DEFAULTS {
            let k = cstr(key)?;
            let mut buf = [0u8; 64];
            // SAFETY: `buf` has 64 writable bytes; librados NUL-terminates.
            let r = unsafe {
                (api.rados_conf_get)(h.cluster, k.as_ptr(), buf.as_mut_ptr().cast(), buf.len())
            };
            let now = CStr::from_bytes_until_nul(&buf).map_or("", |c| c.to_str().unwrap_or(""));
            if r == 0 && now.trim() == *ceph_default {
                let v = cstr(ours)?;
                // SAFETY: as above.
                unsafe { (api.rados_conf_set)(h.cluster, k.as_ptr(), v.as_ptr()) };
            }
        }
        // SAFETY: as above.
        let r = unsafe { (api.rados_connect)(h.cluster) };
        if r < 0 {
            return Err(fail(os(r)));
        }
        Ok(Cluster { h: Arc::new(h) })
    }

    /// Opens a pool for I/O.
    pub fn pool(&self, name: &str) -> Result<Pool> {
        let n = cstr(name)?;
        let mut io: IoctxT = std::ptr::null_mut();
        // SAFETY: as above; out-pointer to a local.
        let r = unsafe { (self.h.api.rados_ioctx_create)(self.h.cluster, n.as_ptr(), &mut io) };
        check(r.into(), "opening pool", name)?;
        Ok(Pool {
            io,
            name: name.to_string(),
            cluster: self.h.clone(),
        })
    }
}

/// One pool's objects.
pub struct Pool {
    pub(crate) io: IoctxT,
    name: String,
    cluster: Arc<Handle>,
}

// SAFETY: librados I/O contexts are thread-safe for I/O; this type
// exposes no call that changes the context's settings.
unsafe impl Send for Pool {}
unsafe impl Sync for Pool {}

impl Drop for Pool {
    fn drop(&mut self) {
        // SAFETY: created by rados_ioctx_create; `cluster` keeps the
        // cluster handle alive until after this.
        unsafe { (self.cluster.api.rados_ioctx_destroy)(self.io) }
    }
}

impl Pool {
    pub(crate) fn api(&self) -> &'static Api {
        self.cluster.api
    }

    /// The pool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Replaces the object's contents with `data` (creating it).
    pub fn write_full(&self, oid: &str, data: &[u8]) -> Result<()> {
        let o = cstr(oid)?;
        // SAFETY: `o` and `data` live across the synchronous call.
        let r = unsafe {
            (self.api().rados_write_full)(self.io, o.as_ptr(), data.as_ptr().cast(), data.len())
        };
        check(r.into(), "writing", oid)?;
        crate::counters::written(data.len());
        Ok(())
    }

    /// Writes `data` at `offset` (creating the object, growing it).
    pub fn write(&self, oid: &str, data: &[u8], offset: u64) -> Result<()> {
        let o = cstr(oid)?;
        // SAFETY: as above.
        let r = unsafe {
            (self.api().rados_write)(
                self.io,
                o.as_ptr(),
                data.as_ptr().cast(),
                data.len(),
                offset,
            )
        };
        check(r.into(), "writing", oid)?;
        crate::counters::written(data.len());
        Ok(())
    }

    /// Up to `len` bytes from `offset`: fewer at the object's end.
    pub fn read(&self, oid: &str, offset: u64, len: usize) -> Result<Vec<u8>> {
        let o = cstr(oid)?;
        let mut buf = vec![0u8; len];
        // SAFETY: `buf` has `len` writable bytes; librados writes at most that.
        let r = unsafe {
            (self.api().rados_read)(self.io, o.as_ptr(), buf.as_mut_ptr().cast(), len, offset)
        };
        let n = check(r.into(), "reading", oid)? as usize;
        buf.truncate(n.min(len));
        crate::counters::read(buf.len());
        Ok(buf)
    }

    /// The whole object.
    pub fn read_all(&self, oid: &str) -> Result<Vec<u8>> {
        let size = self.stat(oid)?.ok_or_else(|| Error::NotFound(oid.into()))?;
        self.read(oid, 0, usize::try_from(size).unwrap_or(usize::MAX))
    }

    /// The object's size, `None` if it does not exist.
    pub fn stat(&self, oid: &str) -> Result<Option<u64>> {
        let o = cstr(oid)?;
        let (mut size, mut mtime) = (0u64, 0 as libc::time_t);
        // SAFETY: out-pointers to locals.
        let r = unsafe { (self.api().rados_stat)(self.io, o.as_ptr(), &mut size, &mut mtime) };
        match r {
            r if r == -libc::ENOENT => Ok(None),
            r => check(r.into(), "stat", oid).map(|_| Some(size)),
        }
    }

    /// Removes the object; `NotFound` if there was none.
    pub fn remove(&self, oid: &str) -> Result<()> {
        let o = cstr(oid)?;
        // SAFETY: as above.
        let r = unsafe { (self.api().rados_remove)(self.io, o.as_ptr()) };
        check(r.into(), "removing", oid).map(|_| ())
    }

    /// Cuts (or extends with zeros) the object to `size` bytes.
    pub fn truncate(&self, oid: &str, size: u64) -> Result<()> {
        let o = cstr(oid)?;
        // SAFETY: as above.
        let r = unsafe { (self.api().rados_trunc)(self.io, o.as_ptr(), size) };
        check(r.into(), "truncating", oid).map(|_| ())
    }

    /// The names of every object in the pool (default namespace).
    pub fn objects(&self) -> Result<Vec<String>> {
        let api = self.api();
        let mut ctx = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        let r = unsafe { (api.rados_nobjects_list_open)(self.io, &mut ctx) };
        check(r.into(), "listing", &self.name)?;
        let mut names = Vec::new();
        let result = loop {
            let (mut entry, mut key, mut ns) =
                (std::ptr::null(), std::ptr::null(), std::ptr::null());
            // SAFETY: an open listing; the strings it returns stay valid
            // until the next call, and are copied before it.
            let r = unsafe { (api.rados_nobjects_list_next)(ctx, &mut entry, &mut key, &mut ns) };
            if r == -libc::ENOENT {
                break Ok(());
            }
            if r < 0 {
                break Err(Error::from_ret(r.into(), "listing", &self.name));
            }
            // SAFETY: librados returns a NUL-terminated object name.
            names.push(
                unsafe { CStr::from_ptr(entry) }
                    .to_string_lossy()
                    .into_owned(),
            );
        };
        // SAFETY: opened above, closed once.
        unsafe { (api.rados_nobjects_list_close)(ctx) };
        result.map(|()| names)
    }

    /// Calls method `method` of object class `class` on the object, with
    /// `input`; the reply is at most `reply_cap` bytes.
    pub fn exec(
        &self,
        oid: &str,
        class: &str,
        method: &str,
        input: &[u8],
        reply_cap: usize,
    ) -> Result<Vec<u8>> {
        let (o, c, m) = (cstr(oid)?, cstr(class)?, cstr(method)?);
        let mut out = vec![0u8; reply_cap];
        // SAFETY: all buffers live across the synchronous call; `out`
        // has `reply_cap` writable bytes.
        let r = unsafe {
            (self.api().rados_exec)(
                self.io,
                o.as_ptr(),
                c.as_ptr(),
                m.as_ptr(),
                input.as_ptr().cast(),
                input.len(),
                out.as_mut_ptr().cast(),
                reply_cap,
            )
        };
        let n = reply(r, &format!("{class}.{method}"), oid, reply_cap)?;
        out.truncate(n);
        crate::counters::replied(n);
        Ok(out)
    }

    /// The same method called on many objects at once, each with its own
    /// input; the replies in the order of `calls`. Every call is issued
    /// before the first is waited for, so the OSDs work in parallel.
    pub fn exec_all(
        &self,
        calls: &[(&str, &[u8])],
        class: &str,
        method: &str,
        reply_cap: usize,
    ) -> Result<Vec<Result<Vec<u8>>>> {
        let api = self.api();
        let (c, m) = (cstr(class)?, cstr(method)?);
        let mut flights: Vec<InFlight> = Vec::with_capacity(calls.len());
        for (oid, input) in calls {
            let o = cstr(oid)?;
            let mut completion: CompletionT = std::ptr::null_mut();
            // SAFETY: out-pointer to a local; no callback.
            let r = unsafe {
                (api.rados_aio_create_completion2)(std::ptr::null_mut(), None, &mut completion)
            };
            if r < 0 {
                wait_and_release(api, &flights);
                return Err(Error::from_ret(r.into(), "creating a completion for", oid));
            }
            let mut f = InFlight {
                completion,
                out: vec![0u8; reply_cap],
                issued: 0,
            };
            // SAFETY: librados copies `input` and the names before
            // returning; `f.out` is a heap buffer that stays put (moving
            // the Vec does not move its heap storage) and lives until the
            // completion is waited for below.
            f.issued = unsafe {
                (api.rados_aio_exec)(
                    self.io,
                    o.as_ptr(),
                    completion,
                    c.as_ptr(),
                    m.as_ptr(),
                    input.as_ptr().cast(),
                    input.len(),
                    f.out.as_mut_ptr().cast(),
                    reply_cap,
                )
            };
            flights.push(f);
        }
        wait_all(api, &flights);
        let op = format!("{class}.{method}");
        let replies = flights
            .into_iter()
            .zip(calls)
            .map(|(mut f, (oid, _))| {
                let r = if f.issued < 0 {
                    f.issued
                } else {
                    // SAFETY: complete (waited for above).
                    unsafe { (api.rados_aio_get_return_value)(f.completion) }
                };
                // SAFETY: each completion is released exactly once, after
                // its reply was read.
                unsafe { (api.rados_aio_release)(f.completion) };
                let n = reply(r, &op, oid, reply_cap)?;
                f.out.truncate(n);
                crate::counters::replied(n);
                Ok(f.out)
            })
            .collect();
        Ok(replies)
    }
}

/// One asynchronous call of [`Pool::exec_all`].
struct InFlight {
    completion: CompletionT,
    /// The reply buffer librados writes into.
    out: Vec<u8>,
    /// What issuing the call returned (negative: never in flight).
    issued: c_int,
}

fn wait_all(api: &Api, flights: &[InFlight]) {
    for f in flights {
        if f.issued >= 0 {
            // SAFETY: a completion of an issued call; waiting is idempotent.
            unsafe { (api.rados_aio_wait_for_complete)(f.completion) };
        }
    }
}

fn wait_and_release(api: &Api, flights: &[InFlight]) {
    wait_all(api, flights);
    for f in flights {
        // SAFETY: complete or never issued; released once.
        unsafe { (api.rados_aio_release)(f.completion) };
    }
}

/// The length of an object-class reply, or its error.
fn reply(r: c_int, op: &str, oid: &str, cap: usize) -> Result<usize> {
    if r == -libc::ERANGE {
        return Err(Error::ReplyTooLarge {
            op: format!("{op} on {oid}"),
            cap,
        });
    }
    let n = check(r.into(), op, oid)? as usize;
    Ok(n.min(cap))
}
