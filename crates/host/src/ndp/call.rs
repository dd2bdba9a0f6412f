//! The host's NDP engine for read-only offloading (DESIGN.md §4–§5).
//!
//! ```text
//!  prepare: snapshot + capture the table's unflushed shared state
//!           (delta pages, ΔVID overlay) under the delta-buffer lock
//!  push:    NDP_SHARED (data plane) → NDP_CALL (control plane) → JobId
//!  wait:    NDP_STATUS long-polls; the session thread sleeps, others run
//!  collect: NDP_RESULT (data plane) → rows
//! ```
//!
//! A transaction that has uncommitted writes to the table does not
//! offload it: its own versions live in its private write set, which the
//! device cannot see. Update NDP (UPDATE / DELETE on the device) is in
//! [`super::update`]; both share [`Transaction::ndp_call`].

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ndpdb_formats::codec::Reader;
use ndpdb_formats::expr::Program;
use ndpdb_formats::{Lpn, Ppn, SqlState, Value};
use ndpdb_link::ndp::{
    decode_rows, Invocation, JobState, JobStatus, ModifyResult, NdpOp, SharedState,
};

use crate::db::TableState;
use crate::error::{Error, Result};
use crate::transaction::Transaction;

/// What to run on the device.
#[derive(Clone, Debug)]
pub struct NdpRequest {
    pub filter: Option<Program>,
    /// `filter`'s top-level AND terms, each compiled alone (NDP pipelines
    /// compare predicates by them); empty when there is no filter. A
    /// filter given without them never continues a pipeline.
    pub conjuncts: Vec<Program>,
    pub op: NdpOp,
    /// Processing elements (0 = the device's default).
    pub pes: u16,
    pub preload: bool,
}

/// Per-invocation figures.
#[derive(Clone, Debug, Default)]
pub struct NdpReport {
    pub shared_bytes: u64,
    pub shared_pages: u64,
    /// Time to hand the shared state and the call to the device.
    pub shared_transfer: Duration,
    pub device_micros: u64,
    pub pe_tuples: Vec<u64>,
    pub pe_micros: Vec<u64>,
    pub pages_read: u64,
    /// Pages the kernels ran on / ruled out by zone maps; bytes read.
    pub pages_filtered: u64,
    pub pages_pruned: u64,
    pub bytes_touched: u64,
    pub result_rows: u64,
    pub result_bytes: u64,
    pub wall: Duration,
    /// Times an update job ran out of pre-allocated pages and got more.
    pub space_round_trips: u64,
    /// PE time spent taking SLT locks (summed over PEs), µs.
    pub lock_micros: u64,
    /// The scan ran in the objects of a distributed store.
    pub fan_out: ndpdb_link::ndp::FanOut,
}

fn decode_err(e: ndpdb_formats::Error) -> Error {
    Error::new(SqlState::DATA_CORRUPTED, format!("NDP reply: {e}"))
}

/// One job on the device as the host sees it.
pub(crate) struct JobOutcome {
    pub status: JobStatus,
    /// The result region (rows, or an update job's [`ModifyResult`]).
    pub result: Vec<u8>,
    /// Every page the host granted the job (the invocation's space and
    /// each NDP_SPACE answer).
    pub granted: Vec<(Lpn, Ppn)>,
    /// The job was cancelled to end a deadlock (it failed because of it).
    pub deadlock_victim: bool,
}

impl JobOutcome {
    /// ΔL2P validation ([`super::validate::check_pages`]) against the
    /// pages granted to this job.
    pub(crate) fn check_pages(&self, result: &mut ModifyResult) -> Result<()> {
        super::validate::check_pages(&self.granted, result)
    }
}

/// Called with the pages an update job reports as written while it runs.
pub(crate) type PagesWritten<'a> = dyn FnMut(&[(ndpdb_formats::Lpn, ndpdb_formats::Ppn)]) + 'a;

impl Transaction {
    /// Whether this transaction has uncommitted writes to `ts` (host
    /// versions or update-NDP deltas).
    pub fn has_writes_to(&self, ts: &TableState) -> bool {
        self.wrote_table(ts.id)
    }

    /// Pushes an invocation down and waits for its end: NDP_SHARED with the
    /// table's unflushed shared state, NDP_CALL, NDP_STATUS long-polls
    /// (granting pages to an update job that runs dry), NDP_RESULT.
    pub(crate) fn ndp_call(
        &self,
        ts: &TableState,
        inv: Invocation,
        report: &mut NdpReport,
    ) -> Result<JobOutcome> {
        self.ndp_call_with(ts, inv, report, &mut |_| {})
    }

