//! One NDP job from NDP_CALL to its result (DESIGN.md §5–§6; DANSEN
//! Algorithm 1; update NDP §4.1): the job's record the host polls, and
//! the run on the job's own thread — its PEs started, their outputs
//! merged, the result region encoded.
//!
//! ```text
//!  NDP_CALL ─► Job {status: Running, space pool} ─► thread ndp-job-N:
//!    GC?  ─► gc/ (one thread) ─► ModifyResult (victims, ΔMaps)
//!    else ─► modify context (update / lock jobs: SLT, tag, space)
//!            scan pipeline (scans and aggregates, compiled once)
//!            PE 0 … PE p-1 (one in all if the objects of a RADOS store walk)
//!            fold: stats, rows / groups, ModifyParts; first failure wins
//!            update / lock: pages synced; result = [rows] + ModifyResult
//!            scan / aggregate: result = rows merged in VID order
//!  status: Done (result_bytes) | Failed(sqlstate, message)
//!  NDP_STATUS waits on `done`; NDP_RESULT takes the region and frees the job
//! ```
//!
//! A job that fails keeps nothing: an update job's written pages and
//! unused space go back to the host in its result, and its locks are
//! listed for the host to release.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use ndpdb_formats::codec::Writer;
use ndpdb_formats::{Error, JobId, Lpn, Ppn, RecId, SqlState, TxId, Value, Vid};
use ndpdb_link::ndp::{encode_rows, FanOut, Invocation, JobState, JobStatus, ModifyResult, NdpOp};

use ndpdb_scan::{merge_groups, Pipeline, PipelineOp};

use crate::core::Core;
use crate::gc::{GcJob, Throttle};
use crate::ndp::pass_along::PassedAlong;
use crate::ndp::pe::{in_osds, run_pe, Chunks, PeOutput, PeStats, PeTask};
use crate::ndp::stages::Stages;
use crate::ndp::update::{ModifyCtx, ModifyPart, SpacePool};
use ndpdb_slt::{DeviceTag, SharedLockTable};

/// A job's record: its status, its result once it ended, and what the
/// host's commands reach while it runs (cancel, space).
pub(crate) struct Job {
    pub status: Mutex<JobStatus>,
    pub done: Condvar,
    pub result: Mutex<Option<Vec<u8>>>,
    pub cancel: AtomicBool,
    /// An update, lock or GC job: cancelled, it still ends with a result
    /// (its locks and pages), which the host collects with NDP_RESULT.
    pub runs_to_end: bool,
    /// Update NDP: the invocation's pre-allocated pages.
    pub space: SpacePool,
}

impl Job {
    /// A running job `id` of `pes` PEs for `inv`, its space pool telling
    /// the job's NDP_STATUS waiters when it runs dry or (if the host asked)
    /// has pages to report.
    pub fn new(id: u64, pes: usize, inv: &Invocation) -> Arc<Job> {
        let space = inv.space.clone();
        let runs_to_end = inv.op.runs_to_end();
        let report_pages = inv.report_pages;
        Arc::new_cyclic(|weak: &Weak<Job>| {
            let (weak, weak_pages) = (weak.clone(), weak.clone());
            Job {
                status: Mutex::new(JobStatus {
                    job: JobId(id),
                    state: JobState::Running,
                    result_rows: 0,
                    result_bytes: 0,
                    pe_tuples: vec![0; pes],
                    pe_micros: vec![0; pes],
                    pages_read: 0,
                    device_micros: 0,
                    lock_micros: 0,
                    pages_filtered: 0,
                    pages_pruned: 0,
                    bytes_touched: 0,
                    unloaded: Vec::new(),
                    fan_out: FanOut::default(),
                }),
                done: Condvar::new(),
                result: Mutex::new(None),
                cancel: AtomicBool::new(false),
                runs_to_end,
                space: SpacePool::new(
                    space,
                    Box::new(move || {
                        if let Some(job) = weak.upgrade() {
                            job.need_space();
                        }
                    }),
                    report_pages.then(|| -> Box<dyn Fn() + Send + Sync> {
                        Box::new(move || {
                            if let Some(job) = weak_pages.upgrade() {
                                job.pages_ready();
                            }
                        })
                    }),
                ),
            }
        })
    }

