//! One row changed by update NDP (update NDP §4.1.3–§4.1.6): lock and
//! certify (certify.rs), then the new version — the row with its SET
//! expressions applied, or a tombstone — appended to the PE's page
//! (unloader.rs), and its ΔVID entry.
//!
//! ```text
//!  visible, qualifying row (VID, read) ─► lock_current ─► head it replaces
//!    new version {creator: invoking TxId, pred: head, vid} ─► PageWriter
//!    ΔVID += (vid, pred: head, new RecId); rows += 1
//! ```

use std::sync::atomic::AtomicBool;

use ndpdb_formats::codec::Writer;
use ndpdb_formats::delta_maps::DeltaVid;
use ndpdb_formats::record::{encode_record, RecordHeader, FLAG_TOMBSTONE};
use ndpdb_formats::{Error, RecId, SqlState, TableId, Value, Vid};

use super::certify::{lock_current, HeadCheck};
use super::unloader::PageWriter;
use super::{ModifyCtx, ModifyPart};

/// Everything a PE needs to modify one row it found visible and qualifying.
pub(crate) struct RowChange<'r> {
    pub vid: Vid,
    /// The visible version (what the new one replaces).
    pub read: RecId,
    /// The current head, re-read after locking, and visibility.
    pub check: HeadCheck<'r>,
    pub row: &'r [Value],
    /// `None` = delete (tombstone).
    pub sets: Option<&'r [(u32, ndpdb_formats::expr::Program)]>,
    /// Columns that may not become NULL.
    pub not_null: &'r [u32],
}

/// Lock → certify → new version (see the module docs).
#[allow(clippy::too_many_arguments)]
pub(crate) fn modify_row(
    ctx: &ModifyCtx<'_>,
    writer: &mut PageWriter<'_>,
    part: &mut ModifyPart,
    table: TableId,
    types: &[ndpdb_formats::DataType],
    creator: ndpdb_formats::TxId,
    params: &[Value],
    change: RowChange<'_>,
    cancel: &AtomicBool,
) -> Result<(), Error> {
    let Some(head) = lock_current(
        ctx,
        part,
        table,
        change.vid,
        change.read,
        &change.check,
        cancel,
    )?
    else {
        return Ok(());
    };
    let (row, flags) = match change.sets {
        Some(sets) => {
            let mut new_row = change.row.to_vec();
            for (c, p) in sets {
                new_row[*c as usize] = p.eval(change.row, params)?;
            }
            if let Some(c) = change
                .not_null
                .iter()
                .find(|c| new_row[**c as usize].is_null())
            {
                return Err(Error::sql(
                    SqlState::NOT_NULL_VIOLATION,
                    format!(
                        "null value in column {} violates not-null constraint",
                        c + 1
                    ),
                ));
            }
            (new_row, 0)
        }
        None => (change.row.to_vec(), FLAG_TOMBSTONE),
    };
    let header = RecordHeader {
        creator,
        pred: head,
        vid: change.vid,
        flags,
    };
    let mut w = Writer::new();
    encode_record(&header, types, &row, &mut w)?;
    let new = writer.append(w.as_slice(), &mut part.written, cancel)?;
    part.delta_vids.push(DeltaVid {
        vid: change.vid,
        pred: head,
        new,
    });
    part.rows += 1;
    Ok(())
}
