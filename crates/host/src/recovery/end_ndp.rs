//! End-NDP replay (update NDP §6, system and media recovery): an update
//! job's ΔMaps, logged with its transaction's commit, put back onto the
//! device's maps and the host's VID heads. GC runs (`Gc` records) replay
//! the same way: their ΔMaps are an update job's without a transaction.
//!
//! ```text
//!  Start-NDP (LSN s, tx T)          remembered: each End-NDP names one
//!  End-NDP (tx T, start s, ΔMaps)   s must be T's Start-NDP (else corrupt);
//!    T committed?                   no → nothing (its pages stay unmapped)
//!    restore (Source::OverflowLogs) the pages written back from the
//!                                   overflow log named by s (55000 without
//!                                   one: they were only on the lost store),
//!                                   then checked against ΔL2P
//!    ΔL2P → device MERGE_MAPS + host L2P;  ΔVID → VID heads (+ ΔVID list)
//!  Gc (ΔMaps, freed)                as End-NDP; freed LPNs unmapped at the end
//! ```
//!
//! Crash recovery finds the pages on the device (synced before the job
//! reported done); only their mapping may be missing.

use std::collections::HashMap;
use std::path::Path;

use ndpdb_formats::delta_maps::{DeltaMaps, DeltaVid};
use ndpdb_formats::{Lpn, Lsn, Ppn, SqlState, TxId};
use ndpdb_link::DeviceClient;

use super::redo::replay_head;
use crate::db::TableState;
use crate::error::{Error, Result};
use crate::mvcc::delta_buffer::DeltaBuffer;
use crate::ndp::overflow_log::{self, OverflowRef};
use crate::storage::maps::L2pMap;

/// Where the device's pages of logged jobs come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// They are on the device (crash recovery).
    Device,
    /// The device was rebuilt from a backup: they are in overflow logs.
    OverflowLogs,
}

/// Where ΔMaps are replayed to.
pub(crate) struct Target<'a> {
    pub dir: &'a Path,
    pub device: &'a DeviceClient,
    pub l2p: &'a L2pMap,
    pub source: Source,
}

/// What replaying one record's ΔMaps did.
pub(crate) struct Applied {
    /// The largest LPN mapped.
    pub last_lpn: Option<Lpn>,
    /// An overflow log was written back (restore).
    pub wrote_back: bool,
}

/// An End-NDP record at `lsn` of transaction `txid` names `start`: that
/// must be a Start-NDP of the same transaction (when the replay covers
/// it; `starts` are those replayed so far).
pub(crate) fn check_start(
    lsn: Lsn,
    txid: TxId,
    start: Option<Lsn>,
    replay_start: Option<Lsn>,
    starts: &HashMap<Lsn, TxId>,
) -> Result<()> {
    if let Some(start) = start.filter(|s| Some(*s) >= replay_start) {
        if starts.get(&start) != Some(&txid) {
            return Err(Error::from(ndpdb_formats::Error::corrupted(format!(
                "WAL: End-NDP of transaction {txid} at LSN {} names LSN {}, which is not a Start-NDP record of that transaction",
                lsn.0, start.0
            ))));
        }
    }
    Ok(())
}

/// The End-NDP at `lsn` of committed transaction `txid` on `ts`: on a
/// restore its pages come back from the overflow log `start` and
/// `overflow` name, then its ΔMaps are applied.
pub(crate) fn end_ndp(
    to: &Target<'_>,
    ts: &TableState,
    buffer: &mut DeltaBuffer,
    (lsn, txid): (Lsn, TxId),
    start: Option<Lsn>,
    overflow: Option<(u64, u32)>,
    maps: &DeltaMaps,
) -> Result<Applied> {
    let mut wrote_back = false;
    if to.source == Source::OverflowLogs && !maps.l2p.is_empty() {
        let log = start
            .zip(overflow)
            .map(|(start, (bytes, crc))| OverflowRef { start, bytes, crc });
        write_back(to.dir, to.device, log, maps, || {
            format!(
                "transaction {txid} updated table {} on the device after the backup (End-NDP at WAL LSN {}) without ndp_logging = extended",
                ts.meta().name, lsn.0
            )
        })?;
        wrote_back = true;
    }
    // The pages are durable on the device (synced before the job
    // reported done, or written back above); their mapping may not be.
    let last_lpn = replay_delta_maps(to.device, to.l2p, ts, buffer, maps)?;
    Ok(Applied {
        last_lpn,
        wrote_back,
    })
}

/// The GC run at `lsn` on `ts`, replayed as an End-NDP (its overflow log
/// names itself). The caller unmaps the pages it freed.
pub(crate) fn gc(
    to: &Target<'_>,
    ts: &TableState,
    buffer: &mut DeltaBuffer,
    lsn: Lsn,
    overflow: Option<(Lsn, u64, u32)>,
    maps: &DeltaMaps,
) -> Result<Applied> {
    let mut wrote_back = false;
    if to.source == Source::OverflowLogs && !maps.l2p.is_empty() {
        let log = overflow.map(|(start, bytes, crc)| OverflowRef { start, bytes, crc });
        write_back(to.dir, to.device, log, maps, || {
            format!(
                "a garbage-collection run on table {} (WAL LSN {}) logged no overflow log",
                ts.meta().name,
                lsn.0
            )
        })?;
        wrote_back = true;
    }
    let last_lpn = replay_delta_maps(to.device, to.l2p, ts, buffer, maps)?;
    Ok(Applied {
        last_lpn,
        wrote_back,
    })
}

/// Restore: the pages of the job (or GC run) `log` names, written back to
/// the device where they were (streamed from the file), after which they
/// must prove to be the pages its ΔL2P maps. Without a log (`unlogged`
/// says whose) the pages were only on the lost store: 55000.
fn write_back(
    dir: &Path,
    device: &DeviceClient,
    log: Option<OverflowRef>,
    delta: &DeltaMaps,
    unlogged: impl FnOnce() -> String,
) -> Result<()> {
    let Some(log) = log else {
        return Err(Error::new(
            SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!(
                "cannot restore: {}, so its {} new pages were only on the lost device store",
                unlogged(),
                delta.l2p.len()
            ),
        ));
    };
    let mut got = overflow_log::for_each_page(dir, &log, 64, &mut |pages| {
        let images: Vec<(Ppn, &[u8])> = pages.iter().map(|(_, p, b)| (*p, &b[..])).collect();
        device.write_page_images(&images)?;
        Ok(())
    })?;
    let mut expected = delta.l2p.clone();
    expected.sort_unstable();
    got.sort_unstable();
    if expected != got {
        return Err(Error::from(ndpdb_formats::Error::corrupted(format!(
            "overflow log of LSN {} holds {} pages, not the {} its WAL record maps",
            log.start.0,
            got.len(),
            expected.len()
        ))));
    }
    Ok(())
}

/// The pages of logged ΔMaps (End-NDP, Gc) mapped on device and host and
/// the heads moved; returns the largest LPN mapped.
fn replay_delta_maps(
    device: &DeviceClient,
    l2p: &L2pMap,
    ts: &TableState,
    delta: &mut DeltaBuffer,
    maps: &DeltaMaps,
) -> Result<Option<Lpn>> {
    device.merge_maps(maps.l2p.to_vec(), Vec::new())?;
    l2p.insert_all(&maps.l2p);
    for d in &maps.vids {
        let DeltaVid { vid, new, .. } = *d;
        replay_head(ts, delta, vid, new)?;
    }
    Ok(maps.l2p.iter().map(|(l, _)| *l).max())
}
