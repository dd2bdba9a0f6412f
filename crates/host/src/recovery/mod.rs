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
//!
//! ```text
//!  mod.rs      the replay in LSN order, the TxId and LPN allocators' bounds
//!  redo.rs     Redo records: versions back into the delta buffer
//!  end_ndp.rs  End-NDP and Gc records: ΔMaps back onto the maps
//! ```

mod end_ndp;
mod redo;

pub(crate) use end_ndp::Source;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use ndpdb_formats::{Lpn, Lsn, Ppn, TableId, TxId};
use ndpdb_link::DeviceClient;
use ndpdb_wal::{Recovered, WalRecord};

use crate::db::TableState;
use crate::error::Result;
use crate::mvcc::delta_buffer::DeltaBuffer;
use crate::storage::maps::L2pMap;
use end_ndp::Target;

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
    let to = Target {
        dir,
        device,
        l2p,
        source,
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
                let keyed = pk_loaded.contains(table);
                let (n, last) = redo::redo(ts, &mut out.delta, *table, entries, keyed)?;
                out.max_lpn = out.max_lpn.max(last);
                out.versions += n;
            }
            WalRecord::EndNdp {
                txid,
                table,
                start,
                overflow,
                delta,
            } => {
                see(&mut out, txid);
                end_ndp::check_start(*lsn, *txid, *start, replay_start, &starts)?;
                if !committed.contains(txid) {
                    continue;
                }
                let Some(ts) = tables.get(table) else {
                    continue;
                };
                let at = (*lsn, *txid);
                let applied =
                    end_ndp::end_ndp(&to, ts, &mut out.delta, at, *start, *overflow, delta)?;
                out.overflow_logs += u64::from(applied.wrote_back);
                out.max_lpn = out.max_lpn.max(applied.last_lpn);
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
                let applied = end_ndp::gc(&to, ts, &mut out.delta, *lsn, *overflow, delta)?;
                out.overflow_logs += u64::from(applied.wrote_back);
                out.max_lpn = out.max_lpn.max(applied.last_lpn);
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
