//! The end of a transaction: commit (extended NDP logging's overflow
//! logs moved first, with lock violation while they move; the versions
//! and ΔMaps installed and logged; the commit record durable), or abort;
//! then locks, tags and pages released.
//!
//! ```text
//!  commit: [violable: ΔVID validated, heads set] → overflow logs finished
//!          → wait for the transactions depended on → commit_versions
//!          → end (visible, locks released) → [dependents go on]
//!  abort:  end (locks released, job pages back, overflow logs removed)
//! ```

use crate::error::{Error, Result};
use crate::mvcc::locks::LockKey;
use crate::stats::EngineCounters;
use crate::transaction::commit::PendingVersion;
use ndpdb_formats::SqlState;

use super::Transaction;

impl Transaction {
    /// Keeps the overflow log an update job wrote while it ran.
    pub(crate) fn keep_overflow_stream(
        &mut self,
        start: ndpdb_formats::Lsn,
        w: crate::ndp::overflow_log::OverflowWriter,
    ) {
        self.overflow_streams.push((start, w));
    }

    /// Whether the commit moves an overflow log (with lock violation, it
    /// is violable meanwhile).
    fn moves_overflow_logs(&self) -> bool {
        self.ndp_parts
            .iter()
            .any(|p| p.overflow_to_move().is_some())
    }

