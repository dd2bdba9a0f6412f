//! Command envelope and the commands of the native storage interface.
//!
//! ```text
//! request : opcode u16 | flags u16 | payload length u32 | payload
//! response: status u16 | 0 u16     | payload length u32 | payload
//! ```
//!
//! Status 0 is success; otherwise the payload is a UTF-8 message and the
//! status names the error class. New commands (NDP_CALL, NDP_STATUS,
//! NDP_ABORT, …) extend [`Opcode`] without changing the envelope; their
//! payloads are the typed messages of [`crate::ndp`].

use ndpdb_formats::codec::{Reader, Writer};
use ndpdb_formats::delta_maps::{decode_pages, encode_pages};
use ndpdb_formats::page::PAGE_SIZE;
use ndpdb_formats::{JobId, Lpn, Ppn, RecId, TableId, Vid};

use crate::map_runs::MapRuns;
use crate::ndp::{Invocation, JobStatus, SharedState};
use crate::plane::Plane;
use crate::{LinkError, Result};

pub const ENVELOPE_SIZE: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum Opcode {
    ReadPage = 0x01,
    ReadPages = 0x02,
    WritePage = 0x03,
    WritePages = 0x04,
    Sync = 0x05,
    Info = 0x06,
    MergeMaps = 0x10,
    DumpL2p = 0x11,
    DumpVidMap = 0x12,
    DropVidMap = 0x13,
    NdpCall = 0x20,
    NdpStatus = 0x21,
    NdpAbort = 0x22,
    NdpResult = 0x23,
    NdpShared = 0x24,
    /// More pre-allocated pages for an update job that ran out.
    NdpSpace = 0x25,
    /// Drop an NDP pipeline stage the device keeps (the transaction that
    /// owns it ended, or its next statement does not use it).
    NdpRelease = 0x26,
    /// Sync plane: load one word of the device's shared lock table.
    SltLoad = 0x30,
    /// Sync plane: 128-bit compare-and-swap on one word of it.
    SltCas = 0x31,
    /// Sync plane: every bucket that is not empty.
    SltOccupied = 0x32,
}

impl Opcode {
    pub fn from_u16(v: u16) -> Option<Opcode> {
        use Opcode::*;
        [
            ReadPage,
            ReadPages,
            WritePage,
            WritePages,
            Sync,
            Info,
            MergeMaps,
            DumpL2p,
            DumpVidMap,
            DropVidMap,
            NdpCall,
            NdpStatus,
            NdpAbort,
            NdpResult,
            NdpShared,
            NdpSpace,
            NdpRelease,
            SltLoad,
            SltCas,
            SltOccupied,
        ]
        .into_iter()
        .find(|o| *o as u16 == v)
    }

    /// The plane a command travels on.
    pub fn plane(self) -> Plane {
        match self {
            Opcode::ReadPage
            | Opcode::ReadPages
            | Opcode::WritePage
            | Opcode::WritePages
            | Opcode::MergeMaps
            | Opcode::DumpL2p
            | Opcode::DumpVidMap
            | Opcode::NdpResult
            | Opcode::NdpShared => Plane::Data,
            Opcode::Sync
            | Opcode::Info
            | Opcode::DropVidMap
            | Opcode::NdpCall
            | Opcode::NdpStatus
            | Opcode::NdpAbort
            | Opcode::NdpSpace
            | Opcode::NdpRelease => Plane::Control,
            Opcode::SltLoad | Opcode::SltCas | Opcode::SltOccupied => Plane::Sync,
        }
    }
}

/// One ΔVID entry: the new head of a tuple's version chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VidEntry {
    pub table: TableId,
    pub vid: Vid,
    pub head: RecId,
}

/// What the device reports about itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DeviceInfo {
    /// Pages in the store (the next never-written PPN).
    pub page_count: u64,
    pub page_size: u32,
    /// Number of map batches merged since the device opened.
    pub merges: u64,
}

