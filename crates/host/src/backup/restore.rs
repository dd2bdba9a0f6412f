//! Media recovery: a lost device store rebuilt from a base backup, the
//! host's WAL and the overflow logs (see the module docs of
//! `crate::backup`).

use std::path::Path;

use ndpdb_formats::{SqlState, TableId, Vid};
use std::sync::Arc;

use ndpdb_link::{DeviceClient, VidEntry};
use ndpdb_slt::SharedLockTable;

use super::files::{self, BackupLabel, BackupMaps, PagesReader};
use crate::config::Config;
use crate::db::Database;
use crate::error::{Error, Result};

/// Pages per WRITE_PAGES, map entries per MERGE_MAPS while rebuilding.
const BATCH_PAGES: usize = 64;
const BATCH_ENTRIES: usize = 1 << 20;

/// A device to restore onto: its client and the shared lock table it
/// shares with the host.
pub type DeviceConnection = (DeviceClient, Option<Arc<SharedLockTable>>);

impl Database {
    /// Rebuilds a lost device store of the database in `dir` from the
    /// backup in `backup` on the empty device `connect` attaches to,
    /// replays the WAL from the backup's checkpoint with the overflow logs
    /// since, and opens the database; `progress(done, total)` follows the
    /// backup's pages as they are written back. A device whose store is
    /// not empty is refused (55000).
    pub fn restore_on(
        dir: &Path,
        backup: &Path,
        config: Config,
        connect: &mut dyn FnMut(&Config) -> Result<DeviceConnection>,
        progress: &dyn Fn(u64, u64),
    ) -> Result<Database> {
        let label = BackupLabel::read(backup)?;
        let segment = dir
            .join("wal")
            .join(format!("{:020}.seg", label.checkpoint.0));
        if !segment.exists() {
            return Err(Error::new(
                SqlState::UNDEFINED_FILE,
                format!(
                    "cannot restore: WAL segment \"{}\" (the backup's checkpoint) is missing",
                    segment.display()
                ),
            ));
        }
        let maps = BackupMaps::read(backup, &label)?;
        if !dir.join(files::CATALOG).exists() {
            let from = backup.join(files::CATALOG);
            if from.exists() {
                std::fs::copy(&from, dir.join(files::CATALOG))
                    .map_err(|e| files::io("copy", &from, e))?;
            }
        }
        let (device, slt) = connect(&config)?;
        if device.info()?.page_count > 0 {
            return Err(Error::new(
                SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
                "the device's store is not empty: a restore rebuilds a lost device store",
            ));
        }
        rebuild_device(&device, backup, &label, &maps, progress)?;
        Database::open_recovering(dir, config, device, slt, Some(label.checkpoint))
    }
}

/// The device as it was at the backup's checkpoint: its pages where they
/// were, its maps merged (durably).
fn rebuild_device(
    device: &DeviceClient,
    backup: &Path,
    label: &BackupLabel,
    maps: &BackupMaps,
    progress: &dyn Fn(u64, u64),
) -> Result<()> {
    let mut pages = PagesReader::open(backup, label)?;
    let mut done = 0u64;
    progress(0, label.pages);
    loop {
        let batch = pages.next_batch(BATCH_PAGES)?;
        if batch.is_empty() {
            break;
        }
        let images: Vec<(ndpdb_formats::Ppn, &[u8])> =
            batch.iter().map(|(p, b)| (*p, &b[..])).collect();
        device.write_page_images(&images)?;
        done += batch.len() as u64;
        progress(done, label.pages);
    }
    pages.finish()?;
    device.sync()?;
    let l2p: Vec<_> = maps
        .l2p
        .iter()
        .map(|(l, p)| (ndpdb_formats::Lpn(l), ndpdb_formats::Ppn(p)))
        .collect();
    for chunk in l2p.chunks(BATCH_ENTRIES) {
        device.merge_maps(chunk.to_vec(), Vec::new())?;
    }
    for (table, runs) in &maps.vids {
        let entries: Vec<VidEntry> = runs
            .iter()
            .map(|(v, r)| VidEntry {
                table: TableId(table.0),
                vid: Vid(v),
                head: ndpdb_formats::RecId::from_raw(r),
            })
            .collect();
        for chunk in entries.chunks(BATCH_ENTRIES) {
            device.merge_maps(Vec::new(), chunk.to_vec())?;
        }
    }
    Ok(())
}
