//! Recovery: the WAL replayed onto the device's maps (DESIGN.md §8).
//!
//! ```text
//!  crash recovery      device store + maps as a crash left them (every
//!                      page a job or GC run wrote is there)
//!  media recovery      device store + maps rebuilt from a base backup
//!  (restore)           (as they were at its checkpoint); the pages of jobs
//!                      and GC runs since come from their overflow logs
//!
//!  for each record from the checkpoint on, in LSN order:
//!    Redo of a committed tx   → delta buffer at its RecIds, VID heads
//!    Start-NDP                → remembered: each End-NDP names one
//!    End-NDP of a committed tx → (restore: pages written back) ΔL2P
//!                               mapped, ΔVID heads moved
//!    Gc                       → (restore: pages written back) as End-NDP;
//!                               its freed LPNs unmapped at the end
//! ```
//!
//! Uncommitted work never reached the log before its commit record, so
//! nothing is undone. A restore replays through later checkpoints too
//! (they only said the lost device held what came before them), and
//! fails — naming the transaction — at an End-NDP whose pages exist only
//! on the lost device (`ndp_logging` other than `extended`).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use ndpdb_formats::delta_maps::{DeltaMaps, DeltaVid};
use ndpdb_formats::record::{RecordHeader, RecordView};
use ndpdb_formats::{Lpn, Lsn, Ppn, RecId, SqlState, TableId, TxId, Vid};
use ndpdb_link::{DeviceClient, VidEntry};
use ndpdb_wal::{Recovered, WalRecord};

use crate::database::TableState;
use crate::error::{Error, Result};
use crate::maps::L2pMap;
use crate::ndp::overflow_log::{self, OverflowRef};
use crate::shared_state::DeltaBuffer;

/// Where the device's pages of logged jobs come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// They are on the device (crash recovery).
    Device,
    /// The device was rebuilt from a backup: they are in overflow logs.
    OverflowLogs,
}

/// What a replay left for the open to finish.
pub(crate) struct Replayed {
    pub delta: DeltaBuffer,
    pub next_txid: TxId,
    pub max_lpn: Option<Lpn>,
    pub transactions: u64,
    pub versions: u64,
    /// Overflow logs written back (restore).
    pub overflow_logs: u64,
}

