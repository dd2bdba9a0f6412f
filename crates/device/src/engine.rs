//! The device's command handler: decodes a request frame, executes it
//! against the shared state ([`Core`]: page store and maps) or hands it to
//! the in-storage engine (`ndp`), and encodes the response frame.
//!
//! ```text
//!   frame ─► DeviceEngine ─┬─ page and map commands ─► Core (core.rs)
//!                          ├─ NDP_* commands ───────► NdpEngine (ndp/) ─► Core
//!                          └─ SLT_* commands ───────► shared lock table
//! ```
//!
//! The engine owns the [`Core`] and the [`NdpEngine`]; nothing below
//! imports it back.

use std::path::Path;

use ndpdb_formats::page::PageRef;
use ndpdb_formats::Ppn;
use ndpdb_link::{CommandHandler, DeviceInfo, LinkError, Request, Response, Result};

pub use crate::core::Core;
use crate::maps::{MapStore, Maps};
use crate::ndp::NdpEngine;
use crate::store::PageStore;
use ndpdb_link::NvmProfile;
use ndpdb_slt::SharedLockTable;
use std::sync::Arc;

/// How the device is built: its compute and its medium.
#[derive(Clone, Default)]
pub struct DeviceOptions {
    /// Processing elements per NDP job (0 = one per CPU, or per pinned CPU).
    pub pes: usize,
    /// CPUs the PEs (and their preloaders) are pinned to (empty: unpinned).
    pub cpus: Vec<usize>,
    /// Emulated NVM latency of the store.
    pub nvm: NvmProfile,
    /// The shared lock table (shared memory with the host); without one
    /// the device runs read-only NDP only.
    pub slt: Option<Arc<SharedLockTable>>,
    /// A store in RADOS: objects an NDP job calls at once (0: 64).
    pub objects_in_flight: usize,
}

impl DeviceOptions {
    /// The PE count after resolving 0.
    pub fn pes_effective(&self) -> usize {
        ndpdb_link::model::effective_pes(self.pes, &self.cpus)
    }
}

/// A software computational storage device.
pub struct DeviceEngine {
    core: Arc<Core>,
    ndp: NdpEngine,
}

impl DeviceEngine {
    /// Opens the device's storage in `dir` (created if missing), with as
    /// many processing elements as the machine has CPUs.
    pub fn open(dir: &Path) -> Result<DeviceEngine> {
        DeviceEngine::open_with(dir, DeviceOptions::default())
    }

    /// Opens the device's storage in `dir` built as `options` say.
    pub fn open_with(dir: &Path, options: DeviceOptions) -> Result<DeviceEngine> {
        std::fs::create_dir_all(dir).map_err(|e| LinkError::Io(e.to_string()))?;
        crate::store::check_format(dir)?;
        let store = PageStore::open(&dir.join("pages.dat"), options.nvm)?;
        let (map_store, maps) = MapStore::open(dir)?;
        Ok(DeviceEngine::with(store, map_store, maps, options))
    }

    /// Opens the device's storage in RADOS: the objects named after
    /// `prefix` in `pool` (created if missing; see `store/rados.rs` and
    /// `maps/rados.rs` for the objects).
    pub fn open_rados(
        pool: Arc<ndpdb_rados::Pool>,
        prefix: &str,
        options: DeviceOptions,
    ) -> Result<DeviceEngine> {
        let (map_store, maps) = MapStore::open_rados(pool.clone(), prefix)?;
        let store = PageStore::open_rados(pool, prefix, options.nvm, options.objects_in_flight)?;
        Ok(DeviceEngine::with(store, map_store, maps, options))
    }

    fn with(
        store: PageStore,
        map_store: MapStore,
        maps: Maps,
        options: DeviceOptions,
    ) -> DeviceEngine {
        DeviceEngine {
            core: Arc::new(Core::new(store, map_store, maps)),
            ndp: NdpEngine::new(options.pes_effective(), options.cpus.clone(), options.slt),
        }
    }

