//! Base backups and media recovery (update NDP §6.2, DESIGN.md §8): a
//! lost device store rebuilt from a backup, the host's WAL and the
//! overflow logs of the jobs since.
//!
//! ```text
//!  backup (online)                                BACKUP/
//!   pin free space: no released page is rewritten    backup_label  written last
//!   checkpoint C  (gate held: commits wait)           catalog.bin   as at C
//!     device maps at C dumped, catalog copied         maps.bin      L2P + VID maps at C
//!     WAL kept from C on                              pages.dat     every page mapped at C
//!   copy every page mapped at C (READ_PAGES)
//!   DIR/backup.horizon = C; label; WAL and overflow logs before C removed
//!
//!  restore (DIR/device lost)
//!   fresh device: pages.dat written back, maps.bin merged
//!   WAL replayed from C through every later checkpoint (crate::recovery):
//!     redo → delta buffer; End-NDP and Gc → their overflow logs' pages
//!     written back, then mapped
//!   checkpoint → an ordinary database again
//! ```
//!
//! **Why the copy is consistent while work goes on.** A device page is
//! never rewritten while a map may refer to it; a page mapped at C is
//! rewritten only after it is released (by GC or a re-flush) *and* becomes
//! free — and no released page becomes free while a backup runs
//! (`SpaceMap::pin`). So every page the backup reads still holds what it
//! held at C, though jobs, flushes and GC keep writing other pages.
//!
//! **What a restore needs after C.** Host versions are in the WAL's redo
//! records. Pages the device wrote — update jobs, GC runs — are not: for
//! those the WAL holds only ΔMaps. So from the first backup on, the
//! database keeps WAL segments from the newest backup's checkpoint, and
//! the overflow logs committed after it: while a backup is kept, every
//! update job writes one (as `ndp_logging = extended` does, whatever the
//! session asked for) and so does every GC run. A restore stops with
//! 55000, naming the transaction, at an update job logged without one
//! (a WAL written before the backup horizon existed).

mod files;
mod restore;

pub use files::BackupLabel;
pub use restore::DeviceConnection;

use std::path::Path;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use ndpdb_formats::{Lsn, Ppn, SqlState};

use crate::db::{Database, Engine};
use crate::error::{Error, Result};

pub(crate) use files::read_horizon;

/// Pages per READ_PAGES while copying.
const BATCH_PAGES: usize = 128;

/// What a backup copied.
#[derive(Clone, Debug)]
pub struct BackupReport {
    pub label: BackupLabel,
    pub tables: usize,
    /// Bytes written to the backup directory.
    pub bytes: u64,
    /// Time commits waited for the checkpoint, and the whole backup.
    pub checkpoint_secs: f64,
    pub secs: f64,
}

/// Undoes what a backup changed in the running engine if it stops early.
struct Pinned<'a> {
    inner: &'a Engine,
    /// WAL retention before this backup (restored unless it completes).
    retained_before: Option<Option<Lsn>>,
}

impl Drop for Pinned<'_> {
    fn drop(&mut self) {
        self.inner.space.unpin();
        if let Some(r) = self.retained_before {
            self.inner.wal.retain_from(r);
        }
    }
}

impl Database {
    /// Takes a base backup into `to` (a new or empty directory) while the
    /// database stays in use (see the module docs). `progress(done,
    /// total)` is called as pages are copied.
    pub fn backup(&self, to: &Path, progress: &dyn Fn(u64, u64)) -> Result<BackupReport> {
        let inner = &*self.inner;
        inner.check_ok()?;
        let _one = inner.backup_running.lock();
        let started = Instant::now();
        prepare_target(to)?;
        inner.space.pin();
        let mut pinned = Pinned {
            inner,
            retained_before: None,
        };
        // The checkpoint, and what storage held at it.
        inner.flush()?;
        let (logged, next_txid, maps, covered) = {
            let _gate = inner.checkpoint_gate.write();
            let logged = inner.checkpoint_holding_gate()?;
            let at = logged.at;
            let maps = files::BackupMaps {
                l2p: inner.device.dump_l2p()?,
                vids: inner
                    .all_tables()
                    .iter()
                    .map(|ts| Ok((ts.id, inner.device.dump_vid_map(ts.id)?)))
                    .collect::<Result<Vec<_>>>()?,
            };
            inner.copy_catalog(&to.join(files::CATALOG))?;
            // From here on the WAL from C must stay, whatever happens to
            // the older backup's.
            let before = inner.wal.retained_from();
            pinned.retained_before = Some(before);
            inner
                .wal
                .retain_from(Some(before.map_or(at, |b| b.min(at))));
            let covered = inner.overflow_retained.lock().clone();
            (logged, inner.txm.next_txid(), maps, covered)
        };
        inner.wal.remove_obsolete()?;
        inner.save_pk_indexes(logged.next_txid, crate::storage::pk_index::Pace::DiskSpeed);
        let at = logged.at;
        let checkpoint_secs = started.elapsed().as_secs_f64();
        let maps_file = maps.write(to)?;
        let mut ppns: Vec<Ppn> = maps.l2p.iter().map(|(_, p)| Ppn(p)).collect();
        ppns.sort_unstable();
        ppns.dedup();
        let total = ppns.len() as u64;
        let mut pages = files::PagesWriter::create(to, total)?;
        let mut done = 0u64;
        progress(0, total);
        for batch in ppns.chunks(BATCH_PAGES) {
            inner.check_ok()?;
            let images = inner.device.read_pages(batch.to_vec())?;
            for (ppn, image) in batch.iter().zip(&images) {
                pages.push(*ppn, image)?;
            }
            done += batch.len() as u64;
            progress(done, total);
        }
        let pages_file = pages.finish()?;
        let label = BackupLabel {
            checkpoint: at,
            next_txid,
            pages: total,
            pages_file,
            maps_file,
            finished_at: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        };
        // The horizon first: a label without it would name log that the
        // next checkpoint may remove.
        files::write_horizon(&inner.dir, at)?;
        inner.wal.retain_from(Some(at));
        pinned.retained_before = None;
        label.write(to)?;
        drop(pinned);
        // What only older backups needed.
        inner.wal.remove_before(at)?;
        inner
            .overflow_retained
            .lock()
            .retain(|s| !covered.contains(s));
        for start in covered {
            crate::ndp::overflow_log::remove(&inner.dir, start)?;
        }
        let bytes = pages_file.0 + maps_file.0 + dir_bytes_of(to, &[files::CATALOG, files::LABEL]);
        Ok(BackupReport {
            tables: maps.vids.len(),
            label,
            bytes,
            checkpoint_secs,
            secs: started.elapsed().as_secs_f64(),
        })
    }

    /// The checkpoint of the newest backup (WAL and overflow logs are
    /// kept from there on), if any backup was taken.
    pub fn backup_horizon(&self) -> Option<Lsn> {
        self.inner.wal.retained_from()
    }
}

/// `to` must be new or an empty directory.
fn prepare_target(to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).map_err(|e| files::io("create", to, e))?;
    let mut entries = std::fs::read_dir(to).map_err(|e| files::io("list", to, e))?;
    if entries.next().is_some() {
        return Err(Error::new(
            SqlState::DUPLICATE_FILE,
            format!(
                "backup directory \"{}\" exists but is not empty",
                to.display()
            ),
        ));
    }
    Ok(())
}

fn dir_bytes_of(dir: &Path, names: &[&str]) -> u64 {
    names
        .iter()
        .filter_map(|n| std::fs::metadata(dir.join(n)).ok())
        .map(|m| m.len())
        .sum()
}
