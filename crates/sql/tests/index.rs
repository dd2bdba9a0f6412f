//! Secondary indexes under concurrency, update NDP and restarts: a UNIQUE
//! key written by two transactions at once, index answers after device
//! UPDATEs and DELETEs, and indexes rebuilt after a crash.

use std::time::Duration;

use ndpdb_formats::{SqlState, Value};
use ndpdb_sql::{Output, Session};

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    match s.execute(sql).unwrap().pop().unwrap() {
        Output::Rows { rows, .. } => rows,
        o => panic!("{o:?}"),
    }
}

fn explain(s: &mut Session, sql: &str) -> String {
    rows(s, &format!("EXPLAIN {sql}"))
        .into_iter()
        .map(|r| format!("{:?}\n", r[0]))
        .collect()
}

#[test]
fn a_unique_key_written_twice_at_once_waits_for_the_first_writer() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let mut a = Session::new(db.clone());
    a.execute("CREATE TABLE u (id INT PRIMARY KEY, k INT); CREATE UNIQUE INDEX u_k ON u (k)")
        .unwrap();
    for (end, expect) in [
        ("COMMIT", Some(SqlState::UNIQUE_VIOLATION)),
        ("ROLLBACK", None),
    ] {
        let key = if end == "COMMIT" { 5 } else { 6 };
        a.execute(&format!("BEGIN; INSERT INTO u VALUES ({key}, {key})"))
            .unwrap();
        let db2 = db.clone();
        let other = std::thread::spawn(move || {
            let mut b = Session::new(db2);
            let started = std::time::Instant::now();
            let r = b.execute(&format!("INSERT INTO u VALUES ({}, {key})", key + 100));
            (r.map(|_| ()).map_err(|e| e.code), started.elapsed())
        });
        std::thread::sleep(Duration::from_millis(300));
        a.execute(end).unwrap();
        let (result, waited) = other.join().unwrap();
        assert_eq!(result.err(), expect, "after {end}");
        assert!(
            waited >= Duration::from_millis(250),
            "did not wait: {waited:?}"
        );
    }
    let all = rows(&mut a, "SELECT id, k FROM u ORDER BY id");
    let int = |a: i32, b: i32| vec![Value::Int(a), Value::Int(b)];
    assert_eq!(all, vec![int(5, 5), int(106, 6)]);
}

#[test]
fn device_updates_and_deletes_leave_every_index_answer_right() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let mut s = Session::new(db);
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT)")
        .unwrap();
    let values: Vec<String> = (0..2_000)
        .map(|i| format!("({i}, {}, {})", i % 50, i % 7))
        .collect();
    s.execute(&format!("INSERT INTO t VALUES {}", values.join(",")))
        .unwrap();
    s.execute("CREATE INDEX ON t (a); CREATE INDEX ON t (b, a); SET ndp = on")
        .unwrap();
    // A SET of an indexed column runs on the host; another column's on the device.
    assert!(
        explain(&mut s, "UPDATE t SET a = a + 100 WHERE id % 3 = 0").contains("Update on t [host]")
    );
    assert!(explain(&mut s, "DELETE FROM t WHERE id % 5 = 0").contains("[device]"));
    s.execute("UPDATE t SET a = a + 100 WHERE id % 3 = 0")
        .unwrap();
    s.execute("DELETE FROM t WHERE id % 5 = 0").unwrap();
    s.execute("BEGIN; UPDATE t SET a = -1 WHERE id % 11 = 0; ROLLBACK")
        .unwrap();
    // Every index answer equals the scan's (a + 0 uses no index), on the
    // host (the index) and with `ndp = on` (a range scans on the device).
    for (indexed, scanned) in [
        ("a = 7", "a + 0 = 7"),
        ("a = 107", "a + 0 = 107"),
        ("a >= 40 AND a < 103", "a + 0 >= 40 AND a + 0 < 103"),
        ("b = 3 AND a > 120", "b + 0 = 3 AND a + 0 > 120"),
        ("b = 2", "b + 0 = 2"),
        ("a = -1", "a + 0 = -1"),
    ] {
        let q = |w: &str| format!("SELECT id, a, b FROM t WHERE {w} ORDER BY id");
        let on_device = rows(&mut s, &q(indexed));
        s.execute("SET ndp = off").unwrap();
        assert!(
            explain(&mut s, &q(indexed)).contains("Index Scan"),
            "{indexed}"
        );
        let via_index = rows(&mut s, &q(indexed));
        let via_scan = rows(&mut s, &q(scanned));
        s.execute("SET ndp = on").unwrap();
        assert_eq!(via_index, via_scan, "{indexed}");
        assert_eq!(on_device, via_scan, "{indexed}");
        if indexed != "a = -1" {
            assert!(!via_index.is_empty(), "{indexed}");
        }
    }
}

