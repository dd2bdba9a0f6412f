//! Multi-version concurrency control, the host's side: TxIds and
//! snapshots, the delta buffer that holds the newest versions, the
//! integrated lock table and Serializable Snapshot Isolation. The
//! visibility rule itself is `ndpdb_formats::visibility`, shared with the
//! device; a transaction's life is `transaction/`.
//!
//! ```text
//!  snapshot.rs      TxManager: TxIds, CSNs, snapshots, the oldest active
//!  delta_buffer.rs  new versions not yet flushed to device pages (shared state)
//!  locks/           the shared lock table (SLT) and host lock table (HLT)
//!  ssi/             SERIALIZABLE: rw-antidependencies and dangerous structures
//! ```

pub mod delta_buffer;
pub mod locks;
pub mod snapshot;
pub mod ssi;
