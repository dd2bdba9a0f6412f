//! The page store on RADOS, against a running cluster (`CEPH_CONF`, as
//! `scripts/test` sets it; skipped without one).

use std::path::PathBuf;

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
    let store = PageStore::open_rados(p, &prefix, NvmProfile::OFF).unwrap();
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
    let store = PageStore::open_rados(pool().unwrap(), &prefix, NvmProfile::OFF).unwrap();
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
