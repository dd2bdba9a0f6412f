//! Commit: a transaction's new versions become the heads of their tuples
//! (DESIGN.md §3–4), logged as redo images with the commit record.
//!
//! ```text
//!  write set ─► stage (no lock held)        pages of the new versions under
//!                                           fresh LPNs, and their redo frames
//!            ─► install (checkpoint gate,   pages into the delta buffer, VID
//!               delta-buffer write lock)    heads moved, ΔVIDs; frames and the
//!                                           commit record appended to the WAL
//!            ─► WAL sync (group commit), no lock held
//! ```
//!
//! Only large write sets are staged: readers of every table wait while
//! the delta buffer is locked, so a bulk UPDATE must not build a
//! gigabyte of pages and log frames in there. A small write set (OLTP)
//! goes straight into the open page of its table, which it shares with
//! other commits; a staged one leaves its last page open for them.

use ndpdb_formats::page::PageBuf;
use ndpdb_formats::record::RecordHeader;
use ndpdb_formats::{Lpn, RecId, SqlState, TableId, TxId, Vid};
use ndpdb_link::VidEntry;
use ndpdb_wal::{Encoded, WalRecord};
use rustc_hash::FxHashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::db::{Engine, TableState};
use crate::error::{Error, Result};
use crate::mvcc::delta_buffer::DeltaPage;
use crate::ndp::validate::validate_at_commit;
use crate::ndp::NdpPart;
use crate::stats::EngineCounters;

/// One encoded version of a committing transaction.
pub(crate) struct PendingVersion {
    pub table: TableId,
    pub vid: Vid,
    pub record: Vec<u8>,
}

/// Write sets of at least this many versions are staged.
const STAGE_MIN_VERSIONS: usize = 256;
/// Redo bytes per WAL record.
const REDO_CHUNK_BYTES: usize = 1 << 20;

/// A table's versions on pages of their own.
struct StagedTable {
    ts: Arc<TableState>,
    /// Full pages, sealed.
    pages: Vec<(Lpn, DeltaPage)>,
    /// The page being filled.
    open: Option<(Lpn, PageBuf)>,
    heads: Vec<(Vid, RecId)>,
    /// Versions that replace another (updates, deletes): garbage to come.
    changes: u64,
}

/// A write set staged before the commit takes its locks.
struct Staged {
    tables: Vec<StagedTable>,
    redo: Encoded,
}

/// Versions of one table for one redo record.
struct RedoChunk {
    table: TableId,
    entries: Vec<(RecId, Vec<u8>)>,
    bytes: usize,
}

impl RedoChunk {
    fn new(table: TableId) -> RedoChunk {
        RedoChunk {
            table,
            entries: Vec::new(),
            bytes: 0,
        }
    }

    fn push(&mut self, rid: RecId, record: Vec<u8>) {
        self.bytes += record.len();
        self.entries.push((rid, record));
    }

    fn encode_into(self, txid: TxId, redo: &mut Encoded) {
        redo.push(&WalRecord::Redo {
            txid,
            table: self.table,
            entries: self.entries,
        });
    }
}

fn dropped_table() -> Error {
    Error::new(
        SqlState::UNDEFINED_TABLE,
        "a table written by this transaction was dropped",
    )
}

fn replaces_a_version(record: &[u8]) -> Result<bool> {
    Ok(!RecordHeader::parse(record)?.pred.is_null())
}

impl Engine {
    /// Places `versions` on new pages and encodes their redo records.
    fn stage(&self, txid: TxId, versions: Vec<PendingVersion>) -> Result<Staged> {
        let mut staged = Staged {
            tables: Vec::new(),
            redo: Encoded::default(),
        };
        let mut at: FxHashMap<TableId, usize> = FxHashMap::default();
        let mut chunk: Option<RedoChunk> = None;
        for v in versions {
            let i = match at.get(&v.table) {
                Some(i) => *i,
                None => {
                    let ts = self.tables.read().get(&v.table).cloned();
                    staged.tables.push(StagedTable {
                        ts: ts.ok_or_else(dropped_table)?,
                        pages: Vec::new(),
                        open: None,
                        heads: Vec::new(),
                        changes: 0,
                    });
                    at.insert(v.table, staged.tables.len() - 1);
                    staged.tables.len() - 1
                }
            };
            let st = &mut staged.tables[i];
            st.changes += replaces_a_version(&v.record)? as u64;
            let on_last = match &mut st.open {
                Some((lpn, page)) => page.append(&v.record)?.map(|slot| RecId::new(*lpn, slot)),
                None => None,
            };
            let rid = match on_last {
                Some(rid) => rid,
                None => {
                    let lpn = self.alloc_lpn();
                    let mut page = PageBuf::new(v.table, lpn, &st.ts.types);
                    let slot = page.append(&v.record)?.ok_or_else(|| {
                        Error::new(
                            SqlState::PROGRAM_LIMIT_EXCEEDED,
                            format!("row is too big: size {}", v.record.len()),
                        )
                    })?;
                    if let Some((full, done)) = st.open.replace((lpn, page)) {
                        st.pages.push((full, DeltaPage::sealed(done)));
                    }
                    RecId::new(lpn, slot)
                }
            };
            st.heads.push((v.vid, rid));
            let full = chunk
                .as_ref()
                .is_none_or(|c| c.table != v.table || c.bytes > REDO_CHUNK_BYTES);
            if full {
                if let Some(c) = chunk.take() {
                    c.encode_into(txid, &mut staged.redo);
                }
            }
            chunk
                .get_or_insert_with(|| RedoChunk::new(v.table))
                .push(rid, v.record);
        }
        if let Some(c) = chunk {
            c.encode_into(txid, &mut staged.redo);
        }
        for st in &mut staged.tables {
            if let Some((lpn, page)) = st.open.take() {
                st.pages.push((lpn, DeltaPage::Open(page)));
            }
        }
        Ok(staged)
    }