/// A command from host to device.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    ReadPage(Ppn),
    ReadPages(Vec<Ppn>),
    WritePage(Ppn, Vec<u8>),
    WritePages(Vec<(Ppn, Vec<u8>)>),
    Sync,
    Info,
    /// Atomically merge ΔL2P and ΔVID into the device maps (after making
    /// all written pages durable).
    MergeMaps {
        l2p: Vec<(Lpn, Ppn)>,
        vids: Vec<VidEntry>,
    },
    DumpL2p,
    DumpVidMap(TableId),
    DropVidMap(TableId),
    /// NDP_SHARED: a table's unflushed shared state (delta pages, ΔVID
    /// overlay), passed along for the next NDP_CALL → `Handle`.
    NdpShared(SharedState),
    /// NDP_CALL: start a job → `Handle` (its JobId).
    NdpCall(Box<Invocation>),
    /// NDP_STATUS: long-poll a job for up to `wait_ms` → `JobStatus`.
    NdpStatus {
        job: JobId,
        wait_ms: u32,
    },
    /// NDP_SPACE: more pre-allocated pages for a job in NeedSpace.
    NdpSpace {
        job: JobId,
        pages: Vec<(Lpn, Ppn)>,
    },
    /// NDP_RESULT: a finished job's result region → `ResultRegion`.
    NdpResult(JobId),
    /// NDP_ABORT: stop a job.
    NdpAbort(JobId),
    /// NDP_RELEASE: drop NDP pipeline stages.
    NdpRelease(Vec<u64>),
    /// SLT_LOAD: word `0` is the header, word `1 + i` bucket `i` → `Word`.
    SltLoad(u64),
    /// SLT_CAS → `Cas`.
    SltCas {
        word: u64,
        old: u128,
        new: u128,
    },
    /// SLT_OCCUPIED → `Occupied`.
    SltOccupied,
}

/// A device answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Response {
    Done,
    Page(Vec<u8>),
    Pages(Vec<Vec<u8>>),
    Info(DeviceInfo),
    /// LPN → PPN.
    L2p(MapRuns),
    /// VID → raw head RecId.
    VidMap(MapRuns),
    /// NDP_SHARED's handle, NDP_CALL's JobId.
    Handle(u64),
    JobStatus(JobStatus),
    /// NDP_RESULT: result rows, a `ModifyResult`, or rows then a
    /// `ModifyResult` (SELECT … FOR UPDATE) — as the job's op says.
    ResultRegion(Vec<u8>),
    /// SLT_LOAD: the word.
    Word(u128),
    /// SLT_CAS: swapped, or the word it holds instead.
    Cas(std::result::Result<(), u128>),
    /// SLT_OCCUPIED: (bucket index, word) of every bucket not empty.
    Occupied(Vec<(u64, u128)>),
}

/// ΔL2P and ΔVID entries.
pub type MapDelta = (Vec<(Lpn, Ppn)>, Vec<VidEntry>);

/// Encodes ΔL2P and ΔVID: `n u32, (LPN, PPN)*, m u32, (table, VID, RecId)*`.
/// Shared by MERGE_MAPS and the device's map log.
pub fn encode_map_delta(w: &mut Writer, l2p: &[(Lpn, Ppn)], vids: &[VidEntry]) {
    w.u32(l2p.len() as u32);
    for (l, p) in l2p {
        w.u64(l.0).u64(p.0);
    }
    w.u32(vids.len() as u32);
    for e in vids {
        w.u32(e.table.0).u64(e.vid.0).u64(e.head.raw());
    }
}

/// Decodes what [`encode_map_delta`] wrote.
pub fn decode_map_delta(r: &mut Reader<'_>) -> ndpdb_formats::Result<MapDelta> {
    let n = r.count(16)?;
    let mut l2p = Vec::with_capacity(n);
    for _ in 0..n {
        l2p.push((Lpn(r.u64()?), Ppn(r.u64()?)));
    }
    let n = r.count(20)?;
    let mut vids = Vec::with_capacity(n);
    for _ in 0..n {
        vids.push(VidEntry {
            table: TableId(r.u32()?),
            vid: Vid(r.u64()?),
            head: RecId::from_raw(r.u64()?),
        });
    }
    Ok((l2p, vids))
}