#[test]
fn indexes_are_rebuilt_after_a_crash_and_still_enforce_uniqueness() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = ndpdb_embedded::open(dir.path()).unwrap();
        let mut s = Session::new(db.clone());
        s.execute(
            "CREATE TABLE t (id INT PRIMARY KEY, k TEXT, n INT);
             INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2);
             CREATE UNIQUE INDEX t_k ON t (k);
             INSERT INTO t VALUES (3, 'c', 3);
             UPDATE t SET k = 'z' WHERE id = 1",
        )
        .unwrap();
        drop(s);
        db.close_like_a_crash();
    }
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let mut s = Session::new(db);
    assert!(explain(&mut s, "SELECT id FROM t WHERE k = 'z'").contains("Index Scan using t_k"));
    assert_eq!(
        rows(
            &mut s,
            "SELECT id FROM t WHERE k = 'z' OR k = 'a' ORDER BY id"
        ),
        vec![vec![Value::Int(1)]]
    );
    assert_eq!(
        rows(&mut s, "SELECT id FROM t WHERE k = 'c'"),
        vec![vec![Value::Int(3)]]
    );
    let e = s.execute("INSERT INTO t VALUES (4, 'c', 4)").unwrap_err();
    assert_eq!(e.code, SqlState::UNIQUE_VIOLATION);
    // The key 'a' was freed by the update.
    s.execute("INSERT INTO t VALUES (5, 'a', 5)").unwrap();
}

/// The primary key in SQL order (an index range over a key prefix) is
/// built from every key on its first read, not when a plan names it: a
/// correlated EXISTS that hashes its table never reads it, and building
/// it for millions of keys costs seconds.
#[test]
fn the_primary_key_in_order_is_built_on_its_first_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let mut s = Session::new(db.clone());
    s.execute(
        "CREATE TABLE o (w INT, id INT, PRIMARY KEY (w, id));
         CREATE TABLE l (w INT, o INT, n INT, d INT, PRIMARY KEY (w, o, n));
         INSERT INTO o SELECT 1 + g % 3, g FROM generate_series(1, 300) g",
    )
    .unwrap();
    s.execute(
        "INSERT INTO l SELECT 1 + g % 3, g, k, g % 7 FROM generate_series(1, 300) g, generate_series(1, 4) k",
    )
    .unwrap();
    let built = |name: &str| {
        db.table(name)
            .unwrap()
            .pk
            .get()
            .is_some_and(|pk| pk.ordered_if_built().is_some())
    };
    let q = "SELECT count(*) FROM o WHERE EXISTS \
             (SELECT 1 FROM l WHERE l.w = o.w AND l.o = o.id AND l.d > 2)";
    assert!(explain(&mut s, q).contains("Index Scan using l_pkey"));
    assert!(!built("l"), "planning built the key order");
    assert_eq!(rows(&mut s, q), vec![vec![Value::BigInt(172)]]);
    assert!(!built("l"), "the hashed EXISTS read the key order");
    // A read of a key prefix builds it, and answers from it.
    let prefix = "SELECT count(*) FROM l WHERE w = 2 AND o > 250";
    assert!(explain(&mut s, prefix).contains("Index Scan using l_pkey"));
    assert_eq!(rows(&mut s, prefix), vec![vec![Value::BigInt(64)]]);
    assert!(built("l"));
}

#[test]
fn an_index_made_in_a_block_waits_for_other_writers_and_goes_with_its_rollback() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let mut a = Session::new(db.clone());
    a.execute("CREATE TABLE t (id INT PRIMARY KEY, k INT); INSERT INTO t VALUES (1, 10), (2, 20)")
        .unwrap();
    // Another transaction is writing when the block's CREATE INDEX starts:
    // the build waits for it and indexes its row once it commits.
    let mut b = Session::new(db.clone());
    b.execute("BEGIN; INSERT INTO t VALUES (3, 30)").unwrap();
    let committer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        b.execute("COMMIT").unwrap();
    });
    a.execute("BEGIN; SELECT count(*) FROM t").unwrap();
    let started = std::time::Instant::now();
    a.execute("CREATE INDEX t_k ON t (k)").unwrap();
    assert!(started.elapsed() >= Duration::from_millis(250));
    committer.join().unwrap();
    assert_eq!(
        rows(&mut a, "SELECT id FROM t WHERE k = 30"),
        vec![vec![Value::Int(3)]]
    );
    assert!(explain(&mut a, "SELECT id FROM t WHERE k = 30").contains("t_k"));
    a.execute("ROLLBACK").unwrap();
    let count = "SELECT count(*) FROM pg_catalog.pg_class WHERE relname = 't_k'";
    assert_eq!(rows(&mut a, count), vec![vec![Value::BigInt(0)]]);
    // In a block that has written rows the build is refused, and the
    // block fails as on any error.
    a.execute("BEGIN; INSERT INTO t VALUES (4, 40)").unwrap();
    let e = a.execute("CREATE INDEX t_k ON t (k)").unwrap_err();
    assert_eq!(e.code, SqlState::FEATURE_NOT_SUPPORTED);
    assert_eq!(
        a.execute("SELECT 1").unwrap_err().code,
        SqlState::IN_FAILED_SQL_TRANSACTION
    );
    a.execute("ROLLBACK").unwrap();
    assert_eq!(
        rows(&mut a, "SELECT count(*) FROM t"),
        vec![vec![Value::BigInt(3)]]
    );
    // Committed, it stays and is used.
    a.execute("BEGIN; CREATE INDEX t_k ON t (k); COMMIT")
        .unwrap();
    assert_eq!(rows(&mut a, count), vec![vec![Value::BigInt(1)]]);
}
