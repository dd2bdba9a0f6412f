//! The host side of update NDP (DESIGN.md §6, §8; update NDP §4.1,
//! §5.3, §6, Fig. 9 and 11).
//!
//! ```text
//!  ndp_modify (one UPDATE / DELETE statement)
//!    pre-allocate pages (LPN, PPN), exclusively the job's
//!    WAL Start-NDP (the encoded invocation)
//!    NDP_CALL … NDP_STATUS (NeedSpace → NDP_SPACE with more pages)
//!    NDP_RESULT → ΔVID, ΔL2P, locked tuples, unused pages
//!    tuples in buckets of the transaction's own host locks (the job does
//!              not queue behind itself there) → locked in the host's
//!              lock table
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
use ndpdb_formats::page::PAGE_SIZE;
use ndpdb_formats::record::RecordHeader;
use ndpdb_formats::{Lpn, Ppn, SqlState, TableId, Value, Vid};
use ndpdb_link::ndp::{JobState, ModifyResult, NdpOp};
use ndpdb_slt::DeviceTag;
use ndpdb_wal::WalRecord;

use super::call::{JobOutcome, NdpReport, NdpRequest};
use super::overflow_log::{OverflowStream, OverflowWriter};
use super::part::{NdpLogging, NdpPart};
use super::statement_pipeline::{PipelineStage, StageKind, StageSource};
use super::validate::{moved_heads, stale_deltas};
use crate::db::{Engine, TableState};
use crate::error::{Error, Result};
use crate::stats::EngineCounters;
use crate::transaction::{Isolation, Transaction, WriteOutcome};

impl Engine {
    /// Appends the Start-NDP record of `inv`, a job of `txid`: its LSN
    /// (what End-NDP, Gc and the overflow log's name refer to) and the
    /// LSN just past it.
    pub(crate) fn log_start_ndp(
        &self,
        txid: ndpdb_formats::TxId,
        inv: &ndpdb_link::ndp::Invocation,
    ) -> (ndpdb_formats::Lsn, ndpdb_formats::Lsn) {
        let mut w = Writer::new();
        inv.encode(&mut w);
        self.wal.append_one(&WalRecord::StartNdp {
            txid,
            table: inv.table,
            invocation: w.into_inner(),
        })
    }
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

impl Engine {
    /// `n` pages for an update job: LPNs no map has seen, and PPNs
    /// nobody refers to (free ones first).
    pub(crate) fn alloc_space(&self, n: usize) -> Vec<(Lpn, Ppn)> {
        // Pages whose readers have ended are free first (a failure to
        // unmap them leaves them pending; fresh pages do instead).
        let _ = self.reclaim();
        self.alloc_ppns(n)
            .into_iter()
            .map(|ppn| {
                (
                    self.space.spare_lpn().unwrap_or_else(|| self.alloc_lpn()),
                    ppn,
                )
            })
            .collect()
    }

    /// Pages of a job that were never mapped: free at once.
    pub(crate) fn free_space(&self, pages: &[(Lpn, Ppn)]) {
        self.space.give_back(pages);
    }

    /// Mapped pages of a job whose transaction aborted: no head refers to
    /// them; they are unmapped and freed once their readers are gone.
    pub(crate) fn release_mapped(&self, pages: &[(Lpn, Ppn)]) {
        self.space.release(self.txm.next_txid(), pages, &[]);
    }

    /// Releases the SLT locks an update job holds (once per bucket).
    pub(crate) fn release_job_locks(&self, table: TableId, tag: DeviceTag, locked: &[Vid]) {
        let keys = locked.iter().map(|v| (table, *v));
        // A bucket that is not the job's any more means a corrupt SLT;
        // the statement already ended, so this only wakes waiters.
        let _ = self.locks.release_device_keys(keys, tag);
    }