/// Pages as views into the frame that carries them.
pub type PageViews<'a> = Vec<(Ppn, &'a [u8])>;

fn put_u128(w: &mut Writer, v: u128) {
    w.u64(v as u64).u64((v >> 64) as u64);
}

fn get_u128(r: &mut Reader<'_>) -> Result<u128> {
    Ok(r.u64()? as u128 | (r.u64()? as u128) << 64)
}

fn page_bytes<'a>(r: &mut Reader<'a>) -> Result<&'a [u8]> {
    Ok(r.take(PAGE_SIZE)?)
}

impl Request {
    pub fn opcode(&self) -> Opcode {
        match self {
            Request::ReadPage(_) => Opcode::ReadPage,
            Request::ReadPages(_) => Opcode::ReadPages,
            Request::WritePage(..) => Opcode::WritePage,
            Request::WritePages(_) => Opcode::WritePages,
            Request::Sync => Opcode::Sync,
            Request::Info => Opcode::Info,
            Request::MergeMaps { .. } => Opcode::MergeMaps,
            Request::DumpL2p => Opcode::DumpL2p,
            Request::DumpVidMap(_) => Opcode::DumpVidMap,
            Request::DropVidMap(_) => Opcode::DropVidMap,
            Request::NdpShared(_) => Opcode::NdpShared,
            Request::NdpCall(_) => Opcode::NdpCall,
            Request::NdpStatus { .. } => Opcode::NdpStatus,
            Request::NdpSpace { .. } => Opcode::NdpSpace,
            Request::NdpResult(_) => Opcode::NdpResult,
            Request::NdpAbort(_) => Opcode::NdpAbort,
            Request::NdpRelease(_) => Opcode::NdpRelease,
            Request::SltLoad(_) => Opcode::SltLoad,
            Request::SltCas { .. } => Opcode::SltCas,
            Request::SltOccupied => Opcode::SltOccupied,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        if let Request::WritePages(pages) = self {
            return Request::encode_write_pages(pages.iter().map(|(ppn, b)| (*ppn, &b[..])));
        }
        let size = match self {
            Request::WritePage(_, b) => 8 + b.len(),
            Request::NdpShared(st) => st.encoded_len(),
            _ => 64,
        };
        let mut p = begin_envelope(self.opcode() as u16, size);
        match self {
            Request::ReadPage(ppn) => {
                p.u64(ppn.0);
            }
            Request::ReadPages(ppns) => {
                p.u32(ppns.len() as u32);
                for x in ppns {
                    p.u64(x.0);
                }
            }
            Request::WritePage(ppn, page) => {
                p.u64(ppn.0).raw(page);
            }
            Request::WritePages(_) => unreachable!("encoded above"),
            Request::Sync | Request::Info | Request::DumpL2p | Request::SltOccupied => {}
            Request::SltLoad(word) => {
                p.u64(*word);
            }
            Request::SltCas { word, old, new } => {
                p.u64(*word);
                put_u128(&mut p, *old);
                put_u128(&mut p, *new);
            }
            Request::MergeMaps { l2p, vids } => encode_map_delta(&mut p, l2p, vids),
            Request::DumpVidMap(t) | Request::DropVidMap(t) => {
                p.u32(t.0);
            }
            Request::NdpShared(st) => st.encode(&mut p),
            Request::NdpCall(inv) => inv.encode(&mut p),
            Request::NdpStatus { job, wait_ms } => {
                p.u64(job.0).u32(*wait_ms);
            }
            Request::NdpSpace { job, pages } => {
                p.u64(job.0);
                encode_pages(pages, &mut p);
            }
            Request::NdpResult(job) | Request::NdpAbort(job) => {
                p.u64(job.0);
            }
            Request::NdpRelease(handles) => {
                p.u32(handles.len() as u32);
                for h in handles {
                    p.u64(*h);
                }
            }
        }
        finish_envelope(p)
    }

    /// The frame of `WritePages(pages)`, written straight from borrowed
    /// page images (one copy of each page).
    pub fn encode_write_pages<'a>(
        pages: impl ExactSizeIterator<Item = (Ppn, &'a [u8])>,
    ) -> Vec<u8> {
        let n = pages.len();
        let mut w = begin_envelope(Opcode::WritePages as u16, 4 + n * (8 + PAGE_SIZE));
        w.u32(n as u32);
        for (ppn, page) in pages {
            w.u64(ppn.0).raw(page);
        }
        finish_envelope(w)
    }

    /// The pages of a WRITE_PAGES frame as views into it (no copy), or
    /// `None` if the frame is another command.
    pub fn write_pages_in(frame: &[u8]) -> Result<Option<PageViews<'_>>> {
        let (code, payload) = open_envelope(frame)?;
        if code != Opcode::WritePages as u16 {
            return Ok(None);
        }
        let mut r = Reader::new(payload);
        let n = r.count(8 + PAGE_SIZE)?;
        let mut pages = Vec::with_capacity(n);
        for _ in 0..n {
            let ppn = Ppn(r.u64()?);
            pages.push((ppn, page_bytes(&mut r)?));
        }
        r.finish("request")?;
        Ok(Some(pages))
    }

