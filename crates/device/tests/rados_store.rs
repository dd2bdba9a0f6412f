//! The page store on RADOS, against a running cluster (`CEPH_CONF`, as
//! `scripts/test` sets it; skipped without one).

use std::path::PathBuf;
use std::sync::Arc;

use ndpdb_device::store::{PageStore, PAGES_PER_OBJECT};
use ndpdb_device::NvmProfile;
use ndpdb_formats::ids::{Lpn, TableId};
use ndpdb_formats::page::scrub::Scrub;
use ndpdb_formats::page::{PageBuf, PageRef, PAGE_SIZE};
use ndpdb_formats::types::DataType;
use ndpdb_formats::Ppn;
use ndpdb_rados::{Cluster, Pool};

fn pool() -> Option<Pool> {
    let Some(conf) = std::env::var_os("CEPH_CONF") else {
        eprintln!("skipped: CEPH_CONF is not set (scripts/test starts a cluster)");
        return None;
    };
    let cluster = Cluster::connect(&PathBuf::from(conf)).unwrap();
    Some(cluster.pool("ndpdb").unwrap())
}

fn sealed(lpn: u64) -> Vec<u8> {
    let mut p = PageBuf::new(TableId(3), Lpn(lpn), &[DataType::BigInt]);
    p.seal();
    p.as_bytes().to_vec()
}

#[test]
fn pages_round_trip_across_objects_and_reopen() {
    let Some(p) = pool() else { return };
    let prefix = format!("test.{}.store", std::process::id());
    let store = PageStore::open_rados(Arc::new(p), &prefix, NvmProfile::OFF, 0).unwrap();
    assert_eq!(store.page_count(), 0);
    // 0–2, then a run across the first object boundary, then one page in
    // the third object: holes between are never written.
    let ppns: Vec<u64> = (0..3)
        .chain(PAGES_PER_OBJECT - 2..PAGES_PER_OBJECT + 3)
        .chain([2 * PAGES_PER_OBJECT + 6])
        .collect();
    let pages: Vec<Vec<u8>> = ppns.iter().map(|&p| sealed(p)).collect();
    let batch: Vec<(Ppn, &[u8])> = ppns
        .iter()
        .zip(&pages)
        .map(|(&p, b)| (Ppn(p), b.as_slice()))
        .collect();
    store.write_many(&batch).unwrap();
    store.sync().unwrap();
    let count = 2 * PAGES_PER_OBJECT + 7;
    assert_eq!(store.page_count(), count);

    for (&ppn, want) in ppns.iter().zip(&pages) {
        assert_eq!(&store.read(Ppn(ppn)).unwrap(), want, "PPN {ppn}");
        let mut one = vec![0u8; PAGE_SIZE];
        store.read_into(Ppn(ppn), &mut one).unwrap();
        assert_eq!(&one, want);
    }
    let mut appended = Vec::new();
    store.append_page(Ppn(1), &mut appended).unwrap();
    assert_eq!(appended, pages[1]);
    assert_eq!(
        store.read(Ppn(7)).unwrap(),
        vec![0u8; PAGE_SIZE],
        "a hole reads as zeros"
    );
    assert!(store.read(Ppn(count)).is_err(), "past the end");

    // Reopened from the pool alone: the same count and pages.
    drop(store);
    let store =
        PageStore::open_rados(Arc::new(pool().unwrap()), &prefix, NvmProfile::OFF, 0).unwrap();
    assert_eq!(store.page_count(), count);
    assert_eq!(
        store.read(Ppn(PAGES_PER_OBJECT)).unwrap(),
        sealed(PAGES_PER_OBJECT)
    );

    // The scrub runs in the OSDs: every written page verified, the rest
    // never written; then one damaged page is found where it lies.
    let written = ppns.len() as u64;
    assert_eq!(
        store.scrub().unwrap(),
        Scrub {
            pages: count,
            verified: written,
            never_written: count - written,
            bad: 0,
            first_bad: None
        }
    );
    let mut bad = sealed(PAGES_PER_OBJECT + 1);
    bad[PAGE_SIZE / 2] ^= 0x40;
    store.write(Ppn(PAGES_PER_OBJECT + 1), &bad).unwrap();
    let s = store.scrub().unwrap();
    assert_eq!((s.bad, s.first_bad), (1, Some(PAGES_PER_OBJECT + 1)));
    assert!(PageRef::parse_verified(&store.read(Ppn(PAGES_PER_OBJECT + 1)).unwrap()).is_err());

    let p = pool().unwrap();
    for o in p.objects().unwrap() {
        if o.starts_with(&prefix) {
            p.remove(&o).unwrap();
        }
    }
}

