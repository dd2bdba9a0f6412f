//! The unloader, step by step: a PE's page writer filling pages from the
//! job's pool, the unloader thread writing them to their PPNs, and what
//! goes back to the host — the pages written (ΔL2P), the pages reported
//! while the job runs, the pages never used, and a pool that ran dry.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use ndpdb_formats::page::PageRef;
use ndpdb_formats::{Lpn, Ppn, RecId, SqlState, Value};

use super::fixture::*;
use crate::ndp::update::{unloader, PageWriter, SpacePool};

/// `n` versions of one INT each (a page holds a few hundred).
fn records(n: u64) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| record(v(i, READER.0, RecId::NULL, i as i32)))
        .collect()
}

/// What [`write_all`] gives: the RecIds, the pages written, and how the
/// writing ended.
type Outcome = (
    Vec<RecId>,
    Vec<(Lpn, Ppn)>,
    Result<(), ndpdb_formats::Error>,
);

/// Appends `records` through a writer with its unloader thread.
fn write_all(dev: &Device, space: &SpacePool, records: &[Vec<u8>], cancel: &AtomicBool) -> Outcome {
    let mut written = Vec::new();
    let mut rids = Vec::new();
    let ended = std::thread::scope(|s| {
        let (mut writer, rx) = PageWriter::new(space, TABLE, &TYPES);
        let store = &dev.core.store;
        let unload = s.spawn(move || unloader(store, space, rx));
        let appended = records.iter().try_for_each(|r| {
            rids.push(writer.append(r, &mut written, cancel)?);
            Ok::<(), ndpdb_formats::Error>(())
        });
        let closed = writer.close(&mut written);
        drop(writer);
        appended.and(closed).and(unload.join().unwrap())
    });
    (rids, written, ended)
}

#[test]
fn sealed_pages_reach_their_ppns_and_unused_pages_go_back() {
    let mut dev = Device::new();
    let pool = dev.free_pages(10..40);
    let space = SpacePool::new(pool.clone(), Box::new(|| {}), None);
    let recs = records(1500);
    let cancel = AtomicBool::new(false);
    let (rids, written, ended) = write_all(&dev, &space, &recs, &cancel);
    ended.unwrap();
    // Pages are taken from the pool in order; more than one was needed.
    assert!(written.len() >= 2, "{} pages", written.len());
    assert_eq!(written, pool[..written.len()].to_vec());
    // Every record is on the page its RecId names, at its PPN.
    for (i, rid) in rids.iter().enumerate() {
        let ppn = written.iter().find(|(l, _)| *l == rid.lpn()).unwrap().1;
        let bytes = dev.core.store.read(ppn).unwrap();
        assert!(PageRef::parse_verified(&bytes).is_ok(), "sealed");
        let (h, value) = read_version(&bytes, rid.slot());
        assert_eq!((h.vid.0, value), (i as u64, Value::Int(i as i32)));
    }
    // Without reporting nothing is reported; the rest is handed back.
    assert!(space.take_unloaded().is_empty());
    assert_eq!(space.drain(), pool[written.len()..].to_vec());
}

#[test]
fn written_pages_are_reported_to_a_host_that_asked() {
    let mut dev = Device::new();
    let pool = dev.free_pages(10..40);
    let told = Arc::new(AtomicUsize::new(0));
    let t = told.clone();
    let tell: Box<dyn Fn() + Send + Sync> = Box::new(move || {
        t.fetch_add(1, Ordering::Relaxed);
    });
    let space = SpacePool::new(pool, Box::new(|| {}), Some(tell));
    let cancel = AtomicBool::new(false);
    let (_, written, ended) = write_all(&dev, &space, &records(1500), &cancel);
    ended.unwrap();
    // Below a batch of 128 pages the host is not woken, but its next
    // NDP_STATUS collects what was written, once.
    assert!(!space.unloaded_ready());
    assert_eq!(told.load(Ordering::Relaxed), 0);
    let mut reported = space.take_unloaded();
    reported.sort();
    assert_eq!(reported, written);
    assert!(space.take_unloaded().is_empty());
}

#[test]
fn a_pool_that_runs_dry_asks_the_host_once_and_stops_when_cancelled() {
    let mut dev = Device::new();
    let pool = dev.free_pages(10..11);
    let cancel = Arc::new(AtomicBool::new(false));
    let asked = Arc::new(AtomicUsize::new(0));
    let (c, a) = (cancel.clone(), asked.clone());
    // The host, asked for space, aborts the job instead.
    let on_empty: Box<dyn Fn() + Send + Sync> = Box::new(move || {
        a.fetch_add(1, Ordering::Relaxed);
        c.store(true, Ordering::Relaxed);
    });
    let space = SpacePool::new(pool.clone(), on_empty, None);
    let (_, written, ended) = write_all(&dev, &space, &records(1500), &cancel);
    assert_eq!(ended.unwrap_err().sqlstate(), SqlState::QUERY_CANCELED);
    assert_eq!(asked.load(Ordering::Relaxed), 1);
    // The one page it had was filled and written: the host takes it back.
    assert_eq!(written, pool);
    assert!(space.drain().is_empty());
}