    pub fn decode(frame: &[u8]) -> Result<Request> {
        let (code, payload) = open_envelope(frame)?;
        let op = Opcode::from_u16(code)
            .ok_or_else(|| LinkError::Unsupported(format!("opcode {code:#x}")))?;
        let mut r = Reader::new(payload);
        let req = match op {
            Opcode::ReadPage => Request::ReadPage(Ppn(r.u64()?)),
            Opcode::ReadPages => {
                let n = r.count(8)?;
                Request::ReadPages((0..n).map(|_| r.u64().map(Ppn)).collect::<Result<_, _>>()?)
            }
            Opcode::WritePage => {
                let ppn = Ppn(r.u64()?);
                Request::WritePage(ppn, page_bytes(&mut r)?.to_vec())
            }
            Opcode::WritePages => {
                let n = r.count(8 + PAGE_SIZE)?;
                let mut pages = Vec::with_capacity(n);
                for _ in 0..n {
                    let ppn = Ppn(r.u64()?);
                    pages.push((ppn, page_bytes(&mut r)?.to_vec()));
                }
                Request::WritePages(pages)
            }
            Opcode::Sync => Request::Sync,
            Opcode::Info => Request::Info,
            Opcode::DumpL2p => Request::DumpL2p,
            Opcode::MergeMaps => {
                let (l2p, vids) = decode_map_delta(&mut r)?;
                Request::MergeMaps { l2p, vids }
            }
            Opcode::DumpVidMap => Request::DumpVidMap(TableId(r.u32()?)),
            Opcode::DropVidMap => Request::DropVidMap(TableId(r.u32()?)),
            Opcode::NdpShared => Request::NdpShared(SharedState::decode(&mut r)?),
            Opcode::NdpCall => Request::NdpCall(Box::new(Invocation::decode(&mut r)?)),
            Opcode::NdpStatus => Request::NdpStatus {
                job: JobId(r.u64()?),
                wait_ms: r.u32()?,
            },
            Opcode::NdpSpace => Request::NdpSpace {
                job: JobId(r.u64()?),
                pages: decode_pages(&mut r)?,
            },
            Opcode::NdpResult => Request::NdpResult(JobId(r.u64()?)),
            Opcode::NdpAbort => Request::NdpAbort(JobId(r.u64()?)),
            Opcode::NdpRelease => {
                let n = r.count(8)?;
                Request::NdpRelease((0..n).map(|_| r.u64()).collect::<Result<_, _>>()?)
            }
            Opcode::SltLoad => Request::SltLoad(r.u64()?),
            Opcode::SltCas => Request::SltCas {
                word: r.u64()?,
                old: get_u128(&mut r)?,
                new: get_u128(&mut r)?,
            },
            Opcode::SltOccupied => Request::SltOccupied,
        };
        r.finish("request")?;
        Ok(req)
    }
}

