//! WAL record kinds and their encoding.

use ndpdb_formats::codec::{Reader, Writer};
use ndpdb_formats::{Error, RecId, Result, TableId, TxId};

/// What a checkpoint records: everything logged before it is in durable
/// device storage (pages flushed, maps merged).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointInfo {
    /// Every TxId in storage is below this.
    pub next_txid: TxId,
}

#[derive(Clone, Debug, PartialEq)]
pub enum WalRecord {
    /// Physical redo: full version records (header + body) placed at their
    /// RecIds in the delta buffer by transaction `txid`.
    Redo {
        txid: TxId,
        table: TableId,
        entries: Vec<(RecId, Vec<u8>)>,
    },
    Commit {
        txid: TxId,
    },
    Checkpoint(CheckpointInfo),
}

const KIND_REDO: u8 = 1;
const KIND_COMMIT: u8 = 2;
const KIND_CHECKPOINT: u8 = 3;

impl WalRecord {
    pub fn encode(&self, w: &mut Writer) {
        match self {
            WalRecord::Redo {
                txid,
                table,
                entries,
            } => {
                w.u8(KIND_REDO)
                    .u64(txid.0)
                    .u32(table.0)
                    .u32(entries.len() as u32);
                for (rid, bytes) in entries {
                    w.u64(rid.raw()).bytes(bytes);
                }
            }
            WalRecord::Commit { txid } => {
                w.u8(KIND_COMMIT).u64(txid.0);
            }
            WalRecord::Checkpoint(c) => {
                w.u8(KIND_CHECKPOINT).u64(c.next_txid.0);
            }
        }
    }

    pub fn decode(r: &mut Reader<'_>) -> Result<WalRecord> {
        Ok(match r.u8()? {
            KIND_REDO => {
                let txid = TxId(r.u64()?);
                let table = TableId(r.u32()?);
                let n = r.count(12)?;
                let mut entries = Vec::with_capacity(n);
                for _ in 0..n {
                    let rid = RecId::from_raw(r.u64()?);
                    entries.push((rid, r.bytes()?.to_vec()));
                }
                WalRecord::Redo {
                    txid,
                    table,
                    entries,
                }
            }
            KIND_COMMIT => WalRecord::Commit {
                txid: TxId(r.u64()?),
            },
            KIND_CHECKPOINT => WalRecord::Checkpoint(CheckpointInfo {
                next_txid: TxId(r.u64()?),
            }),
            k => return Err(Error::corrupted(format!("unknown WAL record kind {k}"))),
        })
    }
}
