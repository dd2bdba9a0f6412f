//! The host engine (DESIGN.md §1–§4, §8).
//!
//! Modules in the order a write travels through them:
//!
//! - [`config`]: settings (buffer-pool budget, delta-buffer limit, lock timeout…).
//! - [`error`]: the host error, always carrying a PostgreSQL SQLSTATE.
//! - [`catalog`]: tables and schemas, persisted on the host.
//! - [`foreign_key`]: FOREIGN KEY constraints: the referenced-key lock, checks and actions.
//! - [`txn`]: TxIds, snapshots and the visibility rule.
//! - [`ssi`]: SERIALIZABLE: SIREAD locks, rw-antidependencies, dangerous structures.
//! - [`locks`]: the integrated lock table: SLT head + host lock table (HLT) tail.
//! - [`maps`]: the host's authoritative L2P map and per-table VID maps.
//! - [`pk_index`]: primary-key index (key → VID).
//! - [`sequence`]: sequences (SERIAL, identity, nextval), outside transactions.
//! - [`secondary_index`]: `CREATE [UNIQUE] INDEX`: ordered key → VIDs, on the host.
//! - [`shared_state`]: the delta buffer (new versions not yet on the device).
//! - [`buffer_pool`]: cache of device pages with a byte budget and CLOCK eviction.
//! - [`db`]: the [`Database`] handle and the engine's state behind it: opening (on any
//!   connected device), DDL, reads, flush & append, checkpoints.
//! - `background`: the engine's threads: autovacuum, the checkpointer, the device
//!   reattach.
//! - [`attach`]: a device in another process, reached through the socket link.
//! - [`rewrite`]: a table rewritten into a new column layout (ADD / DROP COLUMN).
//! - `recovery`: the WAL replayed at open (after a crash, or onto a device rebuilt from a backup).
//! - [`backup`]: online base backups and the restore of a lost device store.
//! - [`ndp`]: near-data processing: scans, aggregates, UPDATE/DELETE and FOR UPDATE on the
//!   device; ΔMaps validated at statement end and at commit; overflow logs.
//! - [`gc`]: version garbage collection as an NDP job, validated and applied like update NDP.
//! - [`space`]: free device pages, reused once nobody can read them.
//! - [`transaction`]: the transaction API used by SQL (reads, writes, commit).
//! - [`page_scan`]: table scans page by page through the scan core, on `host_workers` threads.
//! - [`stats`]: counters shown by `SHOW STATS`.
//! - [`interrupt`]: statement cancellation and `statement_timeout`.

mod alter_table;
pub mod attach;
mod background;
pub mod backup;
pub mod buffer_pool;
pub mod catalog;
mod commit;
pub mod config;
pub mod db;
pub mod error;
pub mod foreign_key;
mod framed_file;
pub mod gc;
pub mod interrupt;
pub mod locks;
pub mod maps;
pub mod ndp;
pub mod page_scan;
pub mod pk_index;
mod recovery;
pub mod rewrite;
pub mod secondary_index;
pub mod sequence;
pub mod shared_state;
pub mod space;
pub mod ssi;
pub mod stats;
pub mod transaction;
pub mod txn;

pub use backup::{BackupLabel, BackupReport};
pub use catalog::{TableMeta, ViewMeta};
pub use config::Config;
/// The path the crates above name the handle's module by.
pub use db as database;
pub use db::{Database, NewTable};
pub use error::{Error, Result};
pub use gc::{GcCost, GcReport};
pub use interrupt::Interrupt;
pub use locks::LockWait;
pub use ndp::NdpLogging;
pub use ndpdb_link::NvmProfile;
pub use transaction::{Inserted, Isolation, OnConflict, SavepointId, Transaction, WriteOutcome};
pub use txn::Snapshot;
