//! The database: the handle users hold ([`Database`]) and the engine's
//! state behind it ([`Engine`]), split by what each part does with them.
//!
//! ```text
//!  DIR/catalog.bin        host catalog
//!  DIR/wal/*.seg          host WAL
//!  DIR/device/…           the embedded device's storage (pages, maps)
//!
//!  handle.rs      Database: a cheap clone of Arc<Engine>; the last user
//!                 handle stops the background workers
//!  state.rs       Engine: every shared structure (catalog, maps, delta
//!                 buffer, pool, WAL, TxManager, locks, space, workers'
//!                 handles); a clean close is its Drop
//!  table.rs       TableState: one table's catalog entry, VID map, PK and
//!                 secondary indexes
//!  open.rs        opening: catalog, device maps, WAL replay (`recovery`),
//!                 PK indexes, the first checkpoint, the workers started
//!  ddl.rs         CREATE / DROP of tables, views and sequences
//!  read.rs        a version's bytes: delta buffer, then L2P → buffer pool
//!  flush.rs       flush & append; page allocation and reclaim
//!  checkpoint.rs  checkpoints: the record under the gate, PK index files after
//!  show_stats.rs  SHOW STATS and the PK index check
//! ```
//!
//! **Commit** (in one critical section, so WAL order equals page order;
//! `crate::transaction::commit`): place the write set's encoded versions in the delta
//! buffer, move the VID heads, append redo images and the commit record
//! to the WAL buffer. Then group-commit fsync, and only then is the
//! transaction removed from the in-flight set (new snapshots see it) and
//! its locks released.
//!
//! **Flush & append** makes the WAL durable first (no page reaches the
//! device before its log records), then writes the sealed pages, then
//! merges ΔL2P/ΔVID into the device maps (the device fsyncs pages before
//! logging the merge).
//!
//! **Recovery**: load the catalog, the device's L2P and VID maps, then replay
//! the WAL after the last checkpoint (`crate::recovery`; from a backup's
//! checkpoint for a restore, `crate::backup`), rebuild the PK indexes,
//! and take a checkpoint. Uncommitted work never reached storage, so there
//! is nothing to undo.
//!
//! The files here reach no module above them (transactions, NDP, GC,
//! the background workers' loops): those add `impl Engine` and
//! `impl Database` blocks of their own, and the workers are started
//! through the narrow traits of `crate::background`.

mod checkpoint;
mod ddl;
mod flush;
mod handle;
mod open;
mod read;
mod show_stats;
mod state;
mod table;

pub use ddl::NewTable;
pub use handle::Database;
pub use open::new_slt;
pub use read::RecordBytes;
pub use state::{RecoveryReport, PASS_ALONG_MAX_PAGES};
pub use table::TableState;

pub(crate) use read::{prefetch_heads, visible_head_row_in};
pub(crate) use state::Engine;
