//! A small device to test the NDP core on: one table of one INT column,
//! version chains written to real pages in a real page store, the device
//! maps set by hand, and snapshots that see some creators and not others.
//!
//! ```text
//!  snapshot(): txid 100, xmin 10, xmax 100, in flight {50}
//!    sees creators < 10, 10 … 99 except 50, and 100 (its own)
//! ```

use std::sync::Arc;

use ndpdb_formats::codec::Writer;
use ndpdb_formats::page::{PageBuf, PageRef};
use ndpdb_formats::record::{encode_record, RecordHeader, FLAG_TOMBSTONE};
use ndpdb_formats::visibility::Snapshot;
use ndpdb_formats::{DataType, Lpn, Ppn, RecId, TableId, TxId, Value, Vid};
use ndpdb_link::ndp::{Invocation, NdpOp};
use ndpdb_link::{NvmProfile, VidEntry};

use crate::core::Core;
use crate::maps::MapStore;
use crate::store::PageStore;

pub const TABLE: TableId = TableId(1);
pub const TYPES: [DataType; 1] = [DataType::Int];
/// The reading transaction of [`snapshot`].
pub const READER: TxId = TxId(100);
/// A transaction running when [`snapshot`] was taken.
pub const RUNNING: TxId = TxId(50);

/// The snapshot of [`READER`] (see the module docs).
pub fn snapshot() -> Snapshot {
    Snapshot {
        txid: READER,
        xmin: TxId(10),
        xmax: TxId(100),
        in_flight: vec![RUNNING],
    }
}

/// A snapshot taken before every creator from 10 on.
pub fn old_snapshot() -> Snapshot {
    Snapshot {
        txid: TxId(9),
        xmin: TxId(9),
        xmax: TxId(9),
        in_flight: Vec::new(),
    }
}

/// One version to put on a page.
#[derive(Clone, Copy)]
pub struct V {
    pub vid: u64,
    pub creator: u64,
    pub pred: RecId,
    pub value: i32,
    pub tombstone: bool,
}

/// A live version of `vid` with `value`, by `creator`, after `pred`.
pub fn v(vid: u64, creator: u64, pred: RecId, value: i32) -> V {
    V {
        vid,
        creator,
        pred,
        value,
        tombstone: false,
    }
}

/// A tombstone of `vid` by `creator` after `pred`.
pub fn tomb(vid: u64, creator: u64, pred: RecId) -> V {
    V {
        tombstone: true,
        ..v(vid, creator, pred, 0)
    }
}

/// The bytes of a version record.
pub fn record(v: V) -> Vec<u8> {
    let header = RecordHeader {
        creator: TxId(v.creator),
        pred: v.pred,
        vid: Vid(v.vid),
        flags: if v.tombstone { FLAG_TOMBSTONE } else { 0 },
    };
    let mut w = Writer::new();
    encode_record(&header, &TYPES, &[Value::Int(v.value)], &mut w).unwrap();
    w.into_inner()
}

/// A sealed page of the table at `lpn` holding `versions` in order.
pub fn page(lpn: u64, versions: &[V]) -> Vec<u8> {
    let mut page = PageBuf::new(TABLE, Lpn(lpn), &TYPES);
    for ver in versions {
        page.append(&record(*ver)).unwrap().unwrap();
    }
    page.seal();
    page.as_bytes().to_vec()
}

/// The value of the version at slot `slot` of `bytes`, and its header.
pub fn read_version(bytes: &[u8], slot: u16) -> (RecordHeader, Value) {
    let view = PageRef::parse(bytes).unwrap();
    let header = view.header(slot).unwrap().unwrap();
    let mut row = Vec::new();
    view.decode_row_into(slot, None, &mut row).unwrap();
    (header, row[0].clone())
}

/// A device with an empty store in a folder of its own.
pub struct Device {
    pub core: Arc<Core>,
    next_ppn: u64,
    _dir: tempfile::TempDir,
}

