//! Atomic write operations on one object, and omap reads.
//!
//! A [`WriteOp`] lists steps; [`Pool::operate`] hands them to the OSD as
//! one operation, applied all or none. A step that compares
//! ([`WriteOp::compare`], [`WriteOp::create_exclusive`]) makes the whole
//! operation conditional:
//!
//! ```text
//!  WriteOp::new()
//!     .compare(0, old)      ── the object's bytes 0..16 must be `old`
//!     .write(0, new)        ── then they become `new`
//!     .omap_set("k", v)     ── and the key k is set, in the same step
//!  pool.operate("manifest.7", &op)  → Ok | Err(Mismatch { offset }) with nothing applied
//! ```

use std::ffi::{c_char, c_int};

use crate::error::{check, Error, Result};
use crate::ffi::{self, Api};
use crate::pool::{cstr, Pool};

/// One step of a [`WriteOp`].
#[derive(Clone, Debug)]
enum Step {
    CreateExclusive,
    Compare { offset: u64, expected: Vec<u8> },
    Write { offset: u64, data: Vec<u8> },
    WriteFull(Vec<u8>),
    OmapSet(Vec<(String, Vec<u8>)>),
    OmapRemove(Vec<String>),
}

/// Steps applied to one object atomically (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct WriteOp {
    steps: Vec<Step>,
}

impl WriteOp {
    pub fn new() -> WriteOp {
        WriteOp::default()
    }

    /// Fails the operation with `Exists` if the object exists.
    pub fn create_exclusive(mut self) -> WriteOp {
        self.steps.push(Step::CreateExclusive);
        self
    }

    /// Fails the operation with `Mismatch` unless the object's bytes at
    /// `offset` are `expected` (bytes past the object's end compare as
    /// zeros).
    pub fn compare(mut self, offset: u64, expected: &[u8]) -> WriteOp {
        self.steps.push(Step::Compare {
            offset,
            expected: expected.to_vec(),
        });
        self
    }

    /// Writes `data` at `offset`.
    pub fn write(mut self, offset: u64, data: &[u8]) -> WriteOp {
        self.steps.push(Step::Write {
            offset,
            data: data.to_vec(),
        });
        self
    }

    /// Replaces the object's data with `data`.
    pub fn write_full(mut self, data: &[u8]) -> WriteOp {
        self.steps.push(Step::WriteFull(data.to_vec()));
        self
    }

    /// Sets omap keys.
    pub fn omap_set<'a>(mut self, pairs: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> WriteOp {
        let pairs = pairs
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_vec()))
            .collect();
        self.steps.push(Step::OmapSet(pairs));
        self
    }

    /// Removes omap keys.
    pub fn omap_remove<'a>(mut self, keys: impl IntoIterator<Item = &'a str>) -> WriteOp {
        self.steps.push(Step::OmapRemove(
            keys.into_iter().map(str::to_string).collect(),
        ));
        self
    }
}

/// Frees a C write operation however `operate` leaves.
struct OpGuard<'a>(&'a Api, ffi::WriteOpT);

impl Drop for OpGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: created by rados_create_write_op, released once.
        unsafe { (self.0.rados_release_write_op)(self.1) }
    }
}

/// Frees an omap iterator.
struct IterGuard<'a>(&'a Api, ffi::OmapIterT);

impl Drop for IterGuard<'_> {
    fn drop(&mut self) {
        if !self.1.is_null() {
            // SAFETY: returned by a completed read op, ended once.
            unsafe { (self.0.rados_omap_get_end)(self.1) }
        }
    }
}

/// Frees a C read operation.
struct ReadGuard<'a>(&'a Api, ffi::ReadOpT);

impl Drop for ReadGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: created by rados_create_read_op, released once.
        unsafe { (self.0.rados_release_read_op)(self.1) }
    }
}

