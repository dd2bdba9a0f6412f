//! Near-data processing, the host's side (DESIGN.md §4–§8; DANSEN §4,
//! update NDP §4–§6): everything the host does to run work on the device
//! and to trust what comes back.
//!
//! ```text
//!  call.rs          NDP_SHARED (pass-along) → NDP_CALL → NDP_STATUS … → NDP_RESULT;
//!                   read-only scans and aggregates (ndp_execute); the status loop
//!                   grants space and ends deadlocks of device jobs
//!  update.rs        UPDATE / DELETE / SELECT … FOR UPDATE on the device: pages
//!                   pre-allocated, Start-NDP, the job's ΔMaps kept until commit
//!  part.rs          what such a statement leaves with its transaction (NdpPart),
//!                   ndp_logging, the SLT tags jobs lock with
//!  statement_pipeline/  NDP statement pipelines: the next statement continues
//!                   from the locked or new versions the last one left on the device
//!  validate.rs      ΔMaps validation: ΔL2P against the grant, ΔVID against the
//!                   VID heads — at statement end and again at commit (40001)
//!  overflow_log.rs  extended NDP logging: the job's pages moved to the host
//!  lock_violation.rs  while they move, waiters may take the job's locks
//!  commit_dependencies.rs  … and wait for its end of transaction to commit
//! ```
//!
//! The commit itself (End-NDP, ΔVID applied with the host's versions) is
//! `crate::transaction::commit`; its replay `crate::recovery::end_ndp`; GC jobs go
//! through the same call (`crate::gc`).

mod call;
mod commit_dependencies;
pub(crate) mod lock_violation;
pub mod overflow_log;
mod part;
pub(crate) mod statement_pipeline;
mod update;
pub(crate) mod validate;

pub use call::{NdpReport, NdpRequest};
pub(crate) use commit_dependencies::{Dependencies, Eot};
pub use part::NdpLogging;
pub(crate) use part::{own_heads, NdpPart, TagPool};
