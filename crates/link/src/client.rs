//! The host's typed view of the device: one method per command.

use std::sync::Arc;

use ndpdb_formats::page::PAGE_SIZE;
use ndpdb_formats::{JobId, Lpn, Ppn, TableId};

use crate::command::{DeviceInfo, Request, Response, VidEntry};
use crate::map_runs::MapRuns;
use crate::ndp::{Invocation, JobStatus, SharedState};
use crate::plane::LinkStats;
use crate::transport::Transport;
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

    /// See [`Transport::probe`].
    pub fn probe(&self) -> Result<bool> {
        self.transport.probe()
    }

    /// See [`Transport::accept_restart`].
    pub fn accept_restart(&self) -> Option<String> {
        self.transport.accept_restart()
    }

    /// See [`Transport::finish_restart`].
    pub fn finish_restart(&self) {
        self.transport.finish_restart()
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

    /// READ_PAGES, the pages handed out as views of the one frame they
    /// arrived in (no copy per page). A device in this process hands over
    /// views of its own pages instead (no copy at all).
    pub fn read_pages_shared(&self, ppns: Vec<Ppn>) -> Result<Vec<bytes::Bytes>> {
        let n = ppns.len();
        if let Some(pages) = self.transport.read_pages_in_place(&ppns) {
            let pages = pages?;
            if pages.len() != n || pages.iter().any(|p| p.len() != PAGE_SIZE) {
                return Err(LinkError::Corrupted(format!(
                    "READ_PAGES answered {} pages for {n} asked",
                    pages.len()
                )));
            }
            return Ok(pages);
        }
        let op = crate::Opcode::ReadPages;
        let frame = self
            .transport
            .roundtrip(op.plane(), Request::ReadPages(ppns).encode())?;
        Response::pages_of_frame(frame, n)
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

    /// NDP_SHARED: hands a table's unflushed shared state to the device
    /// for the next call; returns its handle (`Invocation::shared`).
    pub fn ndp_shared(&self, state: SharedState) -> Result<u64> {
        match self.call(&Request::NdpShared(state))? {
            Response::Handle(h) => Ok(h),
            r => Err(unexpected(r)),
        }
    }

    /// NDP_CALL: starts a job.
    pub fn ndp_call(&self, inv: Invocation) -> Result<JobId> {
        match self.call(&Request::NdpCall(Box::new(inv)))? {
            Response::Handle(h) => Ok(JobId(h)),
            r => Err(unexpected(r)),
        }
    }

    /// NDP_STATUS: the job's state once it changes, pages are ready, or
    /// `wait_ms` passed (the device caps the wait).
    pub fn ndp_status(&self, job: JobId, wait_ms: u32) -> Result<JobStatus> {
        match self.call(&Request::NdpStatus { job, wait_ms })? {
            Response::JobStatus(st) => Ok(st),
            r => Err(unexpected(r)),
        }
    }

    /// NDP_SPACE: more pre-allocated pages for a job in NeedSpace.
    pub fn ndp_space(&self, job: JobId, pages: Vec<(Lpn, Ppn)>) -> Result<()> {
        self.call(&Request::NdpSpace { job, pages }).map(|_| ())
    }

    /// NDP_RESULT: a finished job's result region (the job is freed).
    pub fn ndp_result(&self, job: JobId) -> Result<Vec<u8>> {
        match self.call(&Request::NdpResult(job))? {
            Response::ResultRegion(b) => Ok(b),
            r => Err(unexpected(r)),
        }
    }

    /// NDP_ABORT: stops a job (one that runs to its end still leaves a
    /// result to collect).
    pub fn ndp_abort(&self, job: JobId) -> Result<()> {
        self.call(&Request::NdpAbort(job)).map(|_| ())
    }

    /// NDP_RELEASE: drops NDP pipeline stages.
    pub fn ndp_release(&self, stages: Vec<u64>) -> Result<()> {
        self.call(&Request::NdpRelease(stages)).map(|_| ())
    }

    /// SLT_LOAD: one word of the device's shared lock table.
    pub fn slt_load(&self, word: u64) -> Result<u128> {
        match self.call(&Request::SltLoad(word))? {
            Response::Word(w) => Ok(w),
            r => Err(unexpected(r)),
        }
    }

    /// SLT_CAS: compare-and-swap on one word of it.
    pub fn slt_cas(
        &self,
        word: u64,
        old: u128,
        new: u128,
    ) -> Result<std::result::Result<(), u128>> {
        match self.call(&Request::SltCas { word, old, new })? {
            Response::Cas(r) => Ok(r),
            r => Err(unexpected(r)),
        }
    }

    /// SLT_OCCUPIED: its buckets that are not empty.
    pub fn slt_occupied(&self) -> Result<Vec<(u64, u128)>> {
        match self.call(&Request::SltOccupied)? {
            Response::Occupied(w) => Ok(w),
            r => Err(unexpected(r)),
        }
    }

    pub fn drop_vid_map(&self, table: TableId) -> Result<()> {
        self.call(&Request::DropVidMap(table)).map(|_| ())
    }
}