fn entry(vid: u64, lpn: u64) -> ndpdb_link::VidEntry {
    ndpdb_link::VidEntry {
        table: TableId(4),
        vid: ndpdb_formats::Vid(vid),
        head: ndpdb_formats::RecId::new(Lpn(lpn), 1),
    }
}

fn objects(pool: &Pool, prefix: &str, kind: &str) -> Vec<String> {
    let mut v: Vec<String> = pool
        .objects()
        .unwrap()
        .into_iter()
        .filter(|o| o.starts_with(&format!("{prefix}.{kind}")))
        .collect();
    v.sort();
    v
}

/// The map log and snapshot in RADOS: merges survive a reopen, a torn
/// tail is cut, and a compaction is safe at its crash points.
#[test]
fn maps_survive_reopen_torn_tails_and_compaction_crash_points() {
    use ndpdb_device::maps::MapStore;
    let Some(p) = pool() else { return };
    let pool = Arc::new(p);
    let prefix = format!("test.{}.maps", std::process::id());
    let open = || MapStore::open_rados(pool.clone(), &prefix).unwrap();
    let check = |maps: &ndpdb_device::maps::Maps, upto: u64| {
        for l in 0..upto {
            assert_eq!(maps.l2p.get(&Lpn(l)), Some(Ppn(1000 + l)), "LPN {l}");
        }
        assert_eq!(maps.l2p.get(&Lpn(upto)), None);
        assert_eq!(maps.vids[&TableId(4)].len() as u64, upto);
    };

    let (mut store, maps) = open();
    assert!(maps.l2p.is_empty());
    let mut merged = 0;
    let mut merge = |store: &mut MapStore, maps: &mut ndpdb_device::maps::Maps| {
        let (l2p, vids) = ([(Lpn(merged), Ppn(1000 + merged))], [entry(merged, merged)]);
        store.log_merge(&l2p, &vids).unwrap();
        maps.apply_merge(&l2p, &vids);
        merged += 1;
    };
    let mut maps = maps;
    for _ in 0..3 {
        merge(&mut store, &mut maps);
    }
    drop(store);
    let (store, mut maps) = open();
    check(&maps, 3);

    // A torn batch at the log's end: cut on open, and later batches land
    // after the valid ones.
    let log = objects(&pool, &prefix, "maps.log").pop().unwrap();
    let len = pool.stat(&log).unwrap().unwrap();
    pool.write(&log, &[9, 0, 0, 0, 1, 2], len).unwrap();
    drop(store);
    let (mut store2, maps2) = open();
    check(&maps2, 3);
    assert_eq!(pool.stat(&log).unwrap(), Some(len));
    merge(&mut store2, &mut maps);
    drop(store2);
    let (mut store, maps_now) = open();
    check(&maps_now, 4);
    maps = maps_now;

    // Crash after the log was set aside, before the snapshot: both logs
    // replay, and open compacts in place.
    let job = store
        .begin_compaction(&maps)
        .unwrap()
        .expect("a background compaction");
    merge(&mut store, &mut maps);
    drop(job);
    drop(store);
    let (mut store, maps_now) = open();
    check(&maps_now, 5);
    maps = maps_now;
    assert_eq!(
        objects(&pool, &prefix, "maps.log").len(),
        0,
        "compacted in place: a fresh, empty log"
    );
    assert_eq!(objects(&pool, &prefix, "maps.snap").len(), 1);

    // A compaction that finishes: its snapshot and the new log are all
    // that remain, and merges made meanwhile survive.
    let copy_of_maps_now = maps.clone();
    let job = store
        .begin_compaction(&maps)
        .unwrap()
        .expect("a background compaction");
    merge(&mut store, &mut maps);
    let outcome = job.write(&copy_of_maps_now);
    assert!(outcome.is_ok());
    store.end_compaction(&outcome);
    merge(&mut store, &mut maps);
    drop(store);
    let (_store, maps_now) = open();
    check(&maps_now, 7);
    assert_eq!(objects(&pool, &prefix, "maps.log").len(), 1);
    assert_eq!(objects(&pool, &prefix, "maps.snap").len(), 1);

    for o in pool.objects().unwrap() {
        if o.starts_with(&prefix) {
            pool.remove(&o).unwrap();
        }
    }
}