/// A frame being written in place: its envelope first, the length
/// filled in by [`finish_envelope`] (no copy of the payload).
fn begin_envelope(code: u16, payload_hint: usize) -> Writer {
    let mut w = Writer::with_capacity(ENVELOPE_SIZE + payload_hint);
    w.u16(code).u16(0).u32(0);
    w
}

fn finish_envelope(w: Writer) -> Vec<u8> {
    let mut frame = w.into_inner();
    let len = (frame.len() - ENVELOPE_SIZE) as u32;
    frame[4..8].copy_from_slice(&len.to_le_bytes());
    frame
}

fn envelope(code: u16, payload: &[u8]) -> Vec<u8> {
    let mut w = Writer::with_capacity(ENVELOPE_SIZE + payload.len());
    w.u16(code).u16(0).u32(payload.len() as u32).raw(payload);
    w.into_inner()
}

fn open_envelope(frame: &[u8]) -> Result<(u16, &[u8])> {
    let mut r = Reader::new(frame);
    let code = r.u16()?;
    let _flags = r.u16()?;
    let len = r.u32()? as usize;
    let payload = r.take(len)?;
    r.finish("envelope")?;
    Ok((code, payload))
}

const STATUS_IO: u16 = 1;
const STATUS_CORRUPTED: u16 = 2;
const STATUS_UNSUPPORTED: u16 = 3;
const STATUS_OUT_OF_RANGE: u16 = 4;

/// The sizes of READ_PAGES' request and answer frames for `n` pages.
pub fn read_pages_frame_sizes(n: usize) -> (usize, usize) {
    (ENVELOPE_SIZE + 4 + n * 8, ENVELOPE_SIZE + 4 + n * PAGE_SIZE)
}

impl Response {
    /// The frame of READ_PAGES' answer for `n` pages, each page written in
    /// place by `fill(i, page)`: the device copies each page once, from
    /// its store straight into the frame.
    pub fn pages_frame(
        n: usize,
        mut fill: impl FnMut(usize, &mut [u8]) -> Result<()>,
    ) -> Result<Vec<u8>> {
        Self::pages_frame_appending(n, |i, frame| {
            let start = frame.len();
            frame.resize(start + PAGE_SIZE, 0);
            fill(i, &mut frame[start..])
        })
    }

    /// [`Response::pages_frame`] whose `append` adds page `i`'s
    /// [`PAGE_SIZE`] bytes to the frame (no zeroing before the copy).
    pub fn pages_frame_appending(
        n: usize,
        mut append: impl FnMut(usize, &mut Vec<u8>) -> Result<()>,
    ) -> Result<Vec<u8>> {
        let payload = 4 + n * PAGE_SIZE;
        let mut frame = Vec::with_capacity(ENVELOPE_SIZE + payload);
        frame.resize(ENVELOPE_SIZE, 0);
        frame[4..8].copy_from_slice(&(payload as u32).to_le_bytes());
        frame.extend_from_slice(&(n as u32).to_le_bytes());
        for i in 0..n {
            let before = frame.len();
            append(i, &mut frame)?;
            if frame.len() != before + PAGE_SIZE {
                return Err(LinkError::Corrupted(format!(
                    "page {i} of an answer has {} bytes",
                    frame.len() - before
                )));
            }
        }
        Ok(frame)
    }

