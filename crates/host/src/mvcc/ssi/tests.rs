//! The registry against the textbook schedules, with snapshots taken
//! from a small model of the transaction manager.

use std::collections::BTreeSet;

use ndpdb_formats::{SqlState, TableId, TxId};

use super::{key_hash, Ssi, Target};
use crate::mvcc::snapshot::Snapshot;

/// Hands out TxIds and snapshots like `TxManager`.
#[derive(Default)]
struct Txm {
    next: u64,
    running: BTreeSet<TxId>,
}

impl Txm {
    fn begin(&mut self, ssi: &Ssi, read_only: bool) -> TxId {
        self.next += 1;
        let id = TxId(self.next);
        self.running.insert(id);
        let running: Vec<TxId> = self.running.iter().copied().filter(|t| *t != id).collect();
        let xmax = TxId(self.next + 1);
        ssi.register(id, read_only, || Snapshot {
            txid: id,
            xmin: running.first().copied().unwrap_or(xmax),
            xmax,
            in_flight: running.clone(),
        });
        id
    }

    fn commit(&mut self, ssi: &Ssi, id: TxId) -> Result<(), crate::Error> {
        if let Err(e) = ssi.pre_commit(id) {
            self.abort(ssi, id);
            return Err(e);
        }
        self.running.remove(&id);
        ssi.committed(id);
        Ok(())
    }

    fn abort(&mut self, ssi: &Ssi, id: TxId) {
        self.running.remove(&id);
        ssi.aborted(id);
    }
}

const T: TableId = TableId(7);

fn key(k: u64) -> Target {
    Target::Key(T, key_hash(1, &k.to_le_bytes()))
}

#[test]
fn write_skew_fails_the_second_committer() {
    let ssi = Ssi::default();
    let mut m = Txm::default();
    let a = m.begin(&ssi, false);
    let b = m.begin(&ssi, false);
    ssi.read(a, Target::Table(T)).unwrap();
    ssi.read(b, Target::Table(T)).unwrap();
    ssi.write(a, key(1)).unwrap();
    ssi.write(b, key(2)).unwrap();
    m.commit(&ssi, a).unwrap();
    let e = m.commit(&ssi, b).unwrap_err();
    assert_eq!(e.code, SqlState::SERIALIZATION_FAILURE);
    assert_eq!(
        e.detail.as_deref(),
        Some("Reason code: Canceled on identification as a pivot, during commit attempt.")
    );
    assert_eq!(ssi.tracked(), 0, "nothing stays once nobody runs");
}

#[test]
fn disjoint_keys_do_not_conflict() {
    let ssi = Ssi::default();
    let mut m = Txm::default();
    let a = m.begin(&ssi, false);
    let b = m.begin(&ssi, false);
    ssi.read(a, key(1)).unwrap();
    ssi.read(b, key(2)).unwrap();
    ssi.write(a, key(1)).unwrap();
    ssi.write(b, key(2)).unwrap();
    m.commit(&ssi, a).unwrap();
    m.commit(&ssi, b).unwrap();
}

#[test]
fn a_reader_after_the_commit_is_not_concurrent() {
    let ssi = Ssi::default();
    let mut m = Txm::default();
    let a = m.begin(&ssi, false);
    ssi.read(a, key(1)).unwrap();
    ssi.write(a, key(2)).unwrap();
    m.commit(&ssi, a).unwrap();
    let b = m.begin(&ssi, false);
    ssi.read(b, key(2)).unwrap();
    ssi.write(b, key(1)).unwrap();
    m.commit(&ssi, b).unwrap();
}

#[test]
fn a_promoted_lock_still_sees_every_key() {
    let ssi = Ssi::default();
    let mut m = Txm::default();
    let a = m.begin(&ssi, false);
    let b = m.begin(&ssi, false);
    for k in 0..200 {
        ssi.read(a, key(k)).unwrap();
    }
    ssi.read(b, key(5000)).unwrap();
    // Key 999 was never read by `a`, but its lock covers the table now.
    ssi.write(b, key(999)).unwrap();
    ssi.write(a, key(5000)).unwrap();
    m.commit(&ssi, b).unwrap();
    assert!(m.commit(&ssi, a).is_err());
}

/// The read-only anomaly (Fekete et al.): batch processing with a report.
/// T_report reads after T_close committed but before T_deposit did.
#[test]
fn read_only_anomaly_is_prevented() {
    let ssi = Ssi::default();
    let mut m = Txm::default();
    let deposit = m.begin(&ssi, false);
    ssi.read(deposit, key(1)).unwrap(); // reads the batch number
    let close = m.begin(&ssi, false);
    ssi.read(close, key(1)).unwrap();
    ssi.write(close, key(1)).unwrap(); // closes the batch
    m.commit(&ssi, close).unwrap();
    let report = m.begin(&ssi, true);
    ssi.read(report, key(1)).unwrap(); // sees the new batch
    ssi.read(report, key(2)).unwrap(); // reads the old batch's total
    let late = ssi.write(deposit, key(2));
    let outcome = late.and_then(|()| m.commit(&ssi, deposit));
    let report_end = m.commit(&ssi, report);
    assert!(
        outcome.is_err() || report_end.is_err(),
        "one of the three must fail"
    );
}

#[test]
fn a_pivot_fails_at_the_write_that_makes_it_one() {
    let ssi = Ssi::default();
    let mut m = Txm::default();
    let a = m.begin(&ssi, false);
    let b = m.begin(&ssi, false);
    let c = m.begin(&ssi, false);
    // a → b (a read what b writes), b → c; c commits first: b is the pivot.
    ssi.read(b, key(3)).unwrap();
    ssi.write(c, key(3)).unwrap();
    m.commit(&ssi, c).unwrap();
    ssi.read(a, key(2)).unwrap();
    ssi.write(b, key(2)).unwrap_err();
    m.abort(&ssi, b);
    m.commit(&ssi, a).unwrap();
}

#[test]
fn aborting_releases_everything() {
    let ssi = Ssi::default();
    let mut m = Txm::default();
    let a = m.begin(&ssi, false);
    let b = m.begin(&ssi, false);
    ssi.read(a, Target::Table(T)).unwrap();
    ssi.write(b, key(1)).unwrap();
    m.abort(&ssi, b);
    ssi.write(a, key(2)).unwrap();
    m.commit(&ssi, a).unwrap();
    assert_eq!(ssi.tracked(), 0);
}
