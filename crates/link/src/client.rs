//! The host's typed view of the device: one method per command.

use std::sync::Arc;

use ndpdb_formats::{Lpn, Ppn, TableId};

use crate::command::{DeviceInfo, Request, Response, VidEntry};
use crate::map_runs::MapRuns;
use crate::transport::{LinkStats, Transport};
use crate::{LinkError, Result};

/// Typed client over a [`Transport`]. Cheap to clone.
#[derive(Clone)]
pub struct DeviceClient {
    transport: Arc<dyn Transport>,
}

fn unexpected(r: Response) -> LinkError {
    LinkError::Corrupted(format!("unexpected response {r:?}"))
}

impl DeviceClient {
    pub fn new(transport: Arc<dyn Transport>) -> DeviceClient {
        DeviceClient { transport }
    }

    pub fn stats(&self) -> &LinkStats {
        self.transport.stats()
    }

    pub fn model(&self) -> crate::LinkModel {
        self.transport.model()
    }

    pub fn call(&self, req: &Request) -> Result<Response> {
        let op = req.opcode();
        let frame = self.transport.roundtrip(op.plane(), req.encode())?;
        Response::decode(op, &frame)
    }

    pub fn read_page(&self, ppn: Ppn) -> Result<Vec<u8>> {
        match self.call(&Request::ReadPage(ppn))? {
            Response::Page(p) => Ok(p),
            r => Err(unexpected(r)),
        }
    }

    pub fn read_pages(&self, ppns: Vec<Ppn>) -> Result<Vec<Vec<u8>>> {
        let n = ppns.len();
        match self.call(&Request::ReadPages(ppns))? {
            Response::Pages(p) if p.len() == n => Ok(p),
            r => Err(unexpected(r)),
        }
    }

    pub fn write_page(&self, ppn: Ppn, page: Vec<u8>) -> Result<()> {
        self.call(&Request::WritePage(ppn, page)).map(|_| ())
    }

    pub fn write_pages(&self, pages: Vec<(Ppn, Vec<u8>)>) -> Result<()> {
        self.call(&Request::WritePages(pages)).map(|_| ())
    }

    /// WRITE_PAGES from borrowed page images.
    pub fn write_page_images(&self, pages: &[(Ppn, &[u8])]) -> Result<()> {
        let op = crate::Opcode::WritePages;
        let frame = Request::encode_write_pages(pages.iter().copied());
        let reply = self.transport.roundtrip(op.plane(), frame)?;
        Response::decode(op, &reply).map(|_| ())
    }

    pub fn sync(&self) -> Result<()> {
        self.call(&Request::Sync).map(|_| ())
    }

    pub fn info(&self) -> Result<DeviceInfo> {
        match self.call(&Request::Info)? {
            Response::Info(i) => Ok(i),
            r => Err(unexpected(r)),
        }
    }

    pub fn merge_maps(&self, l2p: Vec<(Lpn, Ppn)>, vids: Vec<VidEntry>) -> Result<()> {
        self.call(&Request::MergeMaps { l2p, vids }).map(|_| ())
    }

    /// The L2P map: LPN → PPN.
    pub fn dump_l2p(&self) -> Result<MapRuns> {
        match self.call(&Request::DumpL2p)? {
            Response::L2p(v) => Ok(v),
            r => Err(unexpected(r)),
        }
    }

    /// A table's VID map: VID → raw head RecId.
    pub fn dump_vid_map(&self, table: TableId) -> Result<MapRuns> {
        match self.call(&Request::DumpVidMap(table))? {
            Response::VidMap(v) => Ok(v),
            r => Err(unexpected(r)),
        }
    }

    /// One NDP command (NDP_SHARED, NDP_CALL, NDP_STATUS, NDP_RESULT,
    /// NDP_ABORT); the payloads are defined in `ndpdb_formats::ndp`.
    pub fn ndp(&self, op: crate::Opcode, payload: Vec<u8>) -> Result<Vec<u8>> {
        match self.call(&Request::Ndp(op, payload))? {
            Response::Ndp(b) => Ok(b),
            // An empty NDP reply (NDP_SPACE, NDP_ABORT) frames as `Done`.
            Response::Done => Ok(Vec::new()),
            r => Err(unexpected(r)),
        }
    }

    pub fn drop_vid_map(&self, table: TableId) -> Result<()> {
        self.call(&Request::DropVidMap(table)).map(|_| ())
    }
}
