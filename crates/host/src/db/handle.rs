//! The handle users hold ([`Database`]): a clone of the engine's `Arc`
//! that counts itself among the users, so that dropping the last one
//! stops the background workers and closes the engine.
//!
//! ```text
//!  Database (user) ───┐   user_handles counts these; the last one dropped
//!  Database (user) ───┼─► stops autovacuum and the checkpointer (joined)
//!  Database (internal)┘   Arc<Engine>: its last drop flushes and checkpoints
//! ```
//!
//! Opening is `open.rs`, DDL `ddl.rs`, SHOW STATS `show_stats.rs`;
//! transactions begin in `crate::transaction`.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::state::{Engine, RecoveryReport};
use super::table::TableState;
use crate::catalog::TableMeta;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::foreign_key::ForeignKeyMeta;

/// An open database. Cheap to clone; all clones share one engine. When
/// the last clone a user holds is dropped, the background worker stops
/// and the engine closes (final flush and checkpoint).
pub struct Database {
    pub(crate) inner: Arc<Engine>,
    /// Held by a user (not the engine's own background worker).
    pub(super) user: bool,
}

impl Clone for Database {
    fn clone(&self) -> Database {
        if self.user {
            self.inner.user_handles.fetch_add(1, Ordering::AcqRel);
        }
        Database {
            inner: self.inner.clone(),
            user: self.user,
        }
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if self.user && self.inner.user_handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.inner.autovacuum.stop();
            self.inner.checkpointer.stop();
        }
    }
}

impl Database {
    /// A handle of the engine's own background worker.
    pub(crate) fn internal(inner: Arc<Engine>) -> Database {
        Database { inner, user: false }
    }

    /// Closes this handle as a crash would: no final flush or checkpoint,
    /// so the next open recovers from the WAL. For tests and tools; other
    /// clones of the handle become unusable (58030).
    pub fn close_like_a_crash(self) {
        self.inner.fail();
    }

    /// The link preset the device's data plane runs under.
    pub fn link_model(&self) -> ndpdb_link::LinkModel {
        self.inner.device.model()
    }

    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    pub fn recovery_report(&self) -> RecoveryReport {
        self.inner.recovery.clone()
    }

    /// A number that grows with every DDL (CREATE, DROP or ALTER of a
    /// table, index, view, sequence or constraint), once the change has
    /// finished: a plan made when it read `g` may hold handles of objects
    /// changed since, if it now reads more than `g`.
    pub fn catalog_generation(&self) -> u64 {
        self.inner.catalog_generation.load(Ordering::Acquire)
    }

    pub fn table(&self, name: &str) -> Result<Arc<TableState>> {
        let meta = self
            .inner
            .catalog
            .lock()
            .get(name)
            .ok_or_else(|| Error::undefined_table(name))?;
        self.inner.table_state(meta.id)
    }

    pub fn tables(&self) -> Vec<Arc<TableMeta>> {
        self.inner.catalog.lock().tables()
    }

    /// The FOREIGN KEY constraints that refer to table `parent`, with
    /// their tables.
    pub fn referencing(&self, parent: &str) -> Vec<(Arc<TableMeta>, ForeignKeyMeta)> {
        self.inner.catalog.lock().referencing(parent)
    }

    /// Writes the delta buffer to the device (flush & append).
    pub fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// Flushes everything and starts a new WAL segment.
    pub fn checkpoint(&self) -> Result<()> {
        self.inner.checkpoint()
    }
}