    fn execute(&self, req: Request) -> Result<Response> {
        let core = &self.core;
        Ok(match req {
            Request::ReadPage(ppn) => Response::Page(core.store.read(ppn)?),
            Request::ReadPages(ppns) => Response::Pages(core.store.read_many(&ppns)?),
            Request::WritePage(ppn, page) => {
                PageRef::parse_verified(&page)?;
                core.store.write(ppn, &page)?;
                Response::Done
            }
            Request::WritePages(pages) => {
                let pages: Vec<(Ppn, &[u8])> = pages.iter().map(|(p, b)| (*p, &b[..])).collect();
                self.write_pages(&pages)?;
                Response::Done
            }
            Request::Sync => {
                core.store.sync()?;
                Response::Done
            }
            Request::Info => Response::Info(DeviceInfo {
                page_count: core.store.page_count(),
                page_size: ndpdb_formats::page::PAGE_SIZE as u32,
                merges: core.merges(),
            }),
            Request::MergeMaps { l2p, vids } => {
                core.merge_maps(&l2p, &vids)?;
                Response::Done
            }
            Request::DumpL2p => Response::L2p(core.maps.read().l2p.runs()),
            Request::DumpVidMap(t) => Response::VidMap(core.maps.read().vid_runs(t)),
            Request::DropVidMap(t) => {
                core.drop_vid_map(t)?;
                Response::Done
            }
            Request::NdpShared(state) => Response::Handle(self.ndp.shared(state)?),
            Request::NdpCall(inv) => Response::Handle(self.ndp.call(core, *inv)?.0),
            Request::NdpStatus { job, wait_ms } => {
                Response::JobStatus(self.ndp.status(job, wait_ms)?)
            }
            Request::NdpSpace { job, pages } => {
                self.ndp.space(job, pages)?;
                Response::Done
            }
            Request::NdpResult(job) => Response::ResultRegion(self.ndp.result(job)?),
            Request::NdpAbort(job) => {
                self.ndp.abort(job);
                Response::Done
            }
            Request::NdpRelease(stages) => {
                self.ndp.release(&stages);
                Response::Done
            }
            Request::SltLoad(word) => Response::Word(
                self.lock_table()?
                    .word_load(word)
                    .map_err(slt_err)?
                    .ok_or_else(|| word_out_of_range(word))?,
            ),
            Request::SltCas { word, old, new } => Response::Cas(
                self.lock_table()?
                    .word_compare_exchange(word, old, new)
                    .map_err(slt_err)?
                    .ok_or_else(|| word_out_of_range(word))?,
            ),
            Request::SltOccupied => Response::Occupied(
                self.lock_table()?
                    .occupied()
                    .map_err(slt_err)?
                    .into_iter()
                    .map(|(i, b)| (i as u64, b.0))
                    .collect(),
            ),
        })
    }

    /// WRITE_PAGES: every page verified first, then written.
    fn write_pages(&self, pages: &[(Ppn, &[u8])]) -> Result<()> {
        for (_, page) in pages {
            PageRef::parse_verified(page)?;
        }
        self.core.store.write_many(pages)
    }

    /// The shared lock table, for hosts that reach it by sync-plane
    /// messages.
    fn lock_table(&self) -> Result<&ndpdb_slt::SharedLockTable> {
        self.ndp
            .slt()
            .ok_or_else(|| LinkError::Unsupported("this device has no shared lock table".into()))
    }
}

fn slt_err(e: ndpdb_slt::SltError) -> LinkError {
    match e {
        ndpdb_slt::SltError::Corrupted(m) => LinkError::Corrupted(m),
        e => LinkError::Io(e.to_string()),
    }
}

fn word_out_of_range(word: u64) -> LinkError {
    LinkError::OutOfRange(format!("shared lock table word {word}"))
}

impl Drop for DeviceEngine {
    /// A snapshot being written is finished first: whoever opens the
    /// folder next must not race it.
    fn drop(&mut self) {
        self.core.finish_compaction();
    }
}

impl CommandHandler for DeviceEngine {
    /// Views of the mapped store, each page's checksum verified once since
    /// it was written; one NVM read charged per page, as by READ_PAGES.
    fn read_pages_in_place(&self, ppns: &[Ppn]) -> Option<Result<Vec<bytes::Bytes>>> {
        let store = &self.core.store;
        ppns.iter().for_each(|_| store.nvm.read_access());
        Some(
            store
                .pages_as_asked(ppns)
                .map(|pages| pages.into_iter().map(bytes::Bytes::from_owner).collect()),
        )
    }