    /// Moves the overflow log of each update job run with
    /// `ndp_logging = extended` from the device to the host.
    fn move_overflow_logs(&mut self) -> Result<()> {
        let inner = self.db.inner.clone();
        let id = self.id;
        for part in &mut self.ndp_parts {
            let Some(start) = part.overflow_to_move() else {
                continue;
            };
            let t = std::time::Instant::now();
            let streamed = self
                .overflow_streams
                .iter()
                .position(|(s, _)| *s == start)
                .map(|i| self.overflow_streams.swap_remove(i).1);
            let log = match streamed {
                Some(w) => w.finish(&inner.device, &part.result.delta.l2p)?,
                None => crate::ndp::overflow_log::write(
                    &inner.dir,
                    &inner.device,
                    id,
                    part.table,
                    start,
                    &part.result.delta.l2p,
                )?,
            };
            let c = &inner.counters;
            c.ndp_overflow_bytes
                .fetch_add(log.bytes, std::sync::atomic::Ordering::Relaxed);
            c.ndp_overflow_micros.fetch_add(
                t.elapsed().as_micros() as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
            part.overflow = Some(log);
        }
        Ok(())
    }

    /// Ends the transaction: `committed` says whether its update-NDP
    /// pages are now referenced (else they go back to the free list).
    fn end(&mut self, committed: bool) {
        self.db.inner.txm.finish(self.id);
        self.ssi_end(committed);
        let inner = &self.db.inner;
        inner.locks.release_all(self.id, &self.locks);
        // Every job of this transaction locked with its tag: release the
        // union of their tuples once (buckets may repeat across jobs).
        if let Some(tag) = self.ndp_tag {
            let t = std::time::Instant::now();
            let keys: Vec<LockKey> = self.ndp_locked.iter().copied().collect();
            let _ = inner.locks.release_device_keys(keys.into_iter(), tag);
            inner.counters.ndp_host_release_micros.fetch_add(
                t.elapsed().as_micros() as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        for part in self.ndp_parts.drain(..) {
            if let (true, Some(start)) = (part.extended, part.start_ndp) {
                if committed {
                    inner.overflow_committed.lock().push(start);
                } else {
                    // Also a file left half written by a failed move; a
                    // failure here leaves a file the next open removes.
                    let _ = crate::ndp::overflow_log::remove(&inner.dir, start);
                }
            }
            if !committed {
                // The job's pages were mapped when it ended.
                inner.release_mapped(&part.result.delta.l2p);
                inner.free_space(&part.result.unused);
            }
        }
        self.ndp_heads.clear();
        self.dependencies.clear();
        // Unfinished logs (an abort) remove their files.
        self.overflow_streams.clear();
        self.ndp_locked.clear();
        self.ndp_buckets.clear();
        if let Some(h) = self.stage.take().and_then(|s| s.device_handle()) {
            // Only memory on the device: a link failure here already
            // failed the transaction's other device calls.
            let _ = inner.release_stages(&[h]);
        }
        if let Some(t) = self.ndp_tag.take() {
            // Its locks are released above: the tag may be reused.
            inner.locks.set_device_owner(t, None);
            inner.ndp_tags.lock().free(t);
        }
        self.locks.clear();
        self.writes.clear();
        self.order.clear();
        self.finished = true;
    }

    /// Commits: returns once the commit is durable.
    pub fn commit(mut self) -> Result<()> {
        if let Err(e) = self
            .check_device_work()
            .and_then(|()| self.ssi_pre_commit())
        {
            self.abort_in_place();
            return Err(e);
        }
        // Extended NDP logging: the overflow logs reach the host first (a
        // failure aborts: dropping `self` removes what was written) —
        // with lock violation, while waiters take this transaction's locks.
        let violable = match (self.lock_violation, self.ndp_tag) {
            (true, Some(tag)) if self.moves_overflow_logs() => Some(self.db.inner.enter_violable(
                self.id,
                tag,
                &self.ndp_parts,
            )?),
            _ => None,
        };
        if let Err(e) = self.move_overflow_logs() {
            if let Some(v) = violable {
                self.db.inner.close_violable(&v);
                self.db.inner.undo_violable_heads(&self.ndp_parts);
                self.abort_in_place();
                self.db.inner.leave_violable(v, false);
            }
            return Err(e);
        }
        if !self.dependencies.is_empty() {
            EngineCounters::inc(&self.db.inner.counters.ndp_commit_dependencies);
            self.dependencies.wait(self.id)?;
        }
        let mut writes = std::mem::take(&mut self.writes);
        let versions: Vec<PendingVersion> = self
            .order
            .iter()
            .filter_map(|k| {
                writes.remove(k).map(|e| PendingVersion {
                    table: k.0,
                    vid: k.1,
                    record: e.record,
                })
            })
            .collect();
        drop(writes);
        let result =
            self.db
                .inner
                .commit_versions(self.id, versions, &self.ndp_parts, violable.is_some());
        let unlogged = self.ndp_parts.iter().any(|p| !p.logged);
        match violable {
            Some(v) => {
                self.db.inner.close_violable(&v);
                if result.is_err() {
                    self.db.inner.undo_violable_heads(&self.ndp_parts);
                }
                self.end(result.is_ok());
                // Visible now (or gone): the dependents go on (or fail).
                self.db.inner.leave_violable(v, result.is_ok());
            }
            None => self.end(result.is_ok()),
        }
        let counters = &self.db.inner.counters;
        match result {
            Ok(()) => {
                EngineCounters::inc(&counters.commits);
                if unlogged {
                    // Without End-NDP records the ΔMaps must reach the
                    // device's maps now, and redo replay must start after
                    // them (older redo would move the heads back): a
                    // checkpoint does both. Until it has, the commit is
                    // not acknowledged; if it fails, the engine stops.
                    if let Err(e) = self.db.inner.checkpoint() {
                        self.db.inner.fail();
                        return Err(Error::new(
                            SqlState::IO_ERROR,
                            format!(
                                "could not make the map changes of an unlogged NDP commit durable: {}",
                                e.message
                            ),
                        )
                        .with_detail("The commit may or may not survive a restart."));
                    }
                }
                // Maintenance failures poison the engine; the commit stands.
                let _ = self.db.inner.after_commit();
                Ok(())
            }
            Err(e) => {
                EngineCounters::inc(&counters.aborts);
                Err(e)
            }
        }
    }

    pub fn rollback(mut self) {
        self.abort_in_place();
    }

    fn abort_in_place(&mut self) {
        if !self.finished {
            self.end(false);
            EngineCounters::inc(&self.db.inner.counters.aborts);
        }
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        self.abort_in_place();
    }
}
