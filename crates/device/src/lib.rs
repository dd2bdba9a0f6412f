//! The device engine ("in-storage engine", DESIGN.md §1–§2, §4; DANSEN §3).
//!
//! The device owns its storage: a PPN-addressed page file and its own,
//! persisted copies of the L2P map and the per-table VID maps. The host
//! decides placement (it allocates PPNs) and sends map deltas; the device
//! applies them atomically and durably. All access arrives as serialized
//! commands through [`ndpdb_link::CommandHandler`].
//!
//! ```text
//!   command frame ─► engine ─┬─► core ─┬─► store (pages.dat: PPN × 8 KiB)
//!                            │         └─► maps  (maps.snap + maps.log: L2P, VID maps)
//!                            └─► ndp    (jobs: PEs walk VIDs, filter, aggregate) ─► core
//! ```
//!
//! - [`engine`]: the command handler; it owns the core and the NDP engine.
//! - `core`: the shared state every mechanism borrows (store and maps).
//! - [`store`]: the page file.
//! - [`maps`]: device maps and their crash-safe persistence (the map
//!   image and the merge log).
//! - [`ndp`]: the in-storage engine: NDP jobs (`ndp/job.rs`), pass-along
//!   (`ndp/pass_along.rs`), processing elements with their visibility
//!   walk and preloader (`ndp/pe/`), update NDP with its certification
//!   and unloader (`ndp/update/`), NDP pipeline stages (`ndp/stages.rs`).
//! - `gc`: version garbage collection as an NDP job.
//! - NVM latency profiles (`ndpdb_link::nvm`) slow the store's accesses.

mod core;
pub mod engine;
mod gc;
pub mod maps;
pub mod ndp;
pub mod store;

pub use engine::{DeviceEngine, DeviceOptions};
pub use ndpdb_link::NvmProfile;