impl Pool {
    /// Applies `op` to the object `oid` atomically.
    pub fn operate(&self, oid: &str, op: &WriteOp) -> Result<()> {
        let api = self.api();
        let o = cstr(oid)?;
        // SAFETY: returns a fresh operation or null.
        let raw = unsafe { (api.rados_create_write_op)() };
        if raw.is_null() {
            return Err(Error::Os {
                op: format!("write operation on {oid}"),
                errno: libc::ENOMEM,
            });
        }
        let guard = OpGuard(api, raw);
        // Where each compare reports; read after the operation.
        let mut compare_results: Vec<Box<c_int>> = Vec::new();
        for step in &op.steps {
            // SAFETY: every buffer passed is copied into the operation
            // before the call returns (librados builds bufferlists and
            // maps); only the compare result pointers are written later,
            // and their boxes outlive `rados_write_op_operate`.
            unsafe {
                match step {
                    Step::CreateExclusive => (api.rados_write_op_create)(
                        raw,
                        ffi::LIBRADOS_CREATE_EXCLUSIVE,
                        std::ptr::null(),
                    ),
                    Step::Compare { offset, expected } => {
                        let mut rv = Box::new(0);
                        (api.rados_write_op_cmpext)(
                            raw,
                            expected.as_ptr().cast(),
                            expected.len(),
                            *offset,
                            &mut *rv,
                        );
                        compare_results.push(rv);
                    }
                    Step::Write { offset, data } => {
                        (api.rados_write_op_write)(raw, data.as_ptr().cast(), data.len(), *offset)
                    }
                    Step::WriteFull(data) => {
                        (api.rados_write_op_write_full)(raw, data.as_ptr().cast(), data.len())
                    }
                    Step::OmapSet(pairs) => {
                        let keys: Vec<*const c_char> =
                            pairs.iter().map(|(k, _)| k.as_ptr().cast()).collect();
                        let vals: Vec<*const c_char> =
                            pairs.iter().map(|(_, v)| v.as_ptr().cast()).collect();
                        let klens: Vec<usize> = pairs.iter().map(|(k, _)| k.len()).collect();
                        let vlens: Vec<usize> = pairs.iter().map(|(_, v)| v.len()).collect();
                        (api.rados_write_op_omap_set2)(
                            raw,
                            keys.as_ptr(),
                            vals.as_ptr(),
                            klens.as_ptr(),
                            vlens.as_ptr(),
                            pairs.len(),
                        )
                    }
                    Step::OmapRemove(keys) => {
                        let ptrs: Vec<*const c_char> =
                            keys.iter().map(|k| k.as_ptr().cast()).collect();
                        let lens: Vec<usize> = keys.iter().map(String::len).collect();
                        (api.rados_write_op_omap_rm_keys2)(
                            raw,
                            ptrs.as_ptr(),
                            lens.as_ptr(),
                            keys.len(),
                        )
                    }
                }
            }
        }
        // SAFETY: a built operation on a live context; synchronous.
        let r = unsafe {
            (api.rados_write_op_operate)(guard.1, self.io, o.as_ptr(), std::ptr::null_mut(), 0)
        };
        drop(guard);
        crate::counters::written(
            op.steps
                .iter()
                .map(|s| match s {
                    Step::Write { data, .. } | Step::WriteFull(data) => data.len(),
                    Step::OmapSet(pairs) => pairs.iter().map(|(k, v)| k.len() + v.len()).sum(),
                    _ => 0,
                })
                .sum(),
        );
        let failed_compare = compare_results
            .iter()
            .map(|rv| i64::from(**rv))
            .chain(std::iter::once(i64::from(r)))
            .find(|&v| v <= -ffi::MAX_ERRNO);
        if let Some(v) = failed_compare {
            return Err(Error::Mismatch {
                oid: oid.to_string(),
                offset: (-v - ffi::MAX_ERRNO) as u64,
            });
        }
        check(r.into(), "write operation on", oid).map(|_| ())
    }

    /// Sets bytes `offset..offset + new.len()` of the object to `new` if
    /// they are `expected` now: a compare-and-swap on a range. `Ok(false)`
    /// (nothing written) when they differ.
    pub fn compare_and_write(
        &self,
        oid: &str,
        offset: u64,
        expected: &[u8],
        new: &[u8],
    ) -> Result<bool> {
        let op = WriteOp::new().compare(offset, expected).write(offset, new);
        match self.operate(oid, &op) {
            Ok(()) => Ok(true),
            Err(Error::Mismatch { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Omap pairs of the object in key order: up to `max` keys after
    /// `start_after` ("" for the first).
    pub fn omap(&self, oid: &str, start_after: &str, max: u64) -> Result<Vec<(String, Vec<u8>)>> {
        let api = self.api();
        let (o, after) = (cstr(oid)?, cstr(start_after)?);
        // SAFETY: returns a fresh operation or null.
        let raw = unsafe { (api.rados_create_read_op)() };
        if raw.is_null() {
            return Err(Error::Os {
                op: format!("omap read on {oid}"),
                errno: libc::ENOMEM,
            });
        }
        let op = ReadGuard(api, raw);
        let (mut iter, mut more, mut rv) = (std::ptr::null_mut(), 0u8, 0 as c_int);
        // SAFETY: out-pointers to locals that outlive the synchronous
        // operate below; the filter prefix is null (none).
        unsafe {
            (api.rados_read_op_omap_get_vals2)(
                op.1,
                after.as_ptr(),
                std::ptr::null(),
                max,
                &mut iter,
                &mut more,
                &mut rv,
            );
        }
        // SAFETY: as above.
        let r = unsafe { (api.rados_read_op_operate)(op.1, self.io, o.as_ptr(), 0) };
        let iter = IterGuard(api, iter);
        check(r.into(), "omap read on", oid)?;
        check(rv.into(), "omap read on", oid)?;
        let mut pairs = Vec::new();
        loop {
            let (mut k, mut v, mut kl, mut vl) =
                (std::ptr::null_mut(), std::ptr::null_mut(), 0usize, 0usize);
            // SAFETY: a live iterator; the pointers it returns stay valid
            // until it ends and are copied at once.
            let r = unsafe { (api.rados_omap_get_next2)(iter.1, &mut k, &mut v, &mut kl, &mut vl) };
            check(r.into(), "omap read on", oid)?;
            if k.is_null() {
                break;
            }
            // SAFETY: `k` holds `kl` bytes and `v` holds `vl` (null when 0).
            let bytes = |p: *mut c_char, n: usize| match n {
                0 => Vec::new(),
                n => unsafe { std::slice::from_raw_parts(p.cast::<u8>(), n) }.to_vec(),
            };
            let key = String::from_utf8_lossy(&bytes(k, kl)).into_owned();
            let val = bytes(v, vl);
            pairs.push((key, val));
        }
        Ok(pairs)
    }
}
