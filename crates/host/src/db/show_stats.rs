//! `SHOW STATS`: one `(name, value)` row per counter of the device, the
//! buffer pool, the delta buffer, the WAL, GC, transactions, NDP and the
//! lock tables; and the check that the PK indexes agree with the VID maps.
//!
//! ```text
//!  device counters ─┐
//!  buffer.*, delta_buffer.*, wal.*, gc.*, txn.*, ndp.*, scan.*, locks.* ─┴─► rows
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use ndpdb_formats::record::RecordView;
use ndpdb_formats::{SqlState, Vid};

use super::handle::Database;
use super::table::TableState;
use crate::error::{Error, Result};
use crate::stats::get;

impl Database {
    /// `(name, value)` rows for `SHOW STATS`.
    pub fn stats(&self) -> Vec<(String, i64)> {
        let i = &self.inner;
        let mut rows: Vec<(String, i64)> = i
            .device
            .stats()
            .rows()
            .into_iter()
            .map(|(k, v)| (k, v as i64))
            .collect();
        let (delta_bytes, delta_vids) = {
            let d = i.delta.read();
            (d.bytes(), d.delta_vid_len())
        };
        let c = &i.counters;
        let (free_pages, released_pages, file_pages) = i.space.counts();
        let page = ndpdb_formats::page::PAGE_SIZE as u64;
        let live_bytes = i.storage_live_bytes();
        let slt = i.locks.slt().map(|s| s.stats()).unwrap_or_default();
        let hits = get(&i.pool.hits);
        let misses = get(&i.pool.misses);
        rows.extend([
            ("buffer.hits".to_string(), hits as i64),
            ("buffer.misses".into(), misses as i64),
            ("buffer.scan_reads".into(), get(&i.pool.scan_reads) as i64),
            ("buffer.evictions".into(), get(&i.pool.evictions) as i64),
            (
                "buffer.resident_pages".into(),
                i.pool.resident_pages() as i64,
            ),
            (
                "buffer.capacity_pages".into(),
                i.pool.capacity_pages() as i64,
            ),
            ("delta_buffer.bytes".into(), delta_bytes as i64),
            ("delta_buffer.vid_entries".into(), delta_vids as i64),
            ("delta_buffer.flushes".into(), get(&c.delta_flushes) as i64),
            (
                "delta_buffer.pages_flushed".into(),
                get(&c.pages_flushed) as i64,
            ),
            ("slt.cas_attempts".into(), slt.cas_attempts as i64),
            ("slt.cas_failures".into(), slt.cas_failures as i64),
            ("wal.bytes".into(), get(&i.wal.stats.bytes) as i64),
            ("wal.fsyncs".into(), get(&i.wal.stats.fsyncs) as i64),
            (
                "wal.bytes_since_checkpoint".into(),
                i.wal.bytes_since_checkpoint() as i64,
            ),
            ("wal.checkpoints".into(), get(&c.checkpoints) as i64),
            (
                "pk_index.save_failures".into(),
                get(&c.pk_index_save_failures) as i64,
            ),
            (
                "wal.checkpoint_failures".into(),
                get(&c.checkpoint_failures) as i64,
            ),
            (
                "recovery.pk_indexes_loaded".into(),
                i.recovery.pk_indexes_loaded as i64,
            ),
            (
                "recovery.pk_indexes_rebuilt".into(),
                i.recovery.pk_indexes_rebuilt as i64,
            ),
            ("gc.runs".into(), get(&c.gc_runs) as i64),
            ("gc.failures".into(), get(&c.gc_failures) as i64),
            ("gc.micros".into(), i.gc_micros() as i64),
            (
                "gc.versions_reclaimed".into(),
                get(&c.gc_versions_reclaimed) as i64,
            ),
            (
                "gc.versions_relocated".into(),
                get(&c.gc_versions_relocated) as i64,
            ),
            ("gc.tuples_removed".into(), get(&c.gc_tuples_removed) as i64),
            ("gc.pages_freed".into(), get(&c.gc_pages_freed) as i64),
            ("gc.pages_scanned".into(), get(&c.gc_pages_scanned) as i64),
            ("gc.pages_skipped".into(), get(&c.gc_pages_skipped) as i64),
            (
                "index.dead_runs_jumped".into(),
                get(&c.dead_runs_jumped) as i64,
            ),
            ("storage.file_bytes".into(), (file_pages * page) as i64),
            ("storage.free_pages".into(), free_pages as i64),
            ("storage.released_pages".into(), released_pages as i64),
            ("storage.mapped_pages".into(), i.l2p.len() as i64),
            ("storage.live_bytes".into(), live_bytes as i64),
            ("txn.commits".into(), get(&c.commits) as i64),
            ("txn.aborts".into(), get(&c.aborts) as i64),
            (
                "txn.serialization_failures".into(),
                get(&c.serialization_failures) as i64,
            ),
            ("txn.deadlocks".into(), get(&c.deadlocks) as i64),
            ("txn.lock_waits".into(), get(&c.lock_waits) as i64),
            ("txn.active".into(), i.txm.active_count() as i64),
            ("ndp.calls".into(), get(&c.ndp_calls) as i64),
            (
                "ndp.shared_state_bytes".into(),
                get(&c.ndp_shared_bytes) as i64,
            ),
            ("ndp.result_rows".into(), get(&c.ndp_result_rows) as i64),
            ("ndp.device_micros".into(), get(&c.ndp_device_micros) as i64),
            ("ndp.pe_micros".into(), get(&c.ndp_pe_micros) as i64),
            ("ndp.tuples".into(), get(&c.ndp_tuples) as i64),
            ("ndp.pages_read".into(), get(&c.ndp_pages_read) as i64),
            ("ndp.pages_pruned".into(), get(&c.ndp_pages_pruned) as i64),
            ("ndp.bytes_touched".into(), get(&c.ndp_bytes_touched) as i64),
            ("scan.pages".into(), get(&c.scan_pages) as i64),
            ("scan.pages_pruned".into(), get(&c.scan_pages_pruned) as i64),
            (
                "scan.bytes_touched".into(),
                get(&c.scan_bytes_touched) as i64,
            ),
            ("ndp.rows_modified".into(), get(&c.ndp_rows_modified) as i64),
            (
                "ndp.space_round_trips".into(),
                get(&c.ndp_space_round_trips) as i64,
            ),
            ("ndp.early_aborts".into(), get(&c.ndp_early_aborts) as i64),
            (
                "ndp.validation_failures".into(),
                get(&c.ndp_validation_failures) as i64,
            ),
            (
                "ndp.device_lock_micros".into(),
                get(&c.ndp_device_lock_micros) as i64,
            ),
            (
                "ndp.overflow_bytes".into(),
                get(&c.ndp_overflow_bytes) as i64,
            ),
            (
                "ndp.overflow_streamed_bytes".into(),
                get(&c.ndp_overflow_streamed_bytes) as i64,
            ),
            (
                "ndp.lock_violations".into(),
                get(&c.ndp_lock_violations) as i64,
            ),
            (
                "ndp.pipelined_statements".into(),
                get(&c.ndp_pipelined) as i64,
            ),
            ("device.reattaches".into(), get(&c.device_reattaches) as i64),
            (
                "delta_buffer.flushes_deferred".into(),
                get(&c.flushes_deferred) as i64,
            ),
            (
                "ndp.commit_dependencies".into(),
                get(&c.ndp_commit_dependencies) as i64,
            ),
            (
                "ndp.violation_early_aborts".into(),
                get(&c.ndp_violation_early_aborts) as i64,
            ),
            (
                "ndp.overflow_micros".into(),
                get(&c.ndp_overflow_micros) as i64,
            ),
            (
                "ndp.host_release_micros".into(),
                get(&c.ndp_host_release_micros) as i64,
            ),
            ("locks.held".into(), i.locks.locked_keys() as i64),
            ("locks.waiting".into(), i.locks.waiting() as i64),
            ("ssi.tracked".into(), i.ssi.tracked() as i64),
        ]);
        rows
    }

