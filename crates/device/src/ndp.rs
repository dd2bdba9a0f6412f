//! The in-storage engine: NDP jobs on processing elements (DESIGN.md §5;
//! DANSEN §3.3, Algorithm 1; update-aware NDP §3).
//!
//! ```text
//!  NDP_SHARED ─► cache {delta pages, ΔVID}  (for one invocation only)
//!  NDP_CALL   ─► job ─► PE 0: VID chunks 0, p, 2p, …   ─┐
//!                       PE 1: VID chunks 1, p+1, …      ─┼─► merge partials ─► result region
//!                       …     (chunks of 1,024 VIDs)     ─┘
//!  each PE, per VID: head (ΔVID overlay, else device VID map)
//!                    → L2P (delta page overlay, else device L2P) → page
//!                    → header parser → visibility walk → filter → op
//! ```
//!
//! The walk, record parser and expression evaluator are the host's own
//! (`ndpdb_formats`), so an offloaded query computes exactly what the host
//! would at the same snapshot. Pages flushed while a job runs do not
//! change its result: storage is append-only and newer versions are
//! invisible to the job's snapshot. With `preload`, each PE has a
//! preloader thread that fetches the pages of its next chunks in sorted
//! batches while the PE walks the current one (`pe`). Chunks are dealt round-robin so a predicate that selects one region of
//! the table (e.g. the first districts) still spreads over all PEs, and
//! only the columns the pipeline reads are decoded.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use rustc_hash::FxHashMap;

use ndpdb_formats::codec::Writer;
use ndpdb_formats::page::PageRef;
use ndpdb_formats::{Error, JobId, SqlState, TxId, Value};
use ndpdb_link::ndp::{
    encode_rows, FanOut, Invocation, JobState, JobStatus, ModifyResult, NdpOp, SharedState,
};
use ndpdb_link::{LinkError, Result as LinkResult};

use ndpdb_scan::{merge_groups, Pipeline, PipelineOp};

use crate::engine::Core;
use crate::gc::{GcJob, Throttle};
use crate::pe::{run_pe, Cached, Chunks, PeOutput, PeStats, PeTask};
use crate::pipeline::Stages;
use crate::update::{ModifyCtx, ModifyPart, SpacePool};
use ndpdb_slt::{DeviceTag, SharedLockTable};

/// Longest NDP_STATUS wait the device grants.
const MAX_WAIT: Duration = Duration::from_secs(10);

struct Job {
    status: Mutex<JobStatus>,
    done: Condvar,
    result: Mutex<Option<Vec<u8>>>,
    cancel: AtomicBool,
    /// An update, lock or GC job: cancelled, it still ends with a result
    /// (its locks and pages), which the host collects with NDP_RESULT.
    runs_to_end: bool,
    /// Update NDP: the invocation's pre-allocated pages.
    space: SpacePool,
}

impl Job {
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

pub struct NdpEngine {
    default_pes: usize,
    /// CPUs the PEs are pinned to (PE i → cpus[i mod n]); empty = unpinned.
    cpus: Vec<usize>,
    /// The shared lock table update jobs lock tuples in.
    slt: Option<Arc<SharedLockTable>>,
    next: AtomicU64,
    shared: Mutex<HashMap<u64, Arc<Cached>>>,
    jobs: Mutex<HashMap<u64, Arc<Job>>>,
    /// NDP pipelines: statement outputs kept for the next statement.
    stages: Arc<Stages>,
}

fn link_err(e: Error) -> LinkError {
    LinkError::Corrupted(e.to_string())
}

impl NdpEngine {
    pub fn new(
        default_pes: usize,
        cpus: Vec<usize>,
        slt: Option<Arc<SharedLockTable>>,
    ) -> NdpEngine {
        NdpEngine {
            default_pes: default_pes.max(1),
            cpus,
            slt,
            next: AtomicU64::new(1),
            shared: Mutex::new(HashMap::new()),
            jobs: Mutex::new(HashMap::new()),
            stages: Arc::new(Stages::default()),
        }
    }

