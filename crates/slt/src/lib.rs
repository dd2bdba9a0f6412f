//! The shared lock table (SLT) between host and device (DESIGN.md §7;
//! update NDP §5; cache-coherent SLT §3).
//!
//! ```text
//!   host lock manager ──┐                       ┌── device PEs (poll with backoff)
//!                       ▼                       ▼
//!            ┌──────── shared region (16-byte buckets, 128-bit CAS) ────────┐
//!            │ [holder │ waiter │ … │ host-reserved]  × buckets              │
//!            └───────────────────────────────────────────────────────────────┘
//!   host groups (HLT tail): host transactions behind each host-shared entry
//! ```
//!
//! Modules, bottom-up:
//! - [`region`]: the shared mapping (anonymous or `/dev/shm`); all `unsafe`.
//! - [`bucket`]: one 16-byte lock queue as pure transitions.
//! - [`table`]: hashing, CAS loops, device acquire with polling.
//! - [`host`]: host-shared locks, groups and lock ownership.

pub mod bucket;
pub mod error;
pub mod host;
pub mod region;
pub mod table;
pub mod words;

#[cfg(test)]
mod model;

pub use bucket::{Bucket, DeviceTag, Slot};
pub use error::{Result, SltError};
pub use host::{HostSide, Joined};
pub use table::{remove_dead_regions, DeviceGrant, LockKey, SharedLockTable, SltStats, Withdrawn};
pub use words::RemoteWords;
