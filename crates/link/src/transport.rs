//! Transports (DESIGN.md §10): what carries a command frame to the device
//! and its answer back, counted per plane in [`LinkStats`] and throttled by
//! the link model on the data plane.
//!
//! ```text
//!   DeviceClient ──frame──► Transport::roundtrip ──► CommandHandler (device)
//!                             └─ Metered: LinkStats (plane.rs) + Throttle (link_model.rs)
//! ```
//!
//! The planes and counters live in `plane.rs` (re-exported here); the
//! socket transport is in `socket.rs`.

use std::sync::Arc;

use ndpdb_formats::Ppn;

use crate::command::read_pages_frame_sizes;
use crate::link_model::{LinkModel, Throttle};
pub use crate::plane::{Direction, LinkStats, Plane};
use crate::Result;

/// Something that executes serialized commands: the device side.
pub trait CommandHandler: Send + Sync {
    /// Executes one request frame and returns the response frame.
    fn handle(&self, request: &[u8]) -> Vec<u8>;

    /// READ_PAGES answered in place: read-only views of the pages where
    /// the device keeps them, for a host in the same process (`None`: this
    /// device answers by frame only). A view stays valid while it is held:
    /// the device rewrites no page that a reader may still hold.
    fn read_pages_in_place(&self, _ppns: &[Ppn]) -> Option<Result<Vec<bytes::Bytes>>> {
        None
    }
}

/// Carries one request frame to the device and its response back.
pub trait Transport: Send + Sync {
    fn roundtrip(&self, plane: Plane, request: Vec<u8>) -> Result<Vec<u8>>;
    fn stats(&self) -> &LinkStats;
    /// READ_PAGES without a response frame, where the transport can hand
    /// the device's own pages over ([`CommandHandler::read_pages_in_place`]);
    /// `None`: use the frame. Counted and throttled as the frame would be.
    fn read_pages_in_place(&self, _ppns: &[Ppn]) -> Option<Result<Vec<bytes::Bytes>>> {
        None
    }
    /// The link preset the data plane runs under.
    fn model(&self) -> LinkModel {
        LinkModel::UNTHROTTLED
    }
    /// After a failed exchange, reconnects: `true` when the device came
    /// back as a new incarnation (it restarted) that waits to be
    /// accepted. A device in this process never restarts.
    fn probe(&self) -> Result<bool> {
        Ok(false)
    }
    /// Accepts a restarted device: returns the name of its lock-table
    /// region. Until [`Transport::finish_restart`] only sync-plane
    /// requests pass, so the host can re-learn its lock table first.
    fn accept_restart(&self) -> Option<String> {
        None
    }
    fn finish_restart(&self) {}
}

/// What every transport does around an exchange: count both frames on
/// their plane, and hold the data plane for the link preset's time.
pub struct Metered {
    stats: LinkStats,
    throttle: Throttle,
}

impl Metered {
    pub fn new(model: LinkModel) -> Metered {
        Metered {
            stats: LinkStats::default(),
            throttle: Throttle::new(model),
        }
    }

    /// Sends `request` through `carry` (which returns the response),
    /// counted and throttled.
    pub fn exchange(
        &self,
        plane: Plane,
        request: Vec<u8>,
        carry: impl FnOnce(&[u8]) -> Result<Vec<u8>>,
    ) -> Result<Vec<u8>> {
        let response = carry(&request)?;
        self.account(plane, request.len(), response.len());
        Ok(response)
    }

    /// Counts and throttles an exchange of frames of these sizes (also
    /// one carried without the frames themselves).
    pub fn account(&self, plane: Plane, request: usize, response: usize) {
        self.stats.record(plane, Direction::ToDevice, request);
        self.stats.record(plane, Direction::ToHost, response);
        if plane == Plane::Data {
            self.throttle.pass(request + response);
        }
    }

    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    pub fn model(&self) -> LinkModel {
        self.throttle.model()
    }
}

/// The embedded default: the device engine runs in this process, and the
/// transport hands it byte frames (never references to host memory).
/// Pages read for the host are the one exception: they are handed over
/// as read-only views of the device's store (no copy per page), counted
/// on the data plane as the READ_PAGES frames they stand for.
pub struct InProcessTransport {
    device: Arc<dyn CommandHandler>,
    metered: Metered,
}

impl InProcessTransport {
    pub fn new(device: Arc<dyn CommandHandler>) -> InProcessTransport {
        InProcessTransport::with_model(device, LinkModel::UNTHROTTLED)
    }

    /// A transport whose data plane behaves like `model`.
    pub fn with_model(device: Arc<dyn CommandHandler>, model: LinkModel) -> InProcessTransport {
        InProcessTransport {
            device,
            metered: Metered::new(model),
        }
    }
}

impl Transport for InProcessTransport {
    fn roundtrip(&self, plane: Plane, request: Vec<u8>) -> Result<Vec<u8>> {
        self.metered
            .exchange(plane, request, |r| Ok(self.device.handle(r)))
    }

    fn stats(&self) -> &LinkStats {
        self.metered.stats()
    }

    fn model(&self) -> LinkModel {
        self.metered.model()
    }

    fn read_pages_in_place(&self, ppns: &[Ppn]) -> Option<Result<Vec<bytes::Bytes>>> {
        let pages = self.device.read_pages_in_place(ppns)?;
        let (request, response) = read_pages_frame_sizes(ppns.len());
        self.metered.account(Plane::Data, request, response);
        Some(pages)
    }
}
