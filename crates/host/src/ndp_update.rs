//! The host side of update NDP (DESIGN.md §6, §8; update NDP §4.1,
//! §5.3, §6, Fig. 9 and 11).
//!
//! ```text
//!  ndp_modify (one UPDATE / DELETE statement)
//!    pre-allocate pages (LPN, PPN), exclusively the job's
//!    WAL Start-NDP (the encoded invocation)
//!    NDP_CALL … NDP_STATUS (NeedSpace → NDP_SPACE with more pages)
//!    NDP_RESULT → ΔVID, ΔL2P, locked tuples, unused pages
//!    validate: every ΔVID predecessor is still the host VID head
//!              (a host commit that slipped in before the device locked
//!              the tuple) — else 40001, deltas dropped; under READ
//!              COMMITTED such tuples (and those the device found moved)
//!              are redone on the host on their newest version instead
//!    ΔL2P → host L2P and MERGE_MAPS (pages nobody can reach yet)
//!    ΔVID kept in the transaction: its own later statements see it
//!  commit (one critical section with the host versions)
//!    validate again → WAL End-NDP (ΔMaps) + redo + commit record → fsync
//!    ΔVID → VID heads (and the delta buffer's ΔVID list, for the device)
//!    release the job's SLT locks (waking host waiters)
//!  abort / failure: pages back to the free list, SLT locks released
//! ```

use std::sync::atomic::Ordering;

use ndpdb_formats::codec::{Reader, Writer};
use ndpdb_formats::ndp::{JobState, ModifyResult, NdpOp};
use ndpdb_formats::page::PAGE_SIZE;
use ndpdb_formats::record::RecordHeader;
use ndpdb_formats::{Lpn, Ppn, RecId, SqlState, TableId, Value, Vid};
use ndpdb_slt::DeviceTag;
use ndpdb_wal::WalRecord;

use crate::database::{DbInner, TableState};
use crate::error::{Error, Result};
use crate::ndp::{NdpReport, NdpRequest};
use crate::stats::EngineCounters;
use crate::transaction::{Isolation, Transaction, WriteOutcome};

/// One update-NDP statement of a transaction, waiting for its commit.
#[derive(Clone, Debug)]
pub(crate) struct NdpPart {
    pub table: TableId,
    pub tag: DeviceTag,
    pub result: ModifyResult,
}

/// Pages a job starts with: a share of the table's size, grown on demand.
fn initial_pages(ts: &TableState) -> usize {
    let row = ts
        .types
        .iter()
        .map(|t| t.fixed_width().unwrap_or(32))
        .sum::<usize>()
        + 40;
    let table_pages = ts.vids.vid_count() as usize * row / PAGE_SIZE + 1;
    (table_pages / 4).clamp(8, 4096)
}

fn decode_err(e: ndpdb_formats::Error) -> Error {
    Error::new(SqlState::DATA_CORRUPTED, format!("NDP reply: {e}"))
}

impl DbInner {
    /// `n` pages for an update job: recycled ones first, then fresh LPNs
    /// and PPNs.
    pub(crate) fn alloc_space(&self, n: usize) -> Vec<(Lpn, Ppn)> {
        let mut out = Vec::with_capacity(n);
        {
            let mut free = self.ndp_free.lock();
            while out.len() < n {
                let Some(p) = free.pop() else { break };
                // A page of an aborted job may have been read (and cached)
                // by that job's transaction.
                self.pool.forget(p.1);
                out.push(p);
            }
        }
        let fresh = (n - out.len()) as u64;
        if fresh > 0 {
            let first_ppn = self.next_ppn.fetch_add(fresh, Ordering::AcqRel);
            for i in 0..fresh {
                out.push((self.alloc_lpn(), Ppn(first_ppn + i)));
            }
        }
        out
    }

    /// Pages no committed map references, for the next job.
    pub(crate) fn free_space(&self, pages: &[(Lpn, Ppn)]) {
        self.ndp_free.lock().extend_from_slice(pages);
    }

    /// Releases the SLT locks an update job holds (once per bucket).
    pub(crate) fn release_job_locks(&self, table: TableId, tag: DeviceTag, locked: &[Vid]) {
        let keys = locked.iter().map(|v| (table, *v));
        // A bucket that is not the job's any more means a corrupt SLT;
        // the statement already ended, so this only wakes waiters.
        let _ = self.locks.release_device_keys(keys, tag);
    }

    /// Drops an update job's work: its pages and its locks.
    pub(crate) fn discard_part(&self, part: &NdpPart) {
        self.free_space(&part.result.delta_l2p);
        self.free_space(&part.result.unused);
        self.release_job_locks(part.table, part.tag, &part.result.locked);
    }

    /// The ΔVID predecessors that are no longer the VID head.
    pub(crate) fn stale_deltas(&self, ts: &TableState, r: &ModifyResult) -> usize {
        r.delta_vids
            .iter()
            .filter(|d| ts.vids.head(d.vid) != d.pred)
            .count()
    }
}

