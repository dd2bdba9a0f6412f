//! Redo replay: the versions a committed transaction wrote on the host,
//! logged as their record images, put back into the delta buffer at
//! their RecIds, with the VID heads (and PK keys) they set.
//!
//! ```text
//!  Redo (tx T, table, [(RecId, record)])   T committed? no → skipped
//!    record → delta buffer page at RecId
//!    VID head → RecId (host map + the ΔVID list the next flush merges)
//!    PK index loaded from its checkpoint file? → the key added
//! ```

use ndpdb_formats::record::{RecordHeader, RecordView};
use ndpdb_formats::{Lpn, RecId, SqlState, TableId, Vid};
use ndpdb_link::VidEntry;

use crate::db::TableState;
use crate::error::{Error, Result};
use crate::mvcc::delta_buffer::DeltaBuffer;

/// The versions of one committed Redo record on `ts`; returns how many
/// and the largest LPN they lie on. `keyed`: the table's PK index was
/// loaded, so their keys go into it.
pub(crate) fn redo(
    ts: &TableState,
    buffer: &mut DeltaBuffer,
    table: TableId,
    entries: &[(RecId, Vec<u8>)],
    keyed: bool,
) -> Result<(u64, Option<Lpn>)> {
    let mut max_lpn = None;
    for (rid, bytes) in entries {
        let h = RecordHeader::parse(bytes)?;
        buffer.place(table, &ts.types, *rid, bytes)?;
        replay_head(ts, buffer, h.vid, *rid)?;
        if keyed && !h.is_tombstone() {
            replay_key(ts, h.vid, bytes)?;
        }
        max_lpn = max_lpn.max(Some(rid.lpn()));
    }
    Ok((entries.len() as u64, max_lpn))
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
pub(crate) fn replay_head(
    ts: &TableState,
    delta: &mut DeltaBuffer,
    vid: Vid,
    rid: RecId,
) -> Result<()> {
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