    /// The shared lock table update jobs lock tuples in.
    pub(crate) fn slt(&self) -> Option<&SharedLockTable> {
        self.slt.as_deref()
    }

    /// NDP_SHARED: caches the passed-along state for one call.
    pub(crate) fn shared(&self, s: SharedState) -> LinkResult<u64> {
        let mut pages = FxHashMap::default();
        for (lpn, bytes) in s.pages {
            PageRef::parse_checked(&bytes).map_err(link_err)?;
            pages.insert(lpn, crate::store::PageBytes::Owned(Arc::new(bytes)));
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let cached = Cached {
            pages,
            vids: s.vids.into_iter().collect(),
        };
        self.shared.lock().insert(id, Arc::new(cached));
        Ok(id)
    }

    /// NDP_CALL: starts a job on its own thread (its PEs under it).
    pub(crate) fn call(&self, core: &Arc<Core>, mut inv: Invocation) -> LinkResult<JobId> {
        let shared = self
            .shared
            .lock()
            .remove(&inv.shared)
            .ok_or_else(|| LinkError::OutOfRange(format!("no shared state {}", inv.shared)))?;
        // The versions to work on, sorted by VID: a kept stage's
        // (taken) or the host's.
        let targets = if inv.stage != 0 {
            self.stages
                .take(inv.stage, inv.table, inv.snapshot.txid)?
                .versions
        } else {
            let mut t = std::mem::take(&mut inv.targets);
            t.sort_unstable_by_key(|(v, _)| *v);
            Arc::new(t)
        };
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let pes = if inv.pes == 0 {
            self.default_pes
        } else {
            inv.pes as usize
        }
        .clamp(1, 64);
        let space = inv.space.clone();
        let runs_to_end = inv.op.runs_to_end();
        let report_pages = inv.report_pages;
        let job = Arc::new_cyclic(|weak: &std::sync::Weak<Job>| {
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
        });
        self.jobs.lock().insert(id, job.clone());
        let core = core.clone();
        let cpus = self.cpus.clone();
        let slt = self.slt.clone();
        let stages = self.stages.clone();
        std::thread::Builder::new()
            .name(format!("ndp-job-{id}"))
            .spawn(move || {
                let env = JobEnv {
                    core: &core,
                    shared: &shared,
                    pes,
                    job: &job,
                    cpus: &cpus,
                    slt: slt.as_deref(),
                    targets: &targets,
                    stages: &stages,
                    id,
                };
                run_job(&env, inv)
            })
            .map_err(|e| LinkError::Io(e.to_string()))?;
        Ok(JobId(id))
    }

    /// NDP_SPACE: pages for a job that ran dry.
    pub(crate) fn space(
        &self,
        job: JobId,
        pages: Vec<(ndpdb_formats::Lpn, ndpdb_formats::Ppn)>,
    ) -> LinkResult<()> {
        let job = self.job(job.0)?;
        {
            let mut st = job.status.lock();
            if st.state == JobState::NeedSpace {
                st.state = JobState::Running;
            }
        }
        job.space.grant(pages);
        Ok(())
    }

    /// NDP_STATUS: waits until the job's state changes, `wait_ms` pass
    /// (at most [`MAX_WAIT`]), or (jobs that report their pages) a batch
    /// of written pages is ready.
    pub(crate) fn status(&self, job: JobId, wait_ms: u32) -> LinkResult<JobStatus> {
        let wait = Duration::from_millis(wait_ms as u64).min(MAX_WAIT);
        let job = self.job(job.0)?;
        let deadline = Instant::now() + wait;
        let mut st = job.status.lock();
        while st.state == JobState::Running
            && !job.space.unloaded_ready()
            && !job.done.wait_until(&mut st, deadline).timed_out()
        {}
        let mut out = st.clone();
        out.unloaded = job.space.take_unloaded();
        Ok(out)
    }

    /// NDP_RESULT: the result region of a job that ended; the job is freed.
    pub(crate) fn result(&self, job: JobId) -> LinkResult<Vec<u8>> {
        let id = job.0;
        let job = self.job(id)?;
        if job.status.lock().state == JobState::Running {
            return Err(LinkError::OutOfRange(format!("job {id} is still running")));
        }
        self.jobs.lock().remove(&id);
        let result = job.result.lock().take().unwrap_or_default();
        Ok(result)
    }

    /// NDP_ABORT: a job that runs to its end stops at its next lock wait
    /// or tuple and fails; its result stays for NDP_RESULT. Any other is
    /// dropped at once. Unknown jobs are ignored.
    pub(crate) fn abort(&self, job: JobId) {
        let mut jobs = self.jobs.lock();
        let job = match jobs.get(&job.0) {
            Some(j) if j.runs_to_end => Some(j.clone()),
            _ => jobs.remove(&job.0),
        };
        drop(jobs);
        if let Some(job) = job {
            job.cancel.store(true, Ordering::Relaxed);
            job.space.wake();
        }
    }

    /// NDP_RELEASE: drops pipeline stages (unknown handles are ignored).
    pub(crate) fn release(&self, stages: &[u64]) {
        for h in stages {
            self.stages.release(*h);
        }
    }

    fn job(&self, id: u64) -> LinkResult<Arc<Job>> {
        self.jobs
            .lock()
            .get(&id)
            .cloned()
            .ok_or_else(|| LinkError::OutOfRange(format!("no job {id}")))
    }
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

/// What a job runs against.
struct JobEnv<'a> {
    core: &'a Core,
    shared: &'a Cached,
    pes: usize,
    job: &'a Job,
    cpus: &'a [usize],
    slt: Option<&'a SharedLockTable>,
    /// Versions to work on instead of a walk (sorted by VID; empty: walk).
    targets: &'a [(ndpdb_formats::Vid, ndpdb_formats::RecId)],
    stages: &'a Stages,
    /// The job's id (the handle of a stage it keeps).
    id: u64,
}

fn run_job(env: &JobEnv<'_>, inv: Invocation) {
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
    let (core, job, pes) = (env.core, env.job, env.pes);
    let start = Instant::now();
    let n = inv.vid_count;
    let wanted = wanted_columns(&inv);
    let tag = DeviceTag::new(inv.lock_tag);
    let mut host_buckets: Vec<usize> = inv.host_buckets.iter().map(|&b| b as usize).collect();
    host_buckets.sort_unstable();
    let modify = match (inv.op.locks(), env.slt, tag) {
        (false, _, _) => None,
        (true, Some(slt), Some(tag)) => Some(ModifyCtx {
            slt,
            tag,
            space: &job.space,
            lock_timeout: Duration::from_millis(inv.lock_timeout_ms.max(1)),
            read_committed: inv.read_committed,
            host_buckets: &host_buckets,
        }),
        (true, slt, _) => {
            let mut st = job.status.lock();
            st.state = JobState::Failed(
                SqlState::FEATURE_NOT_SUPPORTED.0.to_string(),
                if slt.is_none() {
                    "this device has no shared lock table: update NDP is not available".into()
                } else {
                    format!("invalid SLT lock tag {}", inv.lock_tag)
                },
            );
            drop(st);
            job.done.notify_all();
            return;
        }
    };
    // Scans and aggregates run through the scan core, compiled once.
    let pipeline = match &inv.op {
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
    .map(|op| Pipeline::new(&inv.types, &inv.params, inv.filter.as_ref(), op));
    // With the pages in RADOS objects, one PE fans a scan (or an
    // update's read) out over them: each object is read once, in its OSD.
    let in_objects = crate::pe::in_osds::method(pipeline.is_some(), &inv.op)
        .filter(|_| env.targets.is_empty())
        .and_then(|m| core.store.objects_with(m));
    let pes = if in_objects.is_some() { 1 } else { pes };
    type PeRun = (Result<(PeOutput, PeStats), Error>, ModifyPart);
    let outputs: Vec<PeRun> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..pes)
            .map(|pe| {
                // PE `pe` takes chunks pe, pe + pes, … (skew-resistant, still sequential).
                let chunks = Chunks {
                    first: pe as u64,
                    step: pes as u64,
                    vids: n,
                };
                let task = PeTask {
                    core,
                    inv: &inv,
                    shared: env.shared,
                    chunks,
                    wanted: &wanted,
                    cancel: &job.cancel,
                    cpu: (!env.cpus.is_empty()).then(|| env.cpus[pe % env.cpus.len()]),
                    modify: modify.as_ref(),
                    pipeline: pipeline.as_ref(),
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
    });
    let mut st_tuples = Vec::with_capacity(pes);
    let mut st_micros = Vec::with_capacity(pes);
    let mut pages_read = 0;
    let (mut pages_filtered, mut pages_pruned, mut bytes_touched) = (0, 0, 0);
    let mut parts = Vec::with_capacity(pes);
    let mut modified = ModifyResult::default();
    let mut written = Vec::new();
    let mut lock_nanos = 0u64;
    let mut fan_out = FanOut::default();
    let mut failure = None;
    for (o, part) in outputs {
        modified.rows += part.rows;
        modified.delta.vids.extend(part.delta_vids);
        modified.locked.extend(part.locked);
        modified.host_locks.extend(part.host_locks);
        modified.stale.extend(part.stale);
        modified.locked_versions.extend(part.locked_versions);
        lock_nanos += part.lock_nanos;
        written.extend(part.written);
        match o {
            Ok((out, stats)) => {
                st_tuples.push(stats.tuples);
                st_micros.push(stats.micros);
                pages_read += stats.pages_read;
                pages_filtered += stats.pages_filtered;
                pages_pruned += stats.pages_pruned;
                bytes_touched += stats.bytes_touched;
                fan_out.objects += stats.fan_out.objects;
                fan_out.reply_bytes += stats.fan_out.reply_bytes;
                fan_out.deferred += stats.fan_out.deferred;
                parts.push(out);
            }
            Err(e) => {
                st_tuples.push(0);
                st_micros.push(0);
                // The PE that failed first cancels the others: report its
                // error, not their "aborted".
                let cancelled = |e: &Error| e.sqlstate() == SqlState::QUERY_CANCELED;
                if failure
                    .as_ref()
                    .is_none_or(|f| cancelled(f) && !cancelled(&e))
                {
                    failure = Some(e);
                }
            }
        }
    }
    if modify.is_some() && failure.is_none() && !written.is_empty() {
        // The new versions are durable before the host may commit them.
        if let Err(e) = core.store.sync() {
            failure = Some(Error::sql(SqlState::IO_ERROR, format!("sync: {e}")));
        }
    }
    let mut st = job.status.lock();
    st.pe_tuples = st_tuples;
    st.pe_micros = st_micros;
    st.pages_read = pages_read;
    st.pages_filtered = pages_filtered;
    st.pages_pruned = pages_pruned;
    st.bytes_touched = bytes_touched;
    st.fan_out = fan_out;
    st.device_micros = start.elapsed().as_micros() as u64;
    st.lock_micros = lock_nanos / 1000;
    if modify.is_some() {
        // SELECT … FOR UPDATE: its rows first, then the lock report.
        let locked_rows = match (&inv.op, &failure) {
            (NdpOp::LockRows { .. }, None) => match merge(&inv, parts) {
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
                    modified.stage = keep_stage(env, &inv, &modified);
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
        job.finish(&mut st, w.into_inner(), state);
    } else {
        let result = match failure {
            Some(e) => Err(e),
            None => merge(&inv, parts),
        };
        match result {
            Ok(rows) => {
                let mut w = Writer::new();
                encode_rows(&rows, &mut w);
                st.result_rows = rows.len() as u64;
                job.finish(&mut st, w.into_inner(), JobState::Done);
            }
            Err(e) => st.state = failed_state(&e),
        }
    }
    drop(st);
    job.done.notify_all();
}

/// NDP pipelines: keeps what the next statement of the transaction works
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