impl Device {
    pub fn new() -> Device {
        let dir = tempfile::tempdir().unwrap();
        let store = PageStore::open(&dir.path().join("pages.dat"), NvmProfile::default()).unwrap();
        let (map_store, maps) = MapStore::open(dir.path()).unwrap();
        Device {
            core: Arc::new(Core::new(store, map_store, maps)),
            next_ppn: 0,
            _dir: dir,
        }
    }

    /// Writes a page of `versions` at `lpn` to the next PPN, maps it, and
    /// returns the RecIds of the versions.
    pub fn put(&mut self, lpn: u64, versions: &[V]) -> Vec<RecId> {
        let ppn = Ppn(self.next_ppn);
        self.next_ppn += 1;
        self.core.store.write(ppn, &page(lpn, versions)).unwrap();
        self.core.maps.write().apply_merge(&[(Lpn(lpn), ppn)], &[]);
        (0..versions.len() as u16)
            .map(|s| RecId::new(Lpn(lpn), s))
            .collect()
    }

    /// Points the device VID map's entry of `vid` at `head`.
    pub fn head(&self, vid: u64, head: RecId) {
        let entry = VidEntry {
            table: TABLE,
            vid: Vid(vid),
            head,
        };
        self.core.maps.write().apply_merge(&[], &[entry]);
    }

    /// PPNs not written yet, for a job's pre-allocated pages.
    pub fn free_pages(&mut self, lpns: std::ops::Range<u64>) -> Vec<(Lpn, Ppn)> {
        lpns.map(|l| {
            let ppn = Ppn(self.next_ppn);
            self.next_ppn += 1;
            (Lpn(l), ppn)
        })
        .collect()
    }
}

/// An invocation of `op` over VIDs `0..vids` of the table at `snapshot`,
/// one PE, no preloader.
pub fn invocation(op: NdpOp, snapshot: Snapshot, vids: u64) -> Invocation {
    Invocation {
        snapshot,
        table: TABLE,
        types: TYPES.to_vec(),
        vid_count: vids,
        filter: None,
        op,
        params: Vec::new(),
        pes: 1,
        preload: false,
        shared: 0,
        space: Vec::new(),
        lock_timeout_ms: 100,
        lock_tag: 2,
        targets: Vec::new(),
        stage: 0,
        keep: false,
        read_committed: false,
        report_pages: false,
        host_buckets: Vec::new(),
    }
}

/// A scan of the table's one column.
pub fn scan() -> NdpOp {
    NdpOp::Scan { columns: vec![0] }
}

/// Six tuples whose chains cover the cases of the walk (see the asserts).
pub fn chains() -> Device {
    let mut dev = Device::new();
    let base = dev.put(
        1,
        &[
            v(0, 5, RecId::NULL, 10),
            v(1, 5, RecId::NULL, 11),
            v(2, 5, RecId::NULL, 12),
            v(3, 5, RecId::NULL, 13),
            v(4, 120, RecId::NULL, 14),
            v(5, 5, RecId::NULL, 15),
        ],
    );
    let newer = dev.put(
        2,
        &[
            // VID 0: committed in the snapshot (one running at it follows).
            v(0, 20, base[0], 20),
            // VID 1: deleted by a transaction the snapshot sees.
            tomb(1, 30, base[1]),
            // VID 2: a version of a transaction after the snapshot.
            v(2, 150, base[2], 22),
            // VID 3: the reader's own new version.
            v(3, READER.0, base[3], 23),
        ],
    );
    // VID 0's running version points to its committed one.
    let running = dev.put(3, &[v(0, RUNNING.0, newer[0], 30)]);
    dev.head(0, running[0]);
    dev.head(1, newer[1]);
    dev.head(2, newer[2]);
    dev.head(3, newer[3]);
    dev.head(4, base[4]);
    dev.head(5, base[5]);
    dev
}