    fn handle(&self, frame: &[u8]) -> Vec<u8> {
        // WRITE_PAGES: each page written from the request frame itself.
        match Request::write_pages_in(frame) {
            Ok(Some(pages)) => {
                return self
                    .write_pages(&pages)
                    .map_or_else(|e| Response::encode_error(&e), |_| Response::Done.encode())
            }
            Ok(None) => {}
            Err(e) => return Response::encode_error(&e),
        }
        let request = Request::decode(frame);
        if let Ok(Request::ReadPages(ppns)) = &request {
            // Each page copied once, from the store into the answer.
            let store = &self.core.store;
            return Response::pages_frame_appending(ppns.len(), |i, out| {
                store.append_page(ppns[i], out)
            })
            .unwrap_or_else(|e| Response::encode_error(&e));
        }
        match request.and_then(|req| self.execute(req)) {
            Ok(resp) => resp.encode(),
            Err(e) => Response::encode_error(&e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndpdb_formats::page::PageBuf;
    use ndpdb_formats::{Lpn, Ppn, RecId, TableId, Vid};
    use ndpdb_link::{DeviceClient, Direction, InProcessTransport, Plane, VidEntry};
    use std::sync::Arc;

    #[test]
    fn pages_and_maps_through_the_interface() {
        let dir = tempfile::tempdir().unwrap();
        let client = |d: &Path| {
            let dev = Arc::new(DeviceEngine::open(d).unwrap());
            DeviceClient::new(Arc::new(InProcessTransport::new(dev)))
        };
        let c = client(dir.path());
        let types = [ndpdb_formats::DataType::Int];
        let mut page = PageBuf::new(TableId(1), Lpn(5), &types);
        let mut rec = ndpdb_formats::codec::Writer::new();
        ndpdb_formats::record::encode_record(
            &ndpdb_formats::record::RecordHeader {
                creator: ndpdb_formats::TxId(1),
                pred: RecId::NULL,
                vid: Vid(3),
                flags: 0,
            },
            &types,
            &[ndpdb_formats::Value::Int(7)],
            &mut rec,
        )
        .unwrap();
        page.append(rec.as_slice()).unwrap().unwrap();
        page.seal();
        c.write_pages(vec![(Ppn(0), page.as_bytes().to_vec())])
            .unwrap();
        c.merge_maps(
            vec![(Lpn(5), Ppn(0))],
            vec![VidEntry {
                table: TableId(1),
                vid: Vid(3),
                head: RecId::new(Lpn(5), 0),
            }],
        )
        .unwrap();
        assert_eq!(c.read_page(Ppn(0)).unwrap(), page.as_bytes());
        assert!(matches!(c.read_page(Ppn(9)), Err(LinkError::OutOfRange(_))));
        // A corrupt page is refused.
        let mut bad = page.as_bytes().to_vec();
        bad[100] ^= 1;
        assert!(matches!(
            c.write_page(Ppn(1), bad),
            Err(LinkError::Corrupted(_))
        ));
        assert!(c.stats().messages(Plane::Data, Direction::ToDevice) >= 3);
        assert!(c.stats().bytes(Plane::Data, Direction::ToHost) >= 8192);
        drop(c);
        let c = client(dir.path());
        let l2p: Vec<_> = c.dump_l2p().unwrap().iter().collect();
        assert_eq!(l2p, vec![(5, 0)]);
        let vids: Vec<_> = c.dump_vid_map(TableId(1)).unwrap().iter().collect();
        assert_eq!(vids, vec![(3, RecId::new(Lpn(5), 0).raw())]);
        assert_eq!(c.info().unwrap().page_count, 1);
    }

    /// Pages read for a host in this process are views of the store with
    /// the bytes that were written, counted on the data plane as the
    /// READ_PAGES frame they stand for; a page past the store is refused.
    #[test]
    fn pages_read_in_place_are_the_pages_written_and_counted_as_frames() {
        let dir = tempfile::tempdir().unwrap();
        let dev = Arc::new(DeviceEngine::open(dir.path()).unwrap());
        let c = DeviceClient::new(Arc::new(InProcessTransport::new(dev)));
        let types = [ndpdb_formats::DataType::Int];
        let images: Vec<Vec<u8>> = (0..3u64)
            .map(|p| {
                let mut page = PageBuf::new(TableId(1), Lpn(p), &types);
                page.seal();
                page.as_bytes().to_vec()
            })
            .collect();
        let writes = images.iter().enumerate();
        c.write_pages(writes.map(|(p, b)| (Ppn(p as u64), b.clone())).collect())
            .unwrap();
        let before = c.stats().bytes(Plane::Data, Direction::ToHost);
        let pages = c.read_pages_shared(vec![Ppn(2), Ppn(0)]).unwrap();
        assert_eq!(pages[0][..], images[2][..]);
        assert_eq!(pages[1][..], images[0][..]);
        let frame = ndpdb_link::command::read_pages_frame_sizes(2).1 as u64;
        assert_eq!(
            c.stats().bytes(Plane::Data, Direction::ToHost) - before,
            frame
        );
        assert!(matches!(
            c.read_pages_shared(vec![Ppn(1), Ppn(3)]),
            Err(LinkError::OutOfRange(_))
        ));
    }

    /// Merges that outgrow the log start a compaction in the background;
    /// merges made while it runs and the maps it wrote all survive a
    /// reopen, and the set-aside log is gone.
    #[test]
    fn merges_during_a_background_compaction_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let client = |d: &Path| {
            let dev = Arc::new(DeviceEngine::open(d).unwrap());
            DeviceClient::new(Arc::new(InProcessTransport::new(dev)))
        };
        let c = client(dir.path());
        let head = |v: u64, round: u64| RecId::new(Lpn(v % 1000 + round), (v % 7) as u16);
        let rounds = 40u64;
        for round in 0..rounds {
            // About 190 KB of log per merge: 4 MB are passed by round 22.
            let vids = (0..10_000u64)
                .map(|v| VidEntry {
                    table: TableId(1 + (v % 2) as u32),
                    vid: Vid(v + round * 5_000),
                    head: head(v, round),
                })
                .collect();
            c.merge_maps(Vec::new(), vids).unwrap();
        }
        let dump = |c: &DeviceClient| {
            let l2p: Vec<_> = c.dump_l2p().unwrap().iter().collect();
            let t1: Vec<_> = c.dump_vid_map(TableId(1)).unwrap().iter().collect();
            let t2: Vec<_> = c.dump_vid_map(TableId(2)).unwrap().iter().collect();
            (l2p, t1, t2)
        };
        let before = dump(&c);
        assert_eq!(
            before.1.len() + before.2.len(),
            5_000 * rounds as usize + 5_000
        );
        drop(c);
        assert!(!dir.path().join("maps.log.old").exists());
        let log = std::fs::metadata(dir.path().join("maps.log"))
            .unwrap()
            .len();
        let snap = std::fs::metadata(dir.path().join("maps.snap"))
            .unwrap()
            .len();
        assert!(log < 4 << 20 && snap > 0, "log {log} B, snapshot {snap} B");
        let c = client(dir.path());
        assert_eq!(dump(&c), before);
    }

    #[test]
    fn a_store_of_another_format_is_refused_by_version() {
        let dir = tempfile::tempdir().unwrap();
        // Format 1 stores have a page file and no marker.
        std::fs::write(dir.path().join("pages.dat"), vec![0u8; 8192]).unwrap();
        let e = DeviceEngine::open(dir.path()).err().unwrap().to_string();
        assert!(
            e.contains("format 1 (NSM pages)") && e.contains("format 2"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        DeviceEngine::open(dir.path()).unwrap();
        DeviceEngine::open(dir.path()).unwrap();
        std::fs::write(dir.path().join("FORMAT"), "ndpdb device store format 3\n").unwrap();
        let e = DeviceEngine::open(dir.path()).err().unwrap().to_string();
        assert!(e.contains("has format 3"), "{e}");
    }
}