    /// A batch of written pages is ready for the host (its NDP_STATUS
    /// returns; the job's state does not change).
    fn pages_ready(&self) {
        let _st = self.status.lock();
        self.done.notify_all();
    }

    /// An update job ran dry: tell the host (its NDP_STATUS returns).
    fn need_space(&self) {
        let mut st = self.status.lock();
        if st.state == JobState::Running {
            st.state = JobState::NeedSpace;
        }
        drop(st);
        self.done.notify_all();
    }

    fn finish(&self, st: &mut JobStatus, result: Vec<u8>, state: JobState) {
        st.result_bytes = result.len() as u64;
        *self.result.lock() = Some(result);
        st.state = state;
    }
}

/// What a job runs against.
pub(crate) struct JobEnv<'a> {
    pub core: &'a Core,
    pub shared: &'a PassedAlong,
    pub pes: usize,
    pub job: &'a Job,
    pub cpus: &'a [usize],
    pub slt: Option<&'a SharedLockTable>,
    /// Versions to work on instead of a walk (sorted by VID; empty: walk).
    pub targets: &'a [(Vid, RecId)],
    pub stages: &'a Stages,
    /// The job's id (the handle of a stage it keeps).
    pub id: u64,
}

/// The table columns an invocation reads (the rest is never decoded).
fn wanted_columns(inv: &Invocation) -> Vec<bool> {
    let mut cols: Vec<u32> = inv.filter.iter().flat_map(|f| f.columns()).collect();
    match &inv.op {
        NdpOp::Scan { columns } => cols.extend(columns),
        NdpOp::Aggregate { groups, aggs } => {
            cols.extend(groups.iter().flat_map(|g| g.columns()));
            cols.extend(
                aggs.iter()
                    .filter_map(|a| a.arg.as_ref())
                    .flat_map(|p| p.columns()),
            );
        }
        // A new version (or tombstone) carries the whole row.
        NdpOp::Update { .. } | NdpOp::Delete => cols.extend(0..inv.types.len() as u32),
        NdpOp::LockRows { columns } => cols.extend(columns),
        NdpOp::Gc { .. } => {}
    }
    let mut wanted = vec![false; inv.types.len()];
    for c in cols {
        if let Some(w) = wanted.get_mut(c as usize) {
            *w = true;
        }
    }
    wanted
}

/// Runs the job to its end on the calling thread (see the module docs).
pub(crate) fn run_job(env: &JobEnv<'_>, inv: Invocation) {
    if let NdpOp::Gc {
        horizon,
        max_live_percent,
        cost_delay_us,
        cost_limit,
    } = inv.op
    {
        let throttle = Throttle::new(cost_limit, Duration::from_micros(cost_delay_us as u64));
        return run_gc(env, &inv, horizon, max_live_percent, throttle);
    }
    let start = Instant::now();
    let mut host_buckets: Vec<usize> = inv.host_buckets.iter().map(|&b| b as usize).collect();
    host_buckets.sort_unstable();
    let modify = match modify_ctx(env, &inv, &host_buckets) {
        Ok(modify) => modify,
        Err(state) => {
            env.job.status.lock().state = state;
            env.job.done.notify_all();
            return;
        }
    };
    let pipeline = scan_pipeline(env, &inv);
    let outputs = run_pes(env, &inv, modify.as_ref(), pipeline.as_ref());
    let mut folded = Folded::new(outputs);
    if modify.is_some() && folded.failure.is_none() && !folded.written.is_empty() {
        // The new versions are durable before the host may commit them.
        if let Err(e) = env.core.store.sync() {
            folded.failure = Some(Error::sql(SqlState::IO_ERROR, format!("sync: {e}")));
        }
    }
    let mut st = env.job.status.lock();
    folded.report(&mut st, start);
    if modify.is_some() {
        finish_modify(env, &inv, folded, &mut st);
    } else {
        finish_read(env.job, &inv, folded, &mut st);
    }
    drop(st);
    env.job.done.notify_all();
}

