//! WAL record kinds and their encoding.

use ndpdb_formats::codec::{Reader, Writer};
use ndpdb_formats::delta_maps::{decode_pages, encode_pages, DeltaMaps};
use ndpdb_formats::{Error, Lpn, Lsn, Ppn, RecId, Result, TableId, TxId};

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
    /// An update-NDP call of `txid` started: its encoded invocation
    /// (DESIGN.md §8, basic NDP logging).
    StartNdp {
        txid: TxId,
        table: TableId,
        invocation: Vec<u8>,
    },
    /// The call's map deltas, logged with its transaction's commit. The
    /// pages are already durable on the device; recovery re-applies the
    /// deltas of committed transactions and ignores the rest. `start` is
    /// the LSN of the call's Start-NDP record (`None` in records written
    /// before End-NDP named it). `overflow`: with extended NDP logging,
    /// the size and CRC of the job's overflow log (named by `start`).
    EndNdp {
        txid: TxId,
        table: TableId,
        start: Option<Lsn>,
        overflow: Option<(u64, u32)>,
        delta: DeltaMaps,
    },
    /// A garbage-collection run on `table`, applied at once (it creates
    /// no version of its own, so it needs no commit record): its new
    /// pages, the heads it moved (to a copy, or NULL for a tuple gone for
    /// every snapshot) and the pages it freed, whose LPNs recovery unmaps.
    /// `overflow`: while a base backup is kept, the run's new pages went
    /// to an overflow log first, named by the run's Start-NDP LSN, of
    /// this size and CRC (a restore writes them back).
    Gc {
        table: TableId,
        overflow: Option<(Lsn, u64, u32)>,
        delta: DeltaMaps,
        freed: Vec<(Lpn, Ppn)>,
    },
}

const KIND_REDO: u8 = 1;
const KIND_COMMIT: u8 = 2;
const KIND_CHECKPOINT: u8 = 3;
const KIND_START_NDP: u8 = 4;
const KIND_END_NDP: u8 = 5;
const KIND_GC: u8 = 6;
/// End-NDP naming its Start-NDP record (kind 5 is End-NDP without it).
const KIND_END_NDP_AT: u8 = 7;
/// End-NDP naming its Start-NDP record and its overflow log.
const KIND_END_NDP_OVERFLOW: u8 = 8;
/// Gc naming the overflow log of its new pages.
const KIND_GC_OVERFLOW: u8 = 9;