/// Replays `recovered` (see the module docs).
pub(crate) fn replay(
    dir: &Path,
    device: &DeviceClient,
    l2p: &L2pMap,
    tables: &HashMap<TableId, Arc<TableState>>,
    pk_loaded: &HashSet<TableId>,
    recovered: &Recovered,
    source: Source,
) -> Result<Replayed> {
    let committed: HashSet<TxId> = recovered
        .records
        .iter()
        .filter_map(|(_, r)| match r {
            WalRecord::Commit { txid } => Some(*txid),
            _ => None,
        })
        .collect();
    let mut out = Replayed {
        delta: DeltaBuffer::default(),
        next_txid: recovered
            .checkpoint
            .as_ref()
            .map_or(TxId(1), |c| c.next_txid),
        max_lpn: l2p.max_lpn(),
        transactions: committed.len() as u64,
        versions: 0,
        overflow_logs: 0,
    };
    let see = |out: &mut Replayed, txid: &TxId| {
        out.next_txid = out.next_txid.max(TxId(txid.0 + 1));
    };
    // Pages GC runs freed: unmapped once the replay is done.
    let mut gc_freed: Vec<Lpn> = Vec::new();
    // Start-NDP records replayed so far, by LSN: each End-NDP names one.
    let replay_start = recovered.records.first().map(|(lsn, _)| *lsn);
    let mut starts: HashMap<Lsn, TxId> = HashMap::new();
    for (lsn, rec) in &recovered.records {
        match rec {
            WalRecord::Redo {
                txid,
                table,
                entries,
            } => {
                see(&mut out, txid);
                if !committed.contains(txid) {
                    continue;
                }
                let Some(ts) = tables.get(table) else {
                    continue;
                };
                for (rid, bytes) in entries {
                    let h = RecordHeader::parse(bytes)?;
                    out.delta.place(*table, &ts.types, *rid, bytes)?;
                    replay_head(ts, &mut out.delta, h.vid, *rid)?;
                    if pk_loaded.contains(table) && !h.is_tombstone() {
                        replay_key(ts, h.vid, bytes)?;
                    }
                    out.max_lpn = out.max_lpn.max(Some(rid.lpn()));
                    out.versions += 1;
                }
            }
            WalRecord::EndNdp {
                txid,
                table,
                start,
                overflow,
                delta,
            } => {
                see(&mut out, txid);
                if let Some(start) = start.filter(|s| Some(*s) >= replay_start) {
                    if starts.get(&start) != Some(txid) {
                        return Err(Error::from(ndpdb_formats::Error::corrupted(format!(
                            "WAL: End-NDP of transaction {txid} at LSN {} names LSN {}, which is not a Start-NDP record of that transaction",
                            lsn.0, start.0
                        ))));
                    }
                }
                if !committed.contains(txid) {
                    continue;
                }
                let Some(ts) = tables.get(table) else {
                    continue;
                };
                if source == Source::OverflowLogs && !delta.l2p.is_empty() {
                    let log = start
                        .zip(*overflow)
                        .map(|(start, (bytes, crc))| OverflowRef { start, bytes, crc });
                    write_back(dir, device, log, delta, || {
                        format!(
                            "transaction {txid} updated table {} on the device after the backup (End-NDP at WAL LSN {}) without ndp_logging = extended",
                            ts.meta().name, lsn.0
                        )
                    })?;
                    out.overflow_logs += 1;
                }
                // The pages are durable on the device (synced before the
                // job reported done, or written back above); their
                // mapping may not be.
                let last = replay_delta_maps(device, l2p, ts, &mut out.delta, delta)?;
                out.max_lpn = out.max_lpn.max(last);
                out.versions += delta.vids.len() as u64;
            }
            WalRecord::Gc {
                table,
                overflow,
                delta,
                freed,
            } => {
                let Some(ts) = tables.get(table) else {
                    continue;
                };
                if source == Source::OverflowLogs && !delta.l2p.is_empty() {
                    let log = overflow.map(|(start, bytes, crc)| OverflowRef { start, bytes, crc });
                    write_back(dir, device, log, delta, || {
                        format!(
                            "a garbage-collection run on table {} (WAL LSN {}) logged no overflow log",
                            ts.meta().name, lsn.0
                        )
                    })?;
                    out.overflow_logs += 1;
                }
                let last = replay_delta_maps(device, l2p, ts, &mut out.delta, delta)?;
                out.max_lpn = out.max_lpn.max(last);
                gc_freed.extend(freed.iter().map(|(l, _)| *l));
            }
            WalRecord::StartNdp { txid, .. } => {
                starts.insert(*lsn, *txid);
                see(&mut out, txid);
            }
            WalRecord::Commit { txid } => see(&mut out, txid),
            WalRecord::Checkpoint(c) => out.next_txid = out.next_txid.max(c.next_txid),
        }
    }
    if !gc_freed.is_empty() {
        // Nobody reads yet: the freed pages' LPNs go now, and their
        // PPNs are free once the open builds its space map (no map
        // refers to them).
        let unmap = gc_freed.iter().map(|l| (*l, Ppn::NONE)).collect();
        device.merge_maps(unmap, Vec::new())?;
        l2p.remove_all(&gc_freed);
    }
    Ok(out)
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

/// A redone version's key added to its table's PK index.
fn replay_key(ts: &TableState, vid: Vid, record: &[u8]) -> Result<()> {
    let Some(pk) = ts.pk.get() else {
        return Ok(());
    };
    let row = RecordView::parse(record)?.decode(&ts.types)?;
    if let Some(key) = ts.pk_key(&row) {
        pk.insert(key, vid)?;
    }
    Ok(())
}

/// `rid` becomes the head of `vid` (host map and the ΔVID list the next
/// flush merges into the device's map).
fn replay_head(ts: &TableState, delta: &mut DeltaBuffer, vid: Vid, rid: RecId) -> Result<()> {
    if vid.0 >= ndpdb_formats::ids::MAX_VID {
        return Err(Error::new(
            SqlState::DATA_CORRUPTED,
            format!("WAL record with VID {}", vid.0),
        ));
    }
    ts.vids.set(vid, rid);
    delta.push_delta_vid(VidEntry {
        table: ts.id,
        vid,
        head: rid,
    });
    Ok(())
}