    /// The pages of READ_PAGES' answer as views of the one frame they came
    /// in (no copy): `n` pages expected.
    pub fn pages_of_frame(frame: Vec<u8>, n: usize) -> Result<Vec<bytes::Bytes>> {
        let (status, payload) = open_envelope(&frame)?;
        if status != 0 {
            // An error answer: decoding it yields the device's error.
            return Err(Response::decode(Opcode::ReadPages, &frame)
                .err()
                .unwrap_or_else(|| {
                    LinkError::Corrupted(format!("status {status} without an error"))
                }));
        }
        let mut r = Reader::new(payload);
        let count = r.count(PAGE_SIZE)?;
        if count != n || r.remaining() != n * PAGE_SIZE {
            return Err(LinkError::Corrupted(format!(
                "READ_PAGES answered {count} pages in {} bytes for {n} asked",
                payload.len()
            )));
        }
        let frame = bytes::Bytes::from(frame);
        let start = ENVELOPE_SIZE + 4;
        Ok((0..n)
            .map(|i| frame.slice(start + i * PAGE_SIZE..start + (i + 1) * PAGE_SIZE))
            .collect())
    }

    pub fn encode(&self) -> Vec<u8> {
        let size = match self {
            Response::Page(b) | Response::ResultRegion(b) => b.len(),
            Response::Pages(pages) => 4 + pages.iter().map(Vec::len).sum::<usize>(),
            _ => 64,
        };
        let mut p = begin_envelope(0, size);
        match self {
            Response::Done => {}
            Response::Page(b) => {
                p.raw(b);
            }
            Response::Pages(pages) => {
                p.u32(pages.len() as u32);
                for b in pages {
                    p.raw(b);
                }
            }
            Response::Info(i) => {
                p.u64(i.page_count).u32(i.page_size).u64(i.merges);
            }
            Response::L2p(runs) | Response::VidMap(runs) => runs.encode(&mut p),
            Response::Handle(h) => {
                p.u64(*h);
            }
            Response::JobStatus(st) => st.encode(&mut p),
            Response::ResultRegion(b) => {
                p.raw(b);
            }
            Response::Word(w) => put_u128(&mut p, *w),
            Response::Cas(r) => {
                p.u8(r.is_ok() as u8);
                put_u128(&mut p, r.err().unwrap_or(0));
            }
            Response::Occupied(words) => {
                p.u32(words.len() as u32);
                for (i, w) in words {
                    p.u64(*i);
                    put_u128(&mut p, *w);
                }
            }
        }
        finish_envelope(p)
    }

    pub fn encode_error(e: &LinkError) -> Vec<u8> {
        let (status, msg) = match e {
            LinkError::Io(m)
            | LinkError::Transport(m)
            | LinkError::Refused(m)
            | LinkError::Restarted(m) => (STATUS_IO, m),
            LinkError::Corrupted(m) => (STATUS_CORRUPTED, m),
            LinkError::Unsupported(m) => (STATUS_UNSUPPORTED, m),
            LinkError::OutOfRange(m) => (STATUS_OUT_OF_RANGE, m),
        };
        envelope(status, msg.as_bytes())
    }