    /// [`Transaction::ndp_call`]; `written` gets the pages an update job
    /// reports as written while it runs (with `Invocation::report_pages`).
    pub(crate) fn ndp_call_with(
        &self,
        ts: &TableState,
        mut inv: Invocation,
        report: &mut NdpReport,
        written: &mut PagesWritten<'_>,
    ) -> Result<JobOutcome> {
        // SSI: a device scan reports no rows, so it reads the table.
        self.ssi_read(crate::mvcc::ssi::Target::Table(ts.id))?;
        let inner = &self.database().inner;
        let start = Instant::now();
        let shared: SharedState = inner.capture_shared(ts.id)?;
        report.shared_pages = shared.pages.len() as u64;
        report.shared_bytes = shared.encoded_len() as u64;
        let t = Instant::now();
        inv.shared = inner.device.ndp_shared(shared)?;
        let granted_first = inv.space.clone();
        let op = inv.op.clone();
        let job = inner.device.ndp_call(inv)?;
        report.shared_transfer = t.elapsed();
        let mut granted = granted_first;
        let mut deadlock_victim = false;
        let deadlock_timeout = self.deadlock_timeout().max(Duration::from_millis(1));
        let mut search_at = Instant::now() + deadlock_timeout;
        let status = loop {
            let mut st = inner.device.ndp_status(job, 250)?;
            if !st.unloaded.is_empty() {
                written(&std::mem::take(&mut st.unloaded));
            }
            // A read-only job can be dropped mid-run; an update or lock
            // job runs to its end (its locks and ΔMaps are released by the
            // failing statement's abort).
            if st.state == JobState::Running && !op.runs_to_end() {
                if let Err(e) = self.check_interrupt() {
                    inner.device.ndp_abort(job)?;
                    return Err(e);
                }
            }
            // A job that locks waits in no host queue: after
            // deadlock_timeout its caller searches for a cycle through it.
            if st.state == JobState::Running && op.locks() && Instant::now() >= search_at {
                if !deadlock_victim && inner.locks.device_job_is_deadlock_victim(self.id())? {
                    deadlock_victim = true;
                    inner.device.ndp_abort(job)?;
                }
                search_at = Instant::now() + deadlock_timeout;
            }
            match st.state {
                JobState::Running => {}
                JobState::NeedSpace => {
                    // Double what the job had: a counted round trip.
                    let pages = inner.alloc_space(granted.len().clamp(16, 1 << 16));
                    report.space_round_trips += 1;
                    granted.extend_from_slice(&pages);
                    inner.device.ndp_space(job, pages)?;
                }
                _ => break st,
            }
        };
        let result = inner.device.ndp_result(job)?;
        if !op.runs_to_end() {
            // Done, but too late (the job is gone from the device now).
            self.check_interrupt()?;
        }
        report.device_micros = status.device_micros;
        report.lock_micros = status.lock_micros;
        report.pe_tuples = status.pe_tuples.clone();
        report.pe_micros = status.pe_micros.clone();
        report.pages_read = status.pages_read;
        report.pages_filtered = status.pages_filtered;
        report.pages_pruned = status.pages_pruned;
        report.bytes_touched = status.bytes_touched;
        report.fan_out = status.fan_out;
        report.result_rows = status.result_rows;
        report.result_bytes = status.result_bytes;
        report.wall = start.elapsed();
        if matches!(op, ndpdb_link::ndp::NdpOp::Gc { .. }) {
            // GC has its own counters (gc.*).
            return Ok(JobOutcome {
                status,
                result,
                granted,
                deadlock_victim,
            });
        }
        let c = &inner.counters;
        c.ndp_calls.fetch_add(1, Ordering::Relaxed);
        c.ndp_shared_bytes
            .fetch_add(report.shared_bytes, Ordering::Relaxed);
        c.ndp_device_micros
            .fetch_add(report.device_micros, Ordering::Relaxed);
        c.ndp_pe_micros
            .fetch_add(report.pe_micros.iter().sum(), Ordering::Relaxed);
        c.ndp_tuples
            .fetch_add(report.pe_tuples.iter().sum(), Ordering::Relaxed);
        c.ndp_pages_read
            .fetch_add(report.pages_read, Ordering::Relaxed);
        c.ndp_pages_pruned
            .fetch_add(report.pages_pruned, Ordering::Relaxed);
        c.ndp_bytes_touched
            .fetch_add(report.bytes_touched, Ordering::Relaxed);
        c.ndp_space_round_trips
            .fetch_add(report.space_round_trips, Ordering::Relaxed);
        c.ndp_device_lock_micros
            .fetch_add(report.lock_micros, Ordering::Relaxed);
        Ok(JobOutcome {
            status,
            result,
            granted,
            deadlock_victim,
        })
    }

    /// The invocation for `req` over `ts` at this transaction's snapshot.
    pub(crate) fn invocation(
        &self,
        ts: &TableState,
        req: &NdpRequest,
        params: &[Value],
    ) -> Invocation {
        Invocation {
            snapshot: self.snapshot().clone(),
            table: ts.id,
            types: ts.types.clone(),
            vid_count: ts.vids.vid_count(),
            filter: req.filter.clone(),
            op: req.op.clone(),
            params: params.to_vec(),
            pes: req.pes,
            preload: req.preload,
            shared: 0,
            space: Vec::new(),
            lock_timeout_ms: 0,
            lock_tag: 0,
            targets: Vec::new(),
            stage: 0,
            keep: false,
            read_committed: self.isolation() == crate::transaction::Isolation::ReadCommitted,
            report_pages: false,
            host_buckets: Vec::new(),
        }
    }

    /// Runs `req` over `ts` on the device at this transaction's snapshot.
    pub fn ndp_execute(
        &self,
        ts: &TableState,
        req: &NdpRequest,
        params: &[Value],
    ) -> Result<(Vec<Vec<Value>>, NdpReport)> {
        let inner = &self.database().inner;
        inner.check_ok()?;
        if req.op.modifies() {
            return Err(Error::new(
                SqlState::INTERNAL_ERROR,
                "update NDP goes through ndp_modify",
            ));
        }
        if self.has_writes_to(ts) {
            return Err(Error::new(
                SqlState::INTERNAL_ERROR,
                "cannot offload a table with uncommitted writes of this transaction",
            ));
        }
        let mut report = NdpReport::default();
        let out = self.ndp_call(ts, self.invocation(ts, req, params), &mut report)?;
        if let JobState::Failed(code, message) = &out.status.state {
            return Err(Error::new(
                SqlState::from_code(code),
                format!("on the device: {message}"),
            ));
        }
        let rows = decode_rows(&mut Reader::new(&out.result)).map_err(decode_err)?;
        inner
            .counters
            .ndp_result_rows
            .fetch_add(report.result_rows, Ordering::Relaxed);
        Ok((rows, report))
    }
}
