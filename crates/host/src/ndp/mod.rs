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
//!  pipeline.rs      NDP pipelines: the next statement continues from the
//!                   locked or new versions the last one left on the device
//!  validate.rs      ΔL2P against the grant, ΔVID against the VID heads — at
//!                   statement end and again at commit
//!  overflow_log.rs  extended NDP logging: the job's pages moved to the host
//!  lock_violation.rs  while they move, waiters may take the job's locks
//!                   (commit dependencies on its end of transaction)
//! ```
//!
//! The commit itself (End-NDP, ΔVID applied with the host's versions) is
//! `crate::commit`; GC jobs go through the same call (`crate::gc`).

mod call;
pub(crate) mod lock_violation;
pub mod overflow_log;
pub(crate) mod pipeline;
mod update;
pub(crate) mod validate;

pub use call::{NdpReport, NdpRequest};
pub use update::NdpLogging;
pub(crate) use update::{own_heads, NdpPart, TagPool};