    /// The error of a transaction whose device job was cancelled to end a
    /// deadlock (counted as one).
    pub(crate) fn deadlock_victim(&self, tx: ndpdb_formats::TxId) -> Error {
        EngineCounters::inc(&self.counters.deadlocks);
        Error::new(SqlState::DEADLOCK_DETECTED, "deadlock detected").with_detail(format!(
            "The update job of transaction {tx} on the device waited for a lock held in a cycle of transactions."
        ))
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
        // SSI: the job may change rows anywhere in the table.
        self.ssi_write(crate::mvcc::ssi::Target::Table(ts.id))?;
        let mut inv = self.invocation(ts, req, params);
        // NDP pipelines: the rows the last statement locked or changed.
        let pipelined = self.apply_stage(ts, req, params, &mut inv)?;
        if !pipelined && self.has_writes_to(ts) {
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                "cannot offload a modification of a table this transaction already changed",
            ));
        }
        let tag = self.ndp_tag()?;
        inv.lock_tag = tag.raw();
        inv.space = inner.alloc_space(initial_pages(ts));
        inv.keep = matches!(req.op, NdpOp::Update { .. }) && self.keeps_stage(req);
        let keep = inv.keep;
        inv.lock_timeout_ms = self.ndp_lock_wait_ms();
        // Start-NDP: all call parameters, before the device starts.
        // While a base backup is kept, a restore needs every job's pages:
        // jobs log them whatever the session chose (media recovery).
        let logging = match inner.wal.retained_from() {
            Some(_) => NdpLogging::Extended,
            None => self.ndp_logging(),
        };
        let logged = logging != NdpLogging::Off;
        let mut start_ndp = None;
        if logged {
            let (start, lsn) = inner.log_start_ndp(self.id(), &inv);
            start_ndp = Some(start);
            // Durable before the device writes pages with this TxId: after
            // a crash recovery then hands out only newer TxIds, and GC
            // finds the pages of a job that never committed below its
            // horizon at once.
            inner.wal.sync(lsn)?;
        }
        // Extended logging: the job's pages go to its overflow log while
        // it runs (the rest at commit).
        let mut stream = match (logging, start_ndp) {
            (NdpLogging::Extended, Some(start)) => {
                inv.report_pages = true;
                let writer = OverflowWriter::create(&inner.dir, self.id(), ts.id, start)?;
                let counters = inner.clone();
                Some(OverflowStream::start(
                    writer,
                    inner.device.clone(),
                    move |bytes| {
                        counters
                            .counters
                            .ndp_overflow_streamed_bytes
                            .fetch_add(bytes, Ordering::Relaxed);
                    },
                )?)
            }
            _ => None,
        };
        // Buckets this transaction's host locks hold: the job does not
        // queue behind its own transaction there. (Lock state, not logged:
        // nothing of it outlives a crash.)
        inv.host_buckets = self.host_lock_buckets();
        let mut report = NdpReport::default();
        // If the link fails here the device's state is unknown: its pages
        // are not reused and the statement fails. GC moves no head of the
        // table while the job runs, nor until the tuples it left to the
        // host are locked (below).
        let writing = ts.device_writer();
        let out = self.ndp_call_with(ts, inv, &mut report, &mut |pages| {
            if let Some(s) = &stream {
                s.send(pages);
            }
        })?;
        let mut result = ModifyResult::decode(&mut Reader::new(&out.result)).map_err(decode_err)?;
        let pages_ok = out.check_pages(&mut result);
        let part = NdpPart {
            table: ts.id,
            tag,
            result,
            logged,
            extended: logging == NdpLogging::Extended,
            overflow: None,
            start_ndp,
        };
        self.end_failed_job(&part, &out, pages_ok, true)?;
        // The tuples the job changed in buckets of this transaction's host
        // locks are locked now, before validation.
        if let Err(e) = self.lock_tuples(ts.id, &part.result.host_locks) {
            self.discard_failed(&part);
            return Err(e);
        }
        drop(writing);
        // Validation: a host commit that slipped in before the device
        // locked a tuple shows as a predecessor that is not the head.
        let mut part = part;
        let slipped: Vec<Vid> = stale_deltas(&part.result, |v| self.head_of(ts, v));
        if !slipped.is_empty() {
            EngineCounters::inc(&inner.counters.ndp_validation_failures);
            if self.isolation() != Isolation::ReadCommitted {
                self.discard_failed(&part);
                EngineCounters::inc(&inner.counters.serialization_failures);
                return Err(Error::serialization());
            }
            // READ COMMITTED: those tuples are redone on the host below;
            // the device's versions of them are never referenced.
            part.result.delta.vids.retain(|d| !slipped.contains(&d.vid));
            part.result.rows -= slipped.len() as u64;
            part.result.stale.extend(slipped);
        }
        // Unused pages go back now (and only now: the part keeps none).
        inner.free_space(&std::mem::take(&mut part.result.unused));
        // The new pages can be mapped now: nothing points to them yet.
        if !part.result.delta.l2p.is_empty() {
            if let Err(e) = inner.map_ndp_pages(&part.result.delta.l2p) {
                self.discard_failed(&part);
                return Err(e);
            }
        }
        let mut rows = part.result.rows;
        inner
            .counters
            .ndp_rows_modified
            .fetch_add(rows, Ordering::Relaxed);
        let stale = std::mem::take(&mut part.result.stale);
        if let (Some(s), Some(start)) = (stream.take(), part.start_ndp) {
            match s.into_writer() {
                Ok(w) => self.keep_overflow_stream(start, w),
                Err(e) => {
                    self.discard_failed(&part);
                    return Err(e);
                }
            }
        }
        // The next statement may go on from the versions this one made.
        let stage = keep.then(|| {
            let versions = || {
                part.result
                    .delta
                    .vids
                    .iter()
                    .map(|d| (d.vid, d.new))
                    .collect()
            };
            PipelineStage::new(
                ts.id,
                StageKind::Changed,
                &req.conjuncts,
                params,
                StageSource::kept(part.result.stage, versions),
            )
        });
        // The job's locks cover the stale tuples too (ndp_locked).
        self.add_ndp_part(part);
        if let Some(stage) = stage {
            self.set_stage(stage);
        }
        for vid in stale {
            rows += self.redo_on_newest(ts, vid, req, params)?;
        }
        Ok((rows, report))
    }

    /// Ends the statement of a lock or update job that did not succeed —
    /// its ΔL2P not the pages granted, the statement cancelled or timed
    /// out while it ran (it ran to its end), or failed on the device —
    /// with its part discarded; `update`: a 40001 counts as an early abort.
    fn end_failed_job(
        &self,
        part: &NdpPart,
        out: &JobOutcome,
        pages_ok: Result<()>,
        update: bool,
    ) -> Result<()> {
        let failed = pages_ok.and_then(|_| self.check_interrupt());
        if let Err(e) = failed {
            self.discard_failed(part);
            return Err(e);
        }
        let JobState::Failed(code, message) = &out.status.state else {
            return Ok(());
        };
        self.discard_failed(part);
        let inner = &self.database().inner;
        if out.deadlock_victim {
            return Err(inner.deadlock_victim(self.id()));
        }
        let code = SqlState::from_code(code);
        if update && code == SqlState::SERIALIZATION_FAILURE {
            EngineCounters::inc(&inner.counters.ndp_early_aborts);
            EngineCounters::inc(&inner.counters.serialization_failures);
        }
        Err(Error::new(code, format!("on the device: {message}")))
    }

    /// In-storage SELECT … FOR UPDATE: locks every visible row of `ts`
    /// passing `req.filter` in the SLT (with this transaction's tag) and
    /// returns `columns` of each (`req.op` is `NdpOp::LockRows`).
    pub fn ndp_lock_rows(
        &mut self,
        ts: &TableState,
        req: &NdpRequest,
        params: &[Value],
    ) -> Result<(Vec<Vec<Value>>, NdpReport)> {
        let inner = self.database().inner.clone();
        inner.check_ok()?;
        let NdpOp::LockRows { columns } = &req.op else {
            return Err(Error::new(
                SqlState::INTERNAL_ERROR,
                "ndp_lock_rows runs SELECT … FOR UPDATE only",
            ));
        };
        if self.has_writes_to(ts) {
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                "cannot lock rows on the device in a table this transaction already changed",
            ));
        }
        let mut inv = self.invocation(ts, req, params);
        // A new lock statement starts a new pipeline.
        if let Some(old) = self.take_stage() {
            self.release_stage(old)?;
        }
        let tag = self.ndp_tag()?;
        inv.lock_tag = tag.raw();
        inv.host_buckets = self.host_lock_buckets();
        inv.keep = self.keeps_stage(req);
        let keep = inv.keep;
        inv.lock_timeout_ms = self.ndp_lock_wait_ms();
        let mut report = NdpReport::default();
        // No GC head move until the rows left to the host are locked.
        let writing = ts.device_writer();
        let out = self.ndp_call(ts, inv, &mut report)?;
        let mut r = Reader::new(&out.result);
        let device_rows = ndpdb_link::ndp::decode_rows(&mut r).map_err(decode_err)?;
        let mut result = ModifyResult::decode(&mut r).map_err(decode_err)?;
        let pages_ok = out.check_pages(&mut result);
        let mut part = NdpPart {
            table: ts.id,
            tag,
            result,
            // Locks only: no versions, nothing to log.
            logged: true,
            extended: false,
            overflow: None,
            start_ndp: None,
        };
        self.end_failed_job(&part, &out, pages_ok, false)?;
        // Rows in buckets of this transaction's host locks: locked here.
        if let Err(e) = self.lock_tuples(ts.id, &part.result.host_locks) {
            self.discard_failed(&part);
            return Err(e);
        }
        drop(writing);
        // A version that is no longer the head slipped past the locks
        // (committed on the host before the device locked it).
        let slipped: Vec<Vid> = moved_heads(ts, part.result.locked_versions.iter().copied());
        if !slipped.is_empty() && self.isolation() != Isolation::ReadCommitted {
            self.discard_failed(&part);
            EngineCounters::inc(&inner.counters.ndp_validation_failures);
            EngineCounters::inc(&inner.counters.serialization_failures);
            return Err(Error::serialization());
        }
        let mut rows = Vec::with_capacity(device_rows.len());
        for mut row in device_rows {
            let vid = match row.pop() {
                Some(Value::BigInt(v)) if v >= 0 => Vid(v as u64),
                _ => {
                    return Err(decode_err(ndpdb_formats::Error::corrupted(
                        "locked row without VID",
                    )))
                }
            };
            if !slipped.contains(&vid) {
                rows.push(row);
            }
        }
        part.result
            .locked_versions
            .retain(|(v, _)| !slipped.contains(v));
        let mut stale = std::mem::take(&mut part.result.stale);
        stale.extend(slipped);
        // REPEATABLE READ: the next statement may go on from the locked
        // versions (under READ COMMITTED `stale` is where they differ).
        if keep {
            let locked = || part.result.locked_versions.clone();
            self.set_stage(PipelineStage::new(
                ts.id,
                StageKind::Locked,
                &req.conjuncts,
                params,
                StageSource::kept(part.result.stage, locked),
            ));
        }
        self.add_ndp_part(part);
        // READ COMMITTED: re-check moved tuples on their newest version
        // (they stay locked by this transaction's tag).
        for vid in stale {
            let head = ts.vids.head(vid);
            if head.is_null() {
                continue;
            }
            let bytes = inner.fetch(head)?;
            let view = ndpdb_formats::record::RecordView::parse(&bytes)?;
            if view.header.is_tombstone() {
                continue;
            }
            let row = view.decode(&ts.types)?;
            let qualifies = match &req.filter {
                Some(f) => f.eval_predicate(&row, params)?,
                None => true,
            };
            if qualifies {
                rows.push(columns.iter().map(|&c| row[c as usize].clone()).collect());
            }
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
