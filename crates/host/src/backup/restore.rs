//! Media recovery: a lost device store rebuilt from a base backup, the
//! host's WAL and the overflow logs (see the module docs of
//! `crate::backup`).

use std::path::Path;

use ndpdb_formats::{SqlState, TableId, Vid};
use ndpdb_link::{DeviceClient, VidEntry};

use super::files::{self, BackupLabel, BackupMaps, PagesReader};
use crate::config::Config;
use crate::database::Database;
use crate::error::{Error, Result};

/// Pages per WRITE_PAGES, map entries per MERGE_MAPS while rebuilding.
const BATCH_PAGES: usize = 64;
const BATCH_ENTRIES: usize = 1 << 20;

impl Database {
    /// Rebuilds the lost device store of the database in `dir` (its
    /// `device/` folder gone) from the backup in `backup`, replays the WAL
    /// from the backup's checkpoint with the overflow logs since, and
    /// opens the database. On failure the device folder it began is
    /// removed again, so the restore can be retried.
    pub fn restore(dir: &Path, backup: &Path, config: Config) -> Result<Database> {
        Database::restore_with_progress(dir, backup, config, &|_, _| {})
    }

    /// [`Database::restore`], calling `progress(done, total)` as the
    /// backup's pages are written back.
    pub fn restore_with_progress(
        dir: &Path,
        backup: &Path,
        config: Config,
        progress: &dyn Fn(u64, u64),
    ) -> Result<Database> {
        let label = BackupLabel::read(backup)?;
        let device_dir = dir.join("device");
        if std::fs::read_dir(&device_dir).is_ok_and(|mut d| d.next().is_some()) {
            return Err(Error::new(
                SqlState("55000"),
                format!(
                    "\"{}\" exists: a restore rebuilds a lost device store; move it away first",
                    device_dir.display()
                ),
            ));
        }
        let segment = dir
            .join("wal")
            .join(format!("{:020}.seg", label.checkpoint.0));
        if !segment.exists() {
            return Err(Error::new(
                SqlState("58P01"),
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
        let result = (|| {
            let (device, slt) = Database::embedded_device(dir, &config)?;
            rebuild_device(&device, backup, &label, &maps, progress)?;
            Database::open_recovering(dir, config, device, slt, Some(label.checkpoint))
        })();
        if result.is_err() {
            let _ = std::fs::remove_dir_all(&device_dir);
        }
        result
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