/// The context of an update or lock job (`None` for reads), or the
/// failed state of one the device cannot run.
fn modify_ctx<'a>(
    env: &JobEnv<'a>,
    inv: &Invocation,
    host_buckets: &'a [usize],
) -> Result<Option<ModifyCtx<'a>>, JobState> {
    match (inv.op.locks(), env.slt, DeviceTag::new(inv.lock_tag)) {
        (false, _, _) => Ok(None),
        (true, Some(slt), Some(tag)) => Ok(Some(ModifyCtx {
            slt,
            tag,
            space: &env.job.space,
            lock_timeout: Duration::from_millis(inv.lock_timeout_ms.max(1)),
            read_committed: inv.read_committed,
            host_buckets,
        })),
        (true, slt, _) => Err(JobState::Failed(
            SqlState::FEATURE_NOT_SUPPORTED.0.to_string(),
            if slt.is_none() {
                "this device has no shared lock table: update NDP is not available".into()
            } else {
                format!("invalid SLT lock tag {}", inv.lock_tag)
            },
        )),
    }
}

/// Scans and aggregates run through the scan core, compiled once (not
/// over target versions).
fn scan_pipeline(env: &JobEnv<'_>, inv: &Invocation) -> Option<Pipeline> {
    match &inv.op {
        NdpOp::Scan { columns } => Some(PipelineOp::Project {
            columns: columns.clone(),
        }),
        NdpOp::Aggregate { groups, aggs } => Some(PipelineOp::Aggregate {
            groups: groups.clone(),
            aggs: aggs.clone(),
        }),
        _ => None,
    }
    .filter(|_| env.targets.is_empty())
    .map(|op| Pipeline::new(&inv.types, &inv.params, inv.filter.as_ref(), op))
}

/// One PE's output and its share of an update job.
type PeRun = (Result<(PeOutput, PeStats), Error>, ModifyPart);

/// Runs the job's PEs, each on a thread of its own, and collects their
/// outputs in PE order.
fn run_pes(
    env: &JobEnv<'_>,
    inv: &Invocation,
    modify: Option<&ModifyCtx<'_>>,
    pipeline: Option<&Pipeline>,
) -> Vec<PeRun> {
    let (core, job) = (env.core, env.job);
    let wanted = wanted_columns(inv);
    // With the pages in RADOS objects, one PE fans a scan (or an
    // update's read) out over them: each object is read once, in its OSD.
    let in_objects = in_osds::method(pipeline.is_some(), &inv.op)
        .filter(|_| env.targets.is_empty())
        .and_then(|m| core.store.objects_with(m));
    let pes = if in_objects.is_some() { 1 } else { env.pes };
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..pes)
            .map(|pe| {
                // PE `pe` takes chunks pe, pe + pes, … (skew-resistant, still sequential).
                let chunks = Chunks {
                    first: pe as u64,
                    step: pes as u64,
                    vids: inv.vid_count,
                };
                let task = PeTask {
                    core,
                    inv,
                    shared: env.shared,
                    chunks,
                    wanted: &wanted,
                    cancel: &job.cancel,
                    cpu: (!env.cpus.is_empty()).then(|| env.cpus[pe % env.cpus.len()]),
                    modify,
                    pipeline,
                    targets: env.targets,
                };
                std::thread::Builder::new()
                    .name(format!("ndp-pe-{pe}"))
                    .spawn_scoped(s, move || run_pe(&task))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h.join().unwrap_or_else(|_| {
                    (
                        Err(Error::sql(SqlState::INTERNAL_ERROR, "a PE panicked")),
                        ModifyPart::default(),
                    )
                }),
                Err(e) => (
                    Err(Error::sql(
                        SqlState::INTERNAL_ERROR,
                        format!("cannot start a PE thread: {e}"),
                    )),
                    ModifyPart::default(),
                ),
            })
            .collect()
    })
}

/// The PEs' outputs folded together.
struct Folded {
    pe_tuples: Vec<u64>,
    pe_micros: Vec<u64>,
    pages_read: u64,
    pages_filtered: u64,
    pages_pruned: u64,
    bytes_touched: u64,
    fan_out: FanOut,
    lock_nanos: u64,
    /// The outputs of the PEs that succeeded, in PE order.
    parts: Vec<PeOutput>,
    modified: ModifyResult,
    written: Vec<(Lpn, Ppn)>,
    /// The first failure (a PE's own error before others' "aborted").
    failure: Option<Error>,
}

