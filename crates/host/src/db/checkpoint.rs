//! Checkpoints: the delta buffer flushed, the record logged under the
//! checkpoint gate (commits wait only for that), the older WAL segments
//! deleted, then the PK index files written and a manifest naming the
//! checkpoint.
//!
//! ```text
//!  flush (commits go on)
//!  gate ─► flush the rest ─► sequences ─► WAL Checkpoint record
//!       ─► overflow logs it covered: removed (or kept for a base backup)
//!  WAL segments before it deleted
//!  PK index files ─► manifest naming the checkpoint (if still the last)
//! ```
//!
//! The background checkpointer (`crate::background::checkpointer`) takes
//! the ones commits ask for, at a spread pace; [`Engine::checkpoint`]
//! takes one in the foreground at the disk's speed.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use ndpdb_formats::{Lsn, TxId};
use ndpdb_wal::CheckpointInfo;

use super::state::Engine;
use super::table::TableState;
use crate::background::checkpointer::{Checkpointer, Checkpoints};
use crate::error::Result;
use crate::stats::EngineCounters;
use crate::storage::pk_index;

impl Engine {
    /// Writes the PK indexes that gained keys, then a manifest naming the
    /// checkpoint logged for `next_txid` — if that is still the WAL's last
    /// one. Runs after the checkpoint record, outside the gate: every key
    /// of a version the checkpoint covers was in the index before the
    /// record was logged (keys go in at insert time and never leave), so
    /// files written now hold a superset of them. A crash before the
    /// manifest leaves one naming an older checkpoint, and the next open
    /// rebuilds the indexes from the head records.
    pub(crate) fn save_pk_indexes(&self, next_txid: TxId, pace: pk_index::Pace<'_>) {
        let _one = self.pk_save.lock();
        let dir = pk_index::index_dir(&self.dir);
        let tables: Vec<Arc<TableState>> = self.tables.read().values().cloned().collect();
        let mut ok = true;
        for ts in &tables {
            if let Some(pk) = ts.pk.get() {
                ok &= pk.save(&dir, ts.id, pace).is_ok() && !pk.is_broken();
            }
        }
        if self.last_checkpoint.load(Ordering::Acquire) != next_txid.0 {
            // A later checkpoint was logged meanwhile: its own save names it.
            return;
        }
        if !(ok && pk_index::write_manifest(&dir, next_txid).is_ok()) {
            EngineCounters::inc(&self.counters.pk_index_save_failures);
        }
    }

    /// A checkpoint. Commits wait (the gate) only while the delta buffer's
    /// remainder is flushed and the record is logged: most of the buffer
    /// is flushed before; the older WAL segments are deleted and the PK
    /// index files written after.
    pub fn checkpoint(&self) -> Result<()> {
        // A spread save under way holds the PK index files this one waits
        // for.
        self.checkpointer.hurry();
        self.checkpoint_paced(pk_index::Pace::DiskSpeed)
    }

    /// A checkpoint whose PK index files go to the disk at `pace`.
    pub(crate) fn checkpoint_paced(&self, pace: pk_index::Pace<'_>) -> Result<()> {
        let (logged, removed) = self.checkpoint_record()?;
        self.save_pk_indexes(logged.next_txid, pace);
        removed
    }

    /// A checkpoint up to its PK index files: flush, the record under the
    /// gate, the older WAL segments deleted. Returns the record and the
    /// outcome of the deletion (segments left by a failure there go at
    /// the next checkpoint); the caller then calls
    /// [`Self::save_pk_indexes`].
    pub(crate) fn checkpoint_record(&self) -> Result<(Logged, Result<()>)> {
        self.flush()?;
        let logged = {
            let _g = self.checkpoint_gate.write();
            self.checkpoint_holding_gate()?
        };
        let removed = self.wal.remove_obsolete().map_err(Into::into);
        Ok((logged, removed))
    }

    /// The part of a checkpoint done while the caller holds the checkpoint
    /// gate: flush, sequences, the WAL record. The caller then releases
    /// the gate, deletes the older WAL segments (`Wal::remove_obsolete`)
    /// and calls [`Self::save_pk_indexes`].
    pub(crate) fn checkpoint_holding_gate(&self) -> Result<Logged> {
        self.check_ok()?;
        self.flush()?;
        let next_txid = self.txm.next_txid();
        self.sequences.checkpoint()?;
        let covered = std::mem::take(&mut *self.overflow_committed.lock());
        let at = match self.wal.log_checkpoint(CheckpointInfo { next_txid }) {
            Ok(at) => at,
            Err(e) => {
                self.fail();
                return Err(e.into());
            }
        };
        self.last_checkpoint.store(next_txid.0, Ordering::Release);
        if self.wal.retained_from().is_some() {
            // A restore from the kept backup replays those jobs.
            self.overflow_retained.lock().extend(covered);
        } else {
            // The maps now hold those jobs' pages durably.
            for start in covered {
                crate::ndp::overflow_log::remove(&self.dir, start)?;
            }
        }
        EngineCounters::inc(&self.counters.checkpoints);
        Ok(Logged { at, next_txid })
    }
}

/// A checkpoint record in the WAL.
pub(crate) struct Logged {
    pub at: Lsn,
    pub next_txid: TxId,
}

impl Checkpoints for Engine {
    fn checkpointer(&self) -> &Arc<Checkpointer> {
        &self.checkpointer
    }

    fn check_ok(&self) -> Result<()> {
        Engine::check_ok(self)
    }

    fn checkpoint_due(&self) -> bool {
        self.wal.bytes_since_checkpoint() >= self.config.checkpoint_wal_bytes
    }

    fn checkpoint_paced(&self, pace: pk_index::Pace<'_>) -> Result<()> {
        Engine::checkpoint_paced(self, pace)
    }

    fn count_checkpoint_failure(&self) {
        EngineCounters::inc(&self.counters.checkpoint_failures);
    }
}