impl Transaction {
    /// Runs an UPDATE (`NdpOp::Update`) or DELETE (`NdpOp::Delete`) on the
    /// device; returns the number of rows it changed. The changes become
    /// visible to others when this transaction commits.
    pub fn ndp_modify(
        &mut self,
        ts: &TableState,
        req: &NdpRequest,
        params: &[Value],
    ) -> Result<(u64, NdpReport)> {
        let inner = self.database().inner.clone();
        inner.check_ok()?;
        if !req.op.modifies() {
            return Err(Error::new(
                SqlState::INTERNAL_ERROR,
                "ndp_modify runs UPDATE and DELETE only",
            ));
        }
        if self.has_writes_to(ts) {
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                "cannot offload a modification of a table this transaction already changed",
            ));
        }
        let mut inv = self.invocation(ts, req, params);
        inv.space = inner.alloc_space(initial_pages(ts));
        inv.lock_timeout_ms = inner
            .config
            .lock_timeout
            .map_or(inner.config.ndp_lock_wait.as_millis() as u64, |t| {
                t.as_millis() as u64
            });
        // Start-NDP: all call parameters, before the device starts.
        let mut w = Writer::new();
        inv.encode(&mut w);
        inner.wal.append(&[WalRecord::StartNdp {
            txid: self.id(),
            table: ts.meta.id,
            invocation: w.into_inner(),
        }]);
        let mut report = NdpReport::default();
        // If the link fails here the device's state is unknown: its pages
        // are not reused and the statement fails.
        let out = self.ndp_call(ts, inv, &mut report)?;
        let result = ModifyResult::decode(&mut Reader::new(&out.result)).map_err(decode_err)?;
        let part = NdpPart {
            table: ts.meta.id,
            tag: DeviceTag::for_job(out.status.job),
            result,
        };
        if let JobState::Failed(code, message) = &out.status.state {
            inner.discard_part(&part);
            let code = SqlState::from_code(code);
            if code == SqlState::SERIALIZATION_FAILURE {
                EngineCounters::inc(&inner.counters.ndp_early_aborts);
                EngineCounters::inc(&inner.counters.serialization_failures);
            }
            return Err(Error::new(code, format!("on the device: {message}")));
        }
        // Validation: a host commit that slipped in before the device
        // locked a tuple shows as a predecessor that is not the head.
        let mut part = part;
        let slipped: Vec<Vid> = part
            .result
            .delta_vids
            .iter()
            .filter(|d| ts.vids.head(d.vid) != d.pred)
            .map(|d| d.vid)
            .collect();
        if !slipped.is_empty() {
            EngineCounters::inc(&inner.counters.ndp_validation_failures);
            if self.isolation() != Isolation::ReadCommitted {
                inner.discard_part(&part);
                EngineCounters::inc(&inner.counters.serialization_failures);
                return Err(Error::serialization());
            }
            // READ COMMITTED: those tuples are redone on the host below;
            // the device's versions of them are never referenced.
            part.result.delta_vids.retain(|d| !slipped.contains(&d.vid));
            part.result.rows -= slipped.len() as u64;
            part.result.stale.extend(slipped);
        }
        // Unused pages go back now (and only now: the part keeps none).
        inner.free_space(&std::mem::take(&mut part.result.unused));
        // The new pages can be mapped now: nothing points to them yet.
        if !part.result.delta_l2p.is_empty() {
            if let Err(e) = inner.map_ndp_pages(&part.result.delta_l2p) {
                inner.discard_part(&part);
                return Err(e);
            }
        }
        let mut rows = part.result.rows;
        inner
            .counters
            .ndp_rows_modified
            .fetch_add(rows, Ordering::Relaxed);
        let stale = std::mem::take(&mut part.result.stale);
        // The job's locks cover the stale tuples too (ndp_locked).
        self.add_ndp_part(part);
        for vid in stale {
            rows += self.redo_on_newest(ts, vid, req, params)?;
        }
        Ok((rows, report))
    }

    /// READ COMMITTED redo of a tuple the job left (a newer version was
    /// committed after the statement's snapshot): re-check the WHERE
    /// clause on the newest version and apply the change on the host.
    fn redo_on_newest(
        &mut self,
        ts: &TableState,
        vid: Vid,
        req: &NdpRequest,
        params: &[Value],
    ) -> Result<u64> {
        let inner = self.database().inner.clone();
        let head = ts.vids.head(vid);
        if head.is_null() {
            return Ok(0);
        }
        let bytes = inner.fetch(head)?;
        if RecordHeader::parse(&bytes)?.is_tombstone() {
            return Ok(0);
        }
        let qualifies = |row: &[Value]| -> Result<bool> {
            Ok(match &req.filter {
                Some(f) => f.eval_predicate(row, params)?,
                None => true,
            })
        };
        let outcome = match &req.op {
            NdpOp::Update { sets, not_null } => {
                let mut apply = |row: &[Value]| -> Result<Option<Vec<Value>>> {
                    if !qualifies(row)? {
                        return Ok(None);
                    }
                    let mut new_row = row.to_vec();
                    for (c, p) in sets {
                        new_row[*c as usize] = p.eval(row, params)?;
                    }
                    if not_null.iter().any(|c| new_row[*c as usize].is_null()) {
                        return Err(Error::new(
                            SqlState::NOT_NULL_VIOLATION,
                            "null value violates not-null constraint",
                        ));
                    }
                    Ok(Some(new_row))
                };
                self.update(ts, vid, head, &mut apply)?
            }
            _ => {
                let mut recheck = |row: &[Value]| qualifies(row);
                self.delete(ts, vid, head, &mut recheck)?
            }
        };
        Ok(u64::from(matches!(outcome, WriteOutcome::Done(_))))
    }
}

/// Heads an update job moved, for the transaction's own reads.
pub(crate) fn own_heads(part: &NdpPart) -> impl Iterator<Item = ((TableId, Vid), RecId)> + '_ {
    part.result
        .delta_vids
        .iter()
        .map(move |d| ((part.table, d.vid), d.new))
}