impl Folded {
    fn new(outputs: Vec<PeRun>) -> Folded {
        let mut f = Folded {
            pe_tuples: Vec::with_capacity(outputs.len()),
            pe_micros: Vec::with_capacity(outputs.len()),
            pages_read: 0,
            pages_filtered: 0,
            pages_pruned: 0,
            bytes_touched: 0,
            fan_out: FanOut::default(),
            lock_nanos: 0,
            parts: Vec::with_capacity(outputs.len()),
            modified: ModifyResult::default(),
            written: Vec::new(),
            failure: None,
        };
        for (o, part) in outputs {
            let modified = &mut f.modified;
            modified.rows += part.rows;
            modified.delta.vids.extend(part.delta_vids);
            modified.locked.extend(part.locked);
            modified.host_locks.extend(part.host_locks);
            modified.stale.extend(part.stale);
            modified.locked_versions.extend(part.locked_versions);
            f.lock_nanos += part.lock_nanos;
            f.written.extend(part.written);
            match o {
                Ok((out, stats)) => {
                    f.pe_tuples.push(stats.tuples);
                    f.pe_micros.push(stats.micros);
                    f.pages_read += stats.pages_read;
                    f.pages_filtered += stats.pages_filtered;
                    f.pages_pruned += stats.pages_pruned;
                    f.bytes_touched += stats.bytes_touched;
                    f.fan_out.objects += stats.fan_out.objects;
                    f.fan_out.reply_bytes += stats.fan_out.reply_bytes;
                    f.fan_out.deferred += stats.fan_out.deferred;
                    f.parts.push(out);
                }
                Err(e) => {
                    f.pe_tuples.push(0);
                    f.pe_micros.push(0);
                    // The PE that failed first cancels the others: report its
                    // error, not their "aborted".
                    let cancelled = |e: &Error| e.sqlstate() == SqlState::QUERY_CANCELED;
                    if f.failure
                        .as_ref()
                        .is_none_or(|x| cancelled(x) && !cancelled(&e))
                    {
                        f.failure = Some(e);
                    }
                }
            }
        }
        f
    }

    /// The run's figures into the job's status.
    fn report(&mut self, st: &mut JobStatus, start: Instant) {
        st.pe_tuples = std::mem::take(&mut self.pe_tuples);
        st.pe_micros = std::mem::take(&mut self.pe_micros);
        st.pages_read = self.pages_read;
        st.pages_filtered = self.pages_filtered;
        st.pages_pruned = self.pages_pruned;
        st.bytes_touched = self.bytes_touched;
        st.fan_out = self.fan_out;
        st.device_micros = start.elapsed().as_micros() as u64;
        st.lock_micros = self.lock_nanos / 1000;
    }
}

/// An update or lock job's end: SELECT … FOR UPDATE's rows first, then
/// the lock report ([`ModifyResult`]); a failed job keeps nothing.
fn finish_modify(env: &JobEnv<'_>, inv: &Invocation, f: Folded, st: &mut JobStatus) {
    let Folded {
        parts,
        mut modified,
        written,
        mut failure,
        ..
    } = f;
    let job = env.job;
    let locked_rows = match (&inv.op, &failure) {
        (NdpOp::LockRows { .. }, None) => match merge(inv, parts) {
            Ok(rows) => Some(rows),
            Err(e) => {
                failure = Some(e);
                Some(Vec::new())
            }
        },
        (NdpOp::LockRows { .. }, Some(_)) => Some(Vec::new()),
        _ => None,
    };
    modified.unused = job.space.drain();
    let state = match failure {
        None => {
            modified.delta.l2p = written;
            st.result_rows = modified.rows;
            if inv.keep {
                modified.stage = keep_stage(env, inv, &modified);
            }
            JobState::Done
        }
        Some(e) => {
            // Nothing of it will be used: the host takes every page back
            // and releases the locks the job holds.
            modified.rows = 0;
            modified.delta.vids.clear();
            modified.host_locks.clear();
            modified.stale.clear();
            modified.locked_versions.clear();
            modified.unused.extend(written);
            failed_state(&e)
        }
    };
    let mut w = Writer::new();
    if let Some(rows) = &locked_rows {
        encode_rows(rows, &mut w);
        st.result_rows = rows.len() as u64;
    }
    modified.encode(&mut w);
    job.finish(st, w.into_inner(), state);
}