    /// Lock requests waiting now (host transactions).
    pub fn lock_waiters(&self) -> usize {
        self.inner.locks.waiting()
    }

    /// Pages the host buffer pool holds at most.
    pub fn buffer_pool_pages(&self) -> usize {
        self.inner.pool.capacity_pages()
    }

    /// A single named counter (0 if unknown).
    pub fn stat(&self, name: &str) -> i64 {
        self.stats()
            .into_iter()
            .find(|(k, _)| k == name)
            .map_or(0, |(_, v)| v)
    }

    /// Checks that every PK index entry names a VID whose newest version
    /// carries that key, and that every live tuple is indexed.
    pub fn verify_pk_indexes(&self) -> Result<()> {
        let tables: Vec<Arc<TableState>> = self.inner.tables.read().values().cloned().collect();
        for ts in tables {
            let Some(pk) = ts.pk.get() else { continue };
            let mut indexed: HashMap<Vid, Vec<u8>> = HashMap::new();
            for (key, vid) in pk.entries()? {
                indexed.insert(vid, key);
            }
            for (vid, head) in ts.vids.entries() {
                let rec = self.inner.fetch(head)?;
                let view = RecordView::parse(&rec)?;
                let row = view.decode(&ts.types)?;
                let key = ts.pk_key(&row).unwrap_or_default();
                let unindexed_deleted = view.header.is_tombstone() && !indexed.contains_key(&vid);
                if indexed.get(&vid) != Some(&key) && !unindexed_deleted {
                    return Err(Error::new(
                        SqlState::DATA_CORRUPTED,
                        format!(
                            "PK index disagrees with VID map for {} vid {}",
                            ts.meta().name,
                            vid.0
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}
