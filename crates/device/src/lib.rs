//! The device engine ("in-storage engine", DESIGN.md §1–§2, §4; DANSEN §3).
//!
//! The device owns its storage: a PPN-addressed page file and its own,
//! persisted copies of the L2P map and the per-table VID maps. The host
//! decides placement (it allocates PPNs) and sends map deltas; the device
//! applies them atomically and durably. All access arrives as serialized
//! commands through [`ndpdb_link::CommandHandler`].
//!
//! ```text
//!   command frame ─► engine ─┬─► store  (pages.dat: PPN × 8 KiB)
//!                            ├─► maps   (maps.snap + maps.log: L2P, VID maps)
//!                            └─► ndp    (jobs: PEs walk VIDs, filter, aggregate)
//! ```
//!
//! - [`store`]: the page file.
//! - [`maps`]: device maps and their crash-safe persistence.
//! - [`ndp`]: the in-storage engine: NDP jobs on processing elements.
//! - `pe`: one processing element and its preloader thread.
//! - `pipeline`: NDP pipelines: a statement's locked or new versions kept
//!   on the device for the transaction's next statement.
//! - `gc`: version garbage collection as an NDP job.
//! - `update`: update NDP on a PE: SLT locks, certification, new versions
//!   in pre-allocated pages written by an unloader thread.
//! - NVM latency profiles (`ndpdb_link::nvm`) slow the store's accesses.
//! - [`engine`]: the command handler.

pub mod engine;
mod gc;
pub mod maps;
pub mod ndp;
mod pe;
mod pipeline;
pub mod store;
mod update;

pub use engine::{DeviceEngine, DeviceOptions};
pub use ndpdb_link::NvmProfile;
