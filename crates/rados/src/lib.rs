//! Ceph RADOS for ndpdb's distributed device: a cluster handle, pools,
//! and the few object operations the device needs, over librados loaded
//! at run time.
//!
//! ```text
//!  ndpdb (host + device engine)
//!        │  Cluster::connect(ceph.conf) ── Pool::open("ndpdb")
//!        ▼
//!   librados.so.2  ──(msgr v2, loopback or network)──▶  OSDs
//!                                                        ├─ objects: extents, manifests
//!                                                        └─ object classes (cls_ndp):
//!                                                           code run next to the object
//! ```
//!
//! What RADOS gives and this crate exposes:
//! - whole-object and ranged reads and writes ([`Pool::write_full`],
//!   [`Pool::read`], [`Pool::stat`], [`Pool::remove`], [`Pool::objects`]);
//! - **atomic write operations on one object** ([`WriteOp`]): several
//!   steps applied all or none, among them a compare of bytes already in
//!   the object: [`Pool::compare_and_write`] is a CAS on a range;
//! - omap key/value pairs per object, set atomically with the rest of a
//!   write operation ([`WriteOp::omap_set`], [`Pool::omap`]);
//! - **object-class calls** ([`Pool::exec`]): a method of a class loaded
//!   into every OSD runs on the object where it lives, and
//!   [`Pool::exec_all`] fans one call out over many objects at once
//!   (asynchronous librados completions), the shape of an NDP scan over
//!   a table's extents.
//!
//! RADOS is atomic per object only; anything that spans objects (a
//! commit touching several manifests) needs a protocol above this crate.
//!
//! Thread safety: librados' cluster handle and I/O contexts may be used
//! from many threads at once for I/O; this crate exposes no call that
//! changes an I/O context's settings (snapshots, namespaces, locator
//! keys), which are the exceptions.

mod counters;
mod error;
mod ffi;
mod ops;
mod pool;

pub use counters::{counters, Counters};
pub use error::{Error, Result};
pub use ops::WriteOp;
pub use pool::{Cluster, Pool};

/// Whether librados can be loaded on this machine.
pub fn available() -> Result<()> {
    ffi::api().map(|_| ())
}