impl WalRecord {
    /// About the size of [`WalRecord::encode`]'s output: exact for redo
    /// records (the large ones), a small guess for the rest.
    pub fn encoded_len_hint(&self) -> usize {
        match self {
            WalRecord::Redo { entries, .. } => {
                17 + entries.iter().map(|(_, b)| 12 + b.len()).sum::<usize>()
            }
            _ => 64,
        }
    }

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
            WalRecord::StartNdp {
                txid,
                table,
                invocation,
            } => {
                w.u8(KIND_START_NDP)
                    .u64(txid.0)
                    .u32(table.0)
                    .bytes(invocation);
            }
            WalRecord::EndNdp {
                txid,
                table,
                start,
                overflow,
                delta,
            } => {
                match (start, overflow) {
                    (Some(lsn), Some((bytes, crc))) => w
                        .u8(KIND_END_NDP_OVERFLOW)
                        .u64(txid.0)
                        .u32(table.0)
                        .u64(lsn.0)
                        .u64(*bytes)
                        .u32(*crc),
                    (Some(lsn), None) => w.u8(KIND_END_NDP_AT).u64(txid.0).u32(table.0).u64(lsn.0),
                    // An overflow log is named by its Start-NDP LSN.
                    (None, _) => w.u8(KIND_END_NDP).u64(txid.0).u32(table.0),
                };
                delta.encode(w);
            }
            WalRecord::Gc {
                table,
                overflow,
                delta,
                freed,
            } => {
                match overflow {
                    Some((start, bytes, crc)) => w
                        .u8(KIND_GC_OVERFLOW)
                        .u32(table.0)
                        .u64(start.0)
                        .u64(*bytes)
                        .u32(*crc),
                    None => w.u8(KIND_GC).u32(table.0),
                };
                delta.encode(w);
                encode_pages(freed, w);
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
            KIND_START_NDP => WalRecord::StartNdp {
                txid: TxId(r.u64()?),
                table: TableId(r.u32()?),
                invocation: r.bytes()?.to_vec(),
            },
            KIND_END_NDP => WalRecord::EndNdp {
                txid: TxId(r.u64()?),
                table: TableId(r.u32()?),
                start: None,
                overflow: None,
                delta: DeltaMaps::decode(r)?,
            },
            KIND_END_NDP_AT => WalRecord::EndNdp {
                txid: TxId(r.u64()?),
                table: TableId(r.u32()?),
                start: Some(Lsn(r.u64()?)),
                overflow: None,
                delta: DeltaMaps::decode(r)?,
            },
            KIND_END_NDP_OVERFLOW => WalRecord::EndNdp {
                txid: TxId(r.u64()?),
                table: TableId(r.u32()?),
                start: Some(Lsn(r.u64()?)),
                overflow: Some((r.u64()?, r.u32()?)),
                delta: DeltaMaps::decode(r)?,
            },
            KIND_GC => WalRecord::Gc {
                table: TableId(r.u32()?),
                overflow: None,
                delta: DeltaMaps::decode(r)?,
                freed: decode_pages(r)?,
            },
            KIND_GC_OVERFLOW => WalRecord::Gc {
                table: TableId(r.u32()?),
                overflow: Some((Lsn(r.u64()?), r.u64()?, r.u32()?)),
                delta: DeltaMaps::decode(r)?,
                freed: decode_pages(r)?,
            },
            k => return Err(Error::corrupted(format!("unknown WAL record kind {k}"))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndpdb_formats::delta_maps::DeltaVid;
    use ndpdb_formats::Vid;

    #[test]
    fn a_redo_record_is_exactly_as_long_as_its_hint() {
        let rec = WalRecord::Redo {
            txid: TxId(3),
            table: TableId(1),
            entries: vec![
                (RecId::new(Lpn(2), 0), vec![7; 100]),
                (RecId::new(Lpn(2), 1), vec![]),
            ],
        };
        let mut w = Writer::new();
        rec.encode(&mut w);
        assert_eq!(w.into_inner().len(), rec.encoded_len_hint());
    }

    #[test]
    fn ndp_records_round_trip_and_reject_truncation() {
        let recs = [
            WalRecord::StartNdp {
                txid: TxId(7),
                table: TableId(2),
                invocation: vec![1, 2, 3],
            },
            WalRecord::EndNdp {
                txid: TxId(7),
                table: TableId(2),
                start: Some(Lsn(4096)),
                overflow: None,
                delta: DeltaMaps {
                    l2p: vec![(Lpn(40), Ppn(41))],
                    vids: vec![DeltaVid {
                        vid: Vid(5),
                        pred: RecId::new(Lpn(1), 3),
                        new: RecId::new(Lpn(40), 0),
                    }],
                },
            },
            WalRecord::EndNdp {
                txid: TxId(8),
                table: TableId(2),
                start: None,
                overflow: None,
                delta: DeltaMaps::default(),
            },
            WalRecord::EndNdp {
                txid: TxId(9),
                table: TableId(3),
                start: Some(Lsn(777)),
                overflow: Some((3 * 8192 + 40, 0xdead_beef)),
                delta: DeltaMaps {
                    l2p: vec![(Lpn(4), Ppn(5))],
                    vids: vec![],
                },
            },
            WalRecord::Gc {
                table: TableId(2),
                overflow: Some((Lsn(99), 8192 + 36, 7)),
                delta: DeltaMaps {
                    l2p: vec![(Lpn(50), Ppn(3))],
                    vids: vec![],
                },
                freed: vec![],
            },
            WalRecord::Gc {
                table: TableId(2),
                overflow: None,
                delta: DeltaMaps {
                    l2p: vec![(Lpn(50), Ppn(3))],
                    vids: vec![DeltaVid {
                        vid: Vid(6),
                        pred: RecId::new(Lpn(9), 1),
                        new: RecId::NULL,
                    }],
                },
                freed: vec![(Lpn(9), Ppn(12))],
            },
        ];
        for rec in recs {
            let mut w = Writer::new();
            rec.encode(&mut w);
            let bytes = w.into_inner();
            assert_eq!(WalRecord::decode(&mut Reader::new(&bytes)).unwrap(), rec);
            for cut in 0..bytes.len() {
                assert!(WalRecord::decode(&mut Reader::new(&bytes[..cut])).is_err());
            }
        }
    }
}