/// A scan's or aggregate's end: the merged rows, or the failure.
fn finish_read(job: &Job, inv: &Invocation, f: Folded, st: &mut JobStatus) {
    let result = match f.failure {
        Some(e) => Err(e),
        None => merge(inv, f.parts),
    };
    match result {
        Ok(rows) => {
            let mut w = Writer::new();
            encode_rows(&rows, &mut w);
            st.result_rows = rows.len() as u64;
            job.finish(st, w.into_inner(), JobState::Done);
        }
        Err(e) => st.state = failed_state(&e),
    }
}

/// NDP pipelines (stages.rs): keeps what the next statement of the transaction works
/// on — the versions a lock job locked, or those an update job created
/// (a delete leaves tombstones: nothing to go on with).
fn keep_stage(env: &JobEnv<'_>, inv: &Invocation, modified: &ModifyResult) -> u64 {
    let versions = match &inv.op {
        NdpOp::LockRows { .. } => modified.locked_versions.clone(),
        NdpOp::Update { .. } => modified.delta.vids.iter().map(|d| (d.vid, d.new)).collect(),
        _ => return 0,
    };
    env.stages
        .keep(env.id, inv.table, inv.snapshot.txid, versions)
}

/// A GC job: one thread (it is background work), its result a
/// [`ModifyResult`] with victims.
fn run_gc(
    env: &JobEnv<'_>,
    inv: &Invocation,
    horizon: TxId,
    max_live_percent: u8,
    throttle: Throttle,
) {
    let job = env.job;
    let start = Instant::now();
    let gc = GcJob {
        core: env.core,
        shared: env.shared,
        inv,
        horizon,
        max_live_percent,
        space: &job.space,
        cancel: &job.cancel,
        throttle: std::cell::RefCell::new(throttle),
    };
    let mut out = ModifyResult::default();
    let state = match gc.run(&mut out) {
        Ok(()) => JobState::Done,
        Err(e) => {
            // Nothing of it is used: every page goes back to the host.
            let written = std::mem::take(&mut out.delta.l2p);
            out = ModifyResult {
                unused: written,
                ..ModifyResult::default()
            };
            failed_state(&e)
        }
    };
    out.unused.extend(job.space.drain());
    let mut st = job.status.lock();
    st.device_micros = start.elapsed().as_micros() as u64;
    st.result_rows = out.rows;
    let mut w = Writer::new();
    out.encode(&mut w);
    job.finish(&mut st, w.into_inner(), state);
    drop(st);
    job.done.notify_all();
}

fn failed_state(e: &Error) -> JobState {
    let message = match e {
        Error::Sql { message, .. } => message.clone(),
        other => other.to_string(),
    };
    JobState::Failed(e.sqlstate().0.to_string(), message)
}

/// Merges the PEs' outputs in PE order (so rows come back in the scan's
/// order: chunks in VID order, a chunk's rows in page order).
fn merge(inv: &Invocation, parts: Vec<PeOutput>) -> Result<Vec<Vec<Value>>, Error> {
    match &inv.op {
        NdpOp::Scan { .. } | NdpOp::LockRows { .. } => {
            let mut chunks: Vec<(u64, Vec<Vec<Value>>)> = parts
                .into_iter()
                .flat_map(|p| match p {
                    PeOutput::Rows(r) => r,
                    _ => Vec::new(),
                })
                .collect();
            chunks.sort_by_key(|(c, _)| *c);
            Ok(chunks.into_iter().flat_map(|(_, rows)| rows).collect())
        }
        NdpOp::Aggregate { groups, aggs } => merge_groups(
            parts.into_iter().filter_map(|p| match p {
                PeOutput::Groups(g) => Some(g),
                _ => None,
            }),
            !groups.is_empty(),
            aggs,
        ),
        // Merged from the PEs' modify parts in `run_job`; GC runs apart.
        NdpOp::Update { .. } | NdpOp::Delete | NdpOp::Gc { .. } => Ok(Vec::new()),
    }
}
