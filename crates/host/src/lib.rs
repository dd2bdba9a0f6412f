//! The host engine (DESIGN.md §1–§4, §8).
//!
//! ```text
//!  db/ ─ the Database handle and the engine's state behind it
//!   ├─ transaction/  reads at a snapshot, writes, certification, commit
//!   ├─ mvcc/         snapshots, the delta buffer, lock tables, SSI
//!   ├─ storage/      maps, free space, buffer pool, page scans, indexes
//!   ├─ ndp/          work on the device: scans, updates, ΔMaps, overflow logs
//!   ├─ gc/           version garbage collection as an NDP job
//!   ├─ recovery/     the WAL replayed at open; End-NDP replay
//!   └─ background/   autovacuum, checkpointer, device reattach
//! ```
//!
//! Modules in the order a write travels through them:
//!
//! - [`config`]: settings (buffer-pool budget, delta-buffer limit, lock timeout…).
//! - [`error`]: the host error, always carrying a PostgreSQL SQLSTATE.
//! - [`catalog`]: tables and schemas, persisted on the host.
//! - [`foreign_key`]: FOREIGN KEY constraints: the referenced-key lock, checks and actions.
//! - [`mvcc`]: TxIds and snapshots ([`mvcc::snapshot`]), SERIALIZABLE's SIREAD locks
//!   and dangerous structures ([`mvcc::ssi`]), the integrated lock table: SLT head +
//!   host lock table tail ([`mvcc::locks`]), and the delta buffer: new versions not
//!   yet on the device ([`mvcc::delta_buffer`]).
//! - [`storage`]: the authoritative L2P and VID maps, the primary-key and secondary
//!   indexes, free device pages reused once nobody can read them, the buffer pool
//!   (CLOCK under a byte budget), page-by-page scans through the scan core on
//!   `host_workers` threads, and table rewrites (ADD / DROP COLUMN).
//! - [`sequence`]: sequences (SERIAL, identity, nextval), outside transactions.
//! - [`db`]: the [`Database`] handle and the engine's state behind it: opening (on any
//!   connected device), DDL, reads, flush & append, checkpoints.
//! - `background`: the engine's threads: autovacuum, the checkpointer, the device
//!   reattach.
//! - [`attach`]: a device in another process, reached through the socket link.
//! - `recovery`: the WAL replayed at open (after a crash, or onto a device rebuilt from a backup).
//! - [`backup`]: online base backups and the restore of a lost device store.
//! - [`ndp`]: near-data processing: scans, aggregates, UPDATE/DELETE and FOR UPDATE on the
//!   device; ΔMaps validated at statement end and at commit; overflow logs.
//! - [`gc`]: version garbage collection as an NDP job, validated and applied like update NDP.
//! - [`transaction`]: the transaction API used by SQL (reads, writes, commit).
//! - [`stats`]: counters shown by `SHOW STATS`.
//! - [`interrupt`]: statement cancellation and `statement_timeout`.

mod alter_table;
pub mod attach;
mod background;
pub mod backup;
pub mod catalog;
pub mod config;
pub mod db;
pub mod error;
pub mod foreign_key;
pub mod gc;
pub mod interrupt;
pub mod mvcc;
pub mod ndp;
mod recovery;
pub mod sequence;
pub mod stats;
pub mod storage;
pub mod transaction;

pub use backup::{BackupLabel, BackupReport};
pub use catalog::{TableMeta, ViewMeta};
pub use config::Config;
/// The path the crates above name the handle's module by.
pub use db as database;
pub use db::{Database, NewTable};
pub use error::{Error, Result};
pub use gc::{GcCost, GcReport};
pub use interrupt::Interrupt;
pub use mvcc::locks::LockWait;
pub use mvcc::snapshot::Snapshot;
pub use ndp::NdpLogging;
pub use ndpdb_link::NvmProfile;
pub use transaction::{Inserted, Isolation, OnConflict, SavepointId, Transaction, WriteOutcome};