    /// Decodes the answer to a request with opcode `op`.
    pub fn decode(op: Opcode, frame: &[u8]) -> Result<Response> {
        let (status, payload) = open_envelope(frame)?;
        if status != 0 {
            let msg = String::from_utf8_lossy(payload).into_owned();
            return Err(match status {
                STATUS_IO => LinkError::Io(msg),
                STATUS_CORRUPTED => LinkError::Corrupted(msg),
                STATUS_UNSUPPORTED => LinkError::Unsupported(msg),
                STATUS_OUT_OF_RANGE => LinkError::OutOfRange(msg),
                s => LinkError::Corrupted(format!("unknown status {s}: {msg}")),
            });
        }
        let mut r = Reader::new(payload);
        let resp = match op {
            Opcode::ReadPage => Response::Page(page_bytes(&mut r)?.to_vec()),
            Opcode::ReadPages => {
                let n = r.count(PAGE_SIZE)?;
                Response::Pages(
                    (0..n)
                        .map(|_| page_bytes(&mut r).map(<[u8]>::to_vec))
                        .collect::<Result<_, _>>()?,
                )
            }
            Opcode::Info => Response::Info(DeviceInfo {
                page_count: r.u64()?,
                page_size: r.u32()?,
                merges: r.u64()?,
            }),
            Opcode::DumpL2p => Response::L2p(MapRuns::decode(&mut r, u64::MAX)?),
            Opcode::DumpVidMap => {
                Response::VidMap(MapRuns::decode(&mut r, ndpdb_formats::ids::MAX_VID)?)
            }
            Opcode::NdpShared | Opcode::NdpCall => Response::Handle(r.u64()?),
            Opcode::NdpStatus => Response::JobStatus(JobStatus::decode(&mut r)?),
            Opcode::NdpResult => Response::ResultRegion(r.take(r.remaining())?.to_vec()),
            Opcode::SltLoad => Response::Word(get_u128(&mut r)?),
            Opcode::SltCas => {
                let ok = r.u8()?;
                let now = get_u128(&mut r)?;
                Response::Cas(match ok {
                    1 => Ok(()),
                    0 => Err(now),
                    b => return Err(LinkError::Corrupted(format!("SLT_CAS outcome {b}"))),
                })
            }
            Opcode::SltOccupied => {
                let n = r.count(24)?;
                Response::Occupied(
                    (0..n)
                        .map(|_| Ok((r.u64()?, get_u128(&mut r)?)))
                        .collect::<Result<_>>()?,
                )
            }
            _ => Response::Done,
        };
        r.finish("response")?;
        Ok(resp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip() {
        let page = vec![7u8; PAGE_SIZE];
        let reqs = vec![
            Request::ReadPage(Ppn(9)),
            Request::ReadPages(vec![Ppn(1), Ppn(2)]),
            Request::WritePage(Ppn(3), page.clone()),
            Request::WritePages(vec![(Ppn(4), page.clone()), (Ppn(5), page)]),
            Request::Sync,
            Request::Info,
            Request::MergeMaps {
                l2p: vec![(Lpn(1), Ppn(2))],
                vids: vec![VidEntry {
                    table: TableId(3),
                    vid: Vid(4),
                    head: RecId::new(Lpn(1), 0),
                }],
            },
            Request::DumpL2p,
            Request::DumpVidMap(TableId(2)),
            Request::DropVidMap(TableId(2)),
            Request::NdpStatus {
                job: JobId(7),
                wait_ms: 250,
            },
            Request::NdpSpace {
                job: JobId(7),
                pages: vec![(Lpn(9), Ppn(10))],
            },
            Request::NdpResult(JobId(8)),
            Request::NdpAbort(JobId(9)),
            Request::NdpRelease(vec![3, 4]),
            Request::SltLoad(17),
            Request::SltCas {
                word: 3,
                old: 1 << 100,
                new: u128::MAX - 5,
            },
            Request::SltOccupied,
            Request::NdpShared(SharedState {
                pages: vec![(Lpn(5), vec![0u8; PAGE_SIZE])],
                vids: vec![(Vid(1), RecId::new(Lpn(5), 0))],
            }),
        ];
        for req in reqs {
            let bytes = req.encode();
            assert_eq!(Request::decode(&bytes).unwrap(), req);
            // Every truncation is an error, never a panic.
            for cut in 0..bytes.len().min(64) {
                assert!(Request::decode(&bytes[..cut]).is_err());
            }
        }
    }

    #[test]
    fn map_dumps_travel_as_runs() {
        // Three pages of a loaded table, a gap, a lone entry.
        let mut vids = Vec::new();
        for (lpn, slots) in [(5u64, 70u16), (6, 70), (7, 12)] {
            for s in 0..slots {
                vids.push((Vid(vids.len() as u64), RecId::new(Lpn(lpn), s)));
            }
        }
        vids.push((Vid(400), RecId::new(Lpn(2), 3)));
        let vids = MapRuns::collect(vids.iter().map(|(v, r)| (v.0, r.raw())));
        let bytes = Response::VidMap(vids.clone()).encode();
        assert!(bytes.len() < 4 * 20 + 16, "{} bytes", bytes.len());
        assert_eq!(
            Response::decode(Opcode::DumpVidMap, &bytes),
            Ok(Response::VidMap(vids))
        );
        let l2p = MapRuns::collect((0..1000).map(|i| (i, i + 7)));
        let bytes = Response::L2p(l2p.clone()).encode();
        assert_eq!(
            Response::decode(Opcode::DumpL2p, &bytes),
            Ok(Response::L2p(l2p))
        );
        // Runs out of order, empty, too long or past the VID space.
        for (k, n) in [
            (10u64, 5u32),
            (0, 0),
            (0, 70_000),
            (ndpdb_formats::ids::MAX_VID - 1, 2),
        ] {
            let mut w = Writer::new();
            w.u32(2).u64(12).u64(1).u32(1).u64(k).u64(9).u32(n);
            let frame = envelope(0, w.as_slice());
            assert!(
                matches!(
                    Response::decode(Opcode::DumpVidMap, &frame),
                    Err(LinkError::Corrupted(_))
                ),
                "run ({k}, {n})"
            );
        }
    }

    #[test]
    fn page_frames_are_read_in_place() {
        let page = |b: u8| vec![b; PAGE_SIZE];
        let req = Request::WritePages(vec![(Ppn(4), page(1)), (Ppn(5), page(2))]);
        let frame = req.encode();
        let pages = Request::write_pages_in(&frame).unwrap().unwrap();
        assert_eq!(pages, vec![(Ppn(4), &page(1)[..]), (Ppn(5), &page(2)[..])]);
        assert_eq!(Request::write_pages_in(&Request::Sync.encode()), Ok(None));
        assert!(Request::write_pages_in(&frame[..frame.len() - 1]).is_err());

        let answer = Response::pages_frame(2, |i, out| {
            out.fill(i as u8 + 7);
            Ok(())
        })
        .unwrap();
        assert_eq!(
            Response::decode(Opcode::ReadPages, &answer),
            Ok(Response::Pages(vec![page(7), page(8)]))
        );
        let views = Response::pages_of_frame(answer.clone(), 2).unwrap();
        assert_eq!(views.len(), 2);
        assert!(views[1].iter().all(|b| *b == 8) && views[1].len() == PAGE_SIZE);
        assert!(matches!(
            Response::pages_of_frame(answer, 3),
            Err(LinkError::Corrupted(_))
        ));
        let err = Response::encode_error(&LinkError::OutOfRange("PPN 9".into()));
        assert_eq!(
            Response::pages_of_frame(err, 1),
            Err(LinkError::OutOfRange("PPN 9".into()))
        );
    }

    #[test]
    fn slt_answers_round_trip() {
        for (op, resp) in [
            (Opcode::SltLoad, Response::Word(u128::MAX - 1)),
            (Opcode::SltCas, Response::Cas(Ok(()))),
            (Opcode::SltCas, Response::Cas(Err(1 << 90))),
            (
                Opcode::SltOccupied,
                Response::Occupied(vec![(3, 7), (9, 1 << 70)]),
            ),
        ] {
            let bytes = resp.encode();
            assert_eq!(Response::decode(op, &bytes), Ok(resp));
            assert_eq!(op.plane(), Plane::Sync);
        }
        let mut bad = Response::Cas(Ok(())).encode();
        bad[ENVELOPE_SIZE] = 2;
        assert!(matches!(
            Response::decode(Opcode::SltCas, &bad),
            Err(LinkError::Corrupted(_))
        ));
    }

    #[test]
    fn errors_round_trip() {
        let e = LinkError::Corrupted("bad page".into());
        let bytes = Response::encode_error(&e);
        assert_eq!(Response::decode(Opcode::ReadPage, &bytes), Err(e));
    }
}
