//! The PE's visibility walk, one PE run at a time on the calling thread:
//! which version of each tuple a scan at a snapshot returns, and how the
//! host's passed-along pages and ΔVID overlay take precedence over the
//! device's store and maps.

use std::sync::atomic::AtomicBool;

use ndpdb_formats::visibility::Snapshot;
use ndpdb_formats::{Lpn, RecId, Value, Vid};
use ndpdb_link::ndp::{Invocation, SharedState};
use ndpdb_scan::{Pipeline, PipelineOp};

use super::fixture::*;
use crate::ndp::pass_along::PassedAlong;
use crate::ndp::pe::{run_pe, Chunks, PeOutput, PeTask};

/// The rows one PE returns for a scan of `inv`, the VID-by-VID walk's
/// (`paged` false) or the scan core's page by page (`paged` true).
fn scan_rows(dev: &Device, inv: &Invocation, shared: &PassedAlong, paged: bool) -> Vec<i32> {
    let pipeline = paged.then(|| {
        let op = PipelineOp::Project { columns: vec![0] };
        Pipeline::new(&inv.types, &inv.params, inv.filter.as_ref(), op)
    });
    let cancel = AtomicBool::new(false);
    let task = PeTask {
        core: &dev.core,
        inv,
        shared,
        chunks: Chunks {
            first: 0,
            step: 1,
            vids: inv.vid_count,
        },
        wanted: &[true],
        cancel: &cancel,
        cpu: None,
        modify: None,
        pipeline: pipeline.as_ref(),
        targets: &[],
    };
    let (out, _) = run_pe(&task);
    let Ok((PeOutput::Rows(chunks), _)) = out else {
        panic!("a scan returns rows");
    };
    let rows = chunks.into_iter().flat_map(|(_, rows)| rows);
    rows.map(|r| match r[..] {
        [Value::Int(x)] => x,
        ref other => panic!("one INT per row, not {other:?}"),
    })
    .collect()
}

/// Both walks, which must return the same rows (sorted here: within a
/// chunk the page walk returns them in page order).
fn scan_both(dev: &Device, snapshot: Snapshot, vids: u64, shared: &PassedAlong) -> Vec<i32> {
    let inv = invocation(scan(), snapshot, vids);
    let mut by_vid = scan_rows(dev, &inv, shared, false);
    let mut by_page = scan_rows(dev, &inv, shared, true);
    by_vid.sort_unstable();
    by_page.sort_unstable();
    assert_eq!(by_vid, by_page, "the VID-by-VID and page walks agree");
    by_vid
}

#[test]
fn the_walk_returns_the_newest_version_the_snapshot_sees() {
    let dev = chains();
    let rows = scan_both(&dev, snapshot(), 6, &PassedAlong::default());
    // VID 0: the running transaction's version skipped, the committed
    // one below it seen (not the base). VID 1: deleted. VID 2: the
    // later transaction's version skipped, the base seen. VID 3: the
    // reader sees its own version. VID 4: created after the snapshot,
    // no version seen. VID 5: its only version.
    assert_eq!(rows, vec![12, 15, 20, 23]);
}

#[test]
fn an_older_snapshot_sees_older_versions() {
    let dev = chains();
    let rows = scan_both(&dev, old_snapshot(), 6, &PassedAlong::default());
    // Only the base versions by creator 5 are seen; VID 1's tombstone
    // and VID 4's late version are not.
    assert_eq!(rows, vec![10, 11, 12, 13, 15]);
}

#[test]
fn passed_along_heads_and_pages_take_precedence() {
    let mut dev = Device::new();
    let base = dev.put(1, &[v(0, 5, RecId::NULL, 10), v(1, 5, RecId::NULL, 11)]);
    // The store's copy of LPN 4 has one record; the host's delta buffer
    // holds LPN 4 with a second one (not flushed yet), and LPN 5 that the
    // device has never seen.
    let stored = dev.put(4, &[v(2, 5, RecId::NULL, 40)]);
    dev.head(0, base[0]);
    dev.head(1, base[1]);
    dev.head(2, stored[0]);
    let shared = SharedState {
        pages: vec![
            (
                Lpn(4),
                page(4, &[v(2, 5, RecId::NULL, 40), v(1, 20, base[1], 41)]),
            ),
            (Lpn(5), page(5, &[v(0, 20, base[0], 50)])),
        ],
        vids: vec![
            (Vid(0), RecId::new(Lpn(5), 0)),
            (Vid(1), RecId::new(Lpn(4), 1)),
        ],
    };
    let shared = PassedAlong::from_state(shared).unwrap();
    let rows = scan_both(&dev, snapshot(), 3, &shared);
    // VID 0 and 1: the host's heads, on its pages; VID 2: the device's.
    assert_eq!(rows, vec![40, 41, 50]);
    // Without the pass-along state the device's own heads are seen.
    let rows = scan_both(&dev, snapshot(), 3, &PassedAlong::default());
    assert_eq!(rows, vec![10, 11, 40]);
}

#[test]
fn a_passed_along_page_answers_only_for_the_slots_it_has() {
    let mut dev = Device::new();
    // The host captured LPN 1 with one record, then appended a second
    // and flushed the page: the store's copy has both.
    let stored = dev.put(1, &[v(0, 5, RecId::NULL, 10), v(1, 5, RecId::NULL, 11)]);
    dev.head(0, stored[0]);
    dev.head(1, stored[1]);
    let captured = SharedState {
        pages: vec![(Lpn(1), page(1, &[v(0, 5, RecId::NULL, 99)]))],
        vids: Vec::new(),
    };
    let shared = PassedAlong::from_state(captured).unwrap();
    assert!(shared.page(stored[0]).is_some());
    assert!(shared.page(stored[1]).is_none());
    // Resolving version by version, slot 0 comes from the captured page
    // (it takes precedence), slot 1 from the store. (The page walk takes
    // a page whole, from the store here: in use the captured copy and the
    // flushed one agree on the slots they share.)
    let inv = invocation(scan(), snapshot(), 2);
    assert_eq!(scan_rows(&dev, &inv, &shared, false), vec![99, 11]);
}

#[test]
fn a_malformed_passed_along_page_is_refused() {
    let mut bytes = page(1, &[v(0, 5, RecId::NULL, 1)]);
    bytes.truncate(4096);
    let state = SharedState {
        pages: vec![(Lpn(1), bytes)],
        vids: Vec::new(),
    };
    assert!(PassedAlong::from_state(state).is_err());
}
