//! Model-based test: random inserts, updates, deletes, rollbacks,
//! flushes, checkpoints, clean restarts and crash restarts, compared
//! with a `BTreeMap` after every step that can lose data.

use std::collections::BTreeMap;

use ndpdb_host::Config;
use ndpdb_sql::{Output, Session};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Insert(i64, u16),
    Update(i64, u16),
    Delete(i64),
    /// Several writes in one transaction that is rolled back.
    RolledBack(i64, u16),
    Flush,
    Checkpoint,
    Restart,
    Crash,
    /// Garbage collection; `true` = VACUUM FULL.
    Vacuum(bool),
    /// A full-table UPDATE on the device.
    NdpUpdateAll(u16),
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0i64..60;
    prop_oneof![
        6 => (key.clone(), any::<u16>()).prop_map(|(k, v)| Op::Insert(k, v)),
        6 => (key.clone(), any::<u16>()).prop_map(|(k, v)| Op::Update(k, v)),
        3 => key.clone().prop_map(Op::Delete),
        2 => (key, any::<u16>()).prop_map(|(k, v)| Op::RolledBack(k, v)),
        1 => Just(Op::Flush),
        1 => Just(Op::Checkpoint),
        1 => Just(Op::Restart),
        1 => Just(Op::Crash),
        2 => any::<bool>().prop_map(Op::Vacuum),
        1 => any::<u16>().prop_map(Op::NdpUpdateAll),
    ]
}

fn config() -> Config {
    Config {
        delta_buffer_bytes: 24 << 10,
        buffer_pool_bytes: 64 << 10,
        checkpoint_wal_bytes: 256 << 10,
        ..Config::default()
    }
}

fn payload(k: i64, v: u16) -> String {
    format!("{k}:{v}:{}", "z".repeat(v as usize % 700))
}

fn contents(s: &mut Session) -> BTreeMap<i64, String> {
    match s.execute("SELECT k, v FROM m").unwrap().pop().unwrap() {
        Output::Rows { rows, .. } => rows
            .into_iter()
            .map(|r| (r[0].as_i64().unwrap(), r[1].to_pg_text().unwrap()))
            .collect(),
        o => panic!("{o:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn engine_matches_a_btreemap(ops in proptest::collection::vec(op(), 1..120)) {
        let dir = tempfile::tempdir().unwrap();
        let mut db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
        let mut s = Session::new(db.clone());
        s.execute("CREATE TABLE m (k BIGINT PRIMARY KEY, v TEXT)").unwrap();
        let mut model: BTreeMap<i64, String> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Insert(k, v) => {
                    let r = s.execute(&format!("INSERT INTO m VALUES ({k}, '{}')", payload(k, v)));
                    if let std::collections::btree_map::Entry::Vacant(e) = model.entry(k) {
                        r.unwrap();
                        e.insert(payload(k, v));
                    } else {
                        prop_assert_eq!(r.unwrap_err().code.0, "23505");
                    }
                }
                Op::Update(k, v) => {
                    let out = s.execute(&format!("UPDATE m SET v = '{}' WHERE k = {k}", payload(k, v))).unwrap();
                    let expect = if model.contains_key(&k) { "UPDATE 1" } else { "UPDATE 0" };
                    prop_assert_eq!(out[0].tag(), expect);
                    if let Some(x) = model.get_mut(&k) {
                        *x = payload(k, v);
                    }
                }
                Op::Delete(k) => {
                    s.execute(&format!("DELETE FROM m WHERE k = {k}")).unwrap();
                    model.remove(&k);
                }
                Op::RolledBack(k, v) => {
                    s.execute(&format!(
                        "BEGIN; DELETE FROM m WHERE k = {k}; INSERT INTO m VALUES ({k}, 'never'); UPDATE m SET v = '{}' WHERE k % 5 = {}; ROLLBACK",
                        payload(k, v), k % 5
                    )).unwrap();
                }
                Op::Vacuum(full) => {
                    s.execute(if full { "VACUUM FULL m" } else { "VACUUM" }).unwrap();
                    prop_assert_eq!(&contents(&mut s), &model);
                    if full {
                        // Nothing is left for a second run to do.
                        let r = db.vacuum(Some("m"), true).unwrap();
                        prop_assert_eq!((r.relocated, r.tuples_removed, r.pages_freed), (0, 0, 0));
                    }
                }
                Op::NdpUpdateAll(v) => {
                    let n = v % 1000;
                    s.execute(&format!("SET ndp = on; UPDATE m SET v = v || '{n}'; SET ndp = off")).unwrap();
                    for x in model.values_mut() {
                        x.push_str(&n.to_string());
                    }
                }
                Op::Flush => db.flush().unwrap(),
                Op::Checkpoint => db.checkpoint().unwrap(),
                Op::Restart | Op::Crash => {
                    drop(s);
                    if matches!(op, Op::Crash) {
                        db.close_like_a_crash();
                    } else {
                        drop(db);
                    }
                    db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
                    db.verify_pk_indexes().unwrap();
                    s = Session::new(db.clone());
                    prop_assert_eq!(&contents(&mut s), &model);
                }
            }
        }
        prop_assert_eq!(&contents(&mut s), &model);
    }
}
