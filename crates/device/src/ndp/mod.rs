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
//! batches while the PE walks the current one (`pe/preloader.rs`).
//! Chunks are dealt round-robin so a predicate that selects one region
//! of the table (e.g. the first districts) still spreads over all PEs,
//! and only the columns the pipeline reads are decoded.
//!
//! - this file: [`NdpEngine`], the NDP commands and the table of jobs.
//! - `job`: one job's record and its run (PEs started, outputs merged).
//! - `pass_along`: the host's delta pages and ΔVID overlay for a call.
//! - `pe/`: a processing element — its walk, preloader, the objects of
//!   a RADOS store walking for it.
//! - `update/`: update NDP — certification, new versions, the unloader.
//! - `stages`: NDP pipelines, statement outputs kept for the next
//!   statement of a transaction.
//!
//! GC jobs (`crate::gc`) are NDP jobs too; they run apart from the PEs.

pub(crate) mod job;
pub(crate) mod pass_along;
pub(crate) mod pe;
pub(crate) mod stages;
pub(crate) mod update;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use ndpdb_formats::{Error, JobId};
use ndpdb_link::ndp::{Invocation, JobState, JobStatus, SharedState};
use ndpdb_link::{LinkError, Result as LinkResult};

use crate::core::Core;
use crate::ndp::job::{run_job, Job, JobEnv};
use crate::ndp::pass_along::PassedAlong;
use crate::ndp::stages::Stages;
use ndpdb_slt::SharedLockTable;

/// Longest NDP_STATUS wait the device grants.
const MAX_WAIT: Duration = Duration::from_secs(10);

/// The in-storage engine: the NDP commands, the passed-along states
/// waiting for their call, the jobs, and the NDP pipeline stages kept.
pub struct NdpEngine {
    default_pes: usize,
    /// CPUs the PEs are pinned to (PE i → cpus[i mod n]); empty = unpinned.
    cpus: Vec<usize>,
    /// The shared lock table update jobs lock tuples in.
    slt: Option<Arc<SharedLockTable>>,
    next: AtomicU64,
    shared: Mutex<HashMap<u64, Arc<PassedAlong>>>,
    jobs: Mutex<HashMap<u64, Arc<Job>>>,
    /// NDP pipelines: statement outputs kept for the next statement.
    stages: Arc<Stages>,
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
        let passed = PassedAlong::from_state(s).map_err(link_err)?;
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.shared.lock().insert(id, Arc::new(passed));
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
        let job = Job::new(id, pes, &inv);
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

fn link_err(e: Error) -> LinkError {
    LinkError::Corrupted(e.to_string())
}