    /// Places a committing transaction's versions, moves the VID heads and
    /// logs them; returns once the commit record is durable.
    /// `heads_applied`: the update jobs' heads were set when the
    /// transaction became violable (`crate::ndp::lock_violation`); they
    /// are logged and passed to the device here.
    pub(crate) fn commit_versions(
        &self,
        txid: TxId,
        versions: Vec<PendingVersion>,
        ndp: &[NdpPart],
        heads_applied: bool,
    ) -> Result<()> {
        self.check_ok()?;
        if versions.is_empty() && ndp.is_empty() {
            return Ok(());
        }
        let (staged, versions) = if versions.len() >= STAGE_MIN_VERSIONS {
            (Some(self.stage(txid, versions)?), Vec::new())
        } else {
            (None, versions)
        };
        let gate = self.checkpoint_gate.read();
        let lsn = {
            let mut delta = self.delta.write();
            let tables = self.tables.read();
            let staged_tables = staged.iter().flat_map(|s| s.tables.iter());
            let written = versions
                .iter()
                .map(|v| v.table)
                .chain(ndp.iter().map(|p| p.table))
                .chain(staged_tables.map(|t| t.ts.id));
            for t in written {
                if !tables.contains_key(&t) {
                    return Err(dropped_table());
                }
            }
            let mut records: Vec<WalRecord> = Vec::new();
            let mut wake_gc = false;
            // Update NDP: validate every ΔVID against the head (the job's
            // locks kept writers out since it ended, so this only fails on
            // a corrupt state), then log and apply — before the host
            // versions, whose predecessors may be the NDP versions.
            if !heads_applied {
                if let Err(e) = validate_at_commit(ndp, |t| tables.get(&t).map(|ts| &**ts)) {
                    EngineCounters::inc(&self.counters.ndp_validation_failures);
                    return Err(e);
                }
            }
            for part in ndp {
                let ts = &tables[&part.table];
                wake_gc |= self.count_changes(ts, part.result.delta.vids.len() as u64);
                for d in &part.result.delta.vids {
                    if !heads_applied {
                        ts.vids.set(d.vid, d.new);
                    }
                    delta.push_delta_vid(VidEntry {
                        table: part.table,
                        vid: d.vid,
                        head: d.new,
                    });
                }
                if let (true, Some(start)) = (part.logged, part.start_ndp) {
                    records.push(WalRecord::EndNdp {
                        txid,
                        table: part.table,
                        start: Some(start),
                        overflow: part.overflow.map(|o| (o.bytes, o.crc)),
                        delta: part.result.delta.clone(),
                    });
                }
            }
            let mut encoded = Encoded::of(&records);
            records.clear();
            if let Some(staged) = staged {
                for st in staged.tables {
                    let table = st.ts.id;
                    wake_gc |= st.changes > 0 && self.count_changes(&st.ts, st.changes);
                    delta.install(table, st.pages);
                    st.ts.vids.set_many(&st.heads);
                    for (vid, head) in st.heads {
                        delta.push_delta_vid(VidEntry { table, vid, head });
                    }
                }
                encoded.extend(staged.redo);
            }
            let mut chunk_bytes = 0usize;
            for v in versions {
                let ts = &tables[&v.table];
                // An insert leaves no garbage behind; an update or delete does.
                if replaces_a_version(&v.record)? {
                    wake_gc |= self.count_changes(ts, 1);
                }
                let rid = delta.append(v.table, &ts.types, &v.record, || self.alloc_lpn())?;
                ts.vids.set(v.vid, rid);
                delta.push_delta_vid(VidEntry {
                    table: v.table,
                    vid: v.vid,
                    head: rid,
                });
                let start_new = match records.last() {
                    Some(WalRecord::Redo { table, .. }) => {
                        *table != v.table || chunk_bytes > REDO_CHUNK_BYTES
                    }
                    _ => true,
                };
                if start_new {
                    records.push(WalRecord::Redo {
                        txid,
                        table: v.table,
                        entries: Vec::new(),
                    });
                    chunk_bytes = 0;
                }
                chunk_bytes += v.record.len();
                if let Some(WalRecord::Redo { entries, .. }) = records.last_mut() {
                    entries.push((rid, v.record));
                }
            }
            records.push(WalRecord::Commit { txid });
            encoded.extend(Encoded::of(&records));
            if wake_gc {
                // Woken after this transaction ends (`after_commit`).
                self.gc_due.store(true, Ordering::Release);
            }
            self.wal.append_encoded(encoded)
        };
        drop(gate);
        if let Err(e) = self.wal.sync(lsn) {
            // The versions are in the delta buffer but not durable: stop.
            self.fail();
            return Err(e.into());
        }
        Ok(())
    }
}
