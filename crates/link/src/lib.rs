//! The native storage interface between host and device (DESIGN.md §1, §10;
//! DANSEN §3, the DANSEN/CINDA overview).
//!
//! The host reaches the device's storage *only* through serialized commands
//! carried by a [`Transport`]. Nothing here hands out pointers into device
//! memory: every page, map entry and status crosses as bytes, and every
//! byte is counted per plane and direction.
//!
//! ```text
//!   host ── DeviceClient ──► encode ──► Transport ──► CommandHandler (device)
//!                 ▲                        │  counts bytes/messages
//!                 └───── decode ◄──────────┘  per plane × direction
//! ```
//!
//! - [`command`]: the command envelope, requests and responses.
//! - [`ndp`]: the NDP messages: invocations, shared state, job status,
//!   update results and result rows.
//! - [`plane`]: the data, control and sync planes and the bytes and
//!   messages counted on each, per direction.
//! - [`transport`]: the transport trait and the in-process transport.
//! - [`map_runs`]: map dumps as runs of consecutive entries.
//! - [`client`]: the typed host-side API over any transport.
//! - [`link_model`]: link presets that throttle the data plane (also
//!   reachable as `model`, its former name).
//! - [`nvm`]: NVM latency profiles of the device's emulated medium.
//! - [`socket`]: the link over a unix or TCP socket (a device in its own
//!   process), and the device's listener.
//! - [`sync_plane`]: the device's shared lock table reached by messages
//!   (remote compare-and-swap) when host and device share no memory.

pub mod client;
pub mod command;
pub mod link_model;
pub mod map_runs;
pub mod ndp;
pub mod nvm;
pub mod plane;
pub mod socket;
pub mod sync_plane;
pub mod transport;

/// The link model's former path, kept for the crates above.
pub use link_model as model;

pub use client::DeviceClient;
pub use command::{DeviceInfo, Opcode, Request, Response, VidEntry};
pub use link_model::LinkModel;
pub use map_runs::MapRuns;
pub use nvm::NvmProfile;
pub use transport::{CommandHandler, Direction, InProcessTransport, LinkStats, Plane, Transport};

/// Errors of the link layer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LinkError {
    /// The device reported an I/O failure.
    #[error("device I/O error: {0}")]
    Io(String),
    /// The device (or the host) found malformed bytes.
    #[error("device data corrupted: {0}")]
    Corrupted(String),
    /// The device does not implement the command.
    #[error("device does not support: {0}")]
    Unsupported(String),
    /// An address outside the device's store.
    #[error("out of range: {0}")]
    OutOfRange(String),
    /// The transport itself failed (peer gone, closed channel).
    #[error("link failure: {0}")]
    Transport(String),
    /// The device refused the host (token, version, another host).
    #[error("the device refused this host: {0}")]
    Refused(String),
    /// The device restarted: its jobs and lock table are gone, and the
    /// host must reattach before it is used again.
    #[error("{0}")]
    Restarted(String),
}

impl From<ndpdb_formats::Error> for LinkError {
    fn from(e: ndpdb_formats::Error) -> Self {
        LinkError::Corrupted(e.to_string())
    }
}

pub type Result<T, E = LinkError> = std::result::Result<T, E>;
