//! Deadlocks across the host lock table and the shared lock table: a host
//! transaction and an update-NDP job that wait on each other end with
//! 40P01 once a wait has lasted `deadlock_timeout`, as in PostgreSQL, and
//! the survivor goes on. Also `lock_timeout` and `deadlock_timeout` as
//! session settings.

use std::thread;
use std::time::{Duration, Instant};

use ndpdb_formats::{SqlState, Value};
use ndpdb_host::{Config, Database};
use ndpdb_sql::{Output, Session};

fn config() -> Config {
    Config {
        autovacuum: false,
        ..Config::default()
    }
}

fn one(s: &mut Session, sql: &str) -> String {
    match s
        .execute(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
        .pop()
    {
        Some(Output::Rows { rows, .. }) => match &rows[0][0] {
            Value::Null => "NULL".into(),
            v => v.to_pg_text().unwrap_or_default(),
        },
        o => panic!("{sql}: expected rows, got {o:?}"),
    }
}

fn setup(db: &Database, n: i64) -> Session {
    let mut s = Session::new(db.clone());
    s.execute("CREATE TABLE t (k INT PRIMARY KEY, c BIGINT NOT NULL)")
        .unwrap();
    let vals: Vec<String> = (0..n).map(|k| format!("({k}, 0)")).collect();
    s.execute(&format!("INSERT INTO t VALUES {}", vals.join(", ")))
        .unwrap();
    s
}

/// H locks row 99; an NDP UPDATE of the whole table locks row 0 and waits
/// for row 99; H asks for row 0 and closes the cycle. H is the victim
/// once its wait passes deadlock_timeout (1 s) — long before the device's
/// own bound on lock waits (5 s, which would fail the job with 40001).
#[test]
fn a_host_transaction_and_an_ndp_update_crossing_on_two_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(dir.path(), config()).unwrap();
    let mut n = setup(&db, 100);
    let mut h = Session::new(db.clone());
    h.execute("BEGIN").unwrap();
    h.execute("UPDATE t SET c = c + 1 WHERE k = 99").unwrap();
    n.execute("SET ndp = on").unwrap();
    n.execute("BEGIN").unwrap();
    let job = thread::spawn(move || {
        let r = n.execute("UPDATE t SET c = c + 10");
        (n, r)
    });
    thread::sleep(Duration::from_millis(300));
    assert!(!job.is_finished(), "the NDP job must wait for row 99");
    let asked = Instant::now();
    let e = h.execute("UPDATE t SET c = c + 1 WHERE k = 0").unwrap_err();
    let took = asked.elapsed();
    assert_eq!(e.code, SqlState::DEADLOCK_DETECTED, "{e:?}");
    assert!(
        took < Duration::from_secs(4),
        "found by the deadlock search, not a lock-wait bound: {took:?}"
    );
    assert!(db.stat("txn.deadlocks") >= 1);
    h.execute("ROLLBACK").unwrap();
    let (mut n, r) = job.join().unwrap();
    r.unwrap();
    n.execute("COMMIT").unwrap();
    assert_eq!(one(&mut h, "SELECT sum(c) FROM t"), "1000");
    assert_eq!(one(&mut h, "SELECT c FROM t WHERE k = 99"), "10");
}

/// With a short deadlock_timeout the same cycle ends sooner; a cycle of
/// host transactions only is still found the moment it closes.
#[test]
fn deadlock_timeout_is_a_session_setting() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(dir.path(), config()).unwrap();
    let mut a = setup(&db, 10);
    assert_eq!(one(&mut a, "SHOW deadlock_timeout"), "1s");
    let e = a.execute("SET deadlock_timeout = 0").unwrap_err();
    assert_eq!(e.code, SqlState::INVALID_PARAMETER_VALUE);
    a.execute("SET deadlock_timeout = '150ms'").unwrap();
    assert_eq!(one(&mut a, "SHOW deadlock_timeout"), "150ms");
    a.execute("SET deadlock_timeout = 2000").unwrap();
    assert_eq!(one(&mut a, "SHOW deadlock_timeout"), "2s");

    let mut b = Session::new(db.clone());
    a.execute("BEGIN").unwrap();
    b.execute("BEGIN").unwrap();
    a.execute("UPDATE t SET c = 1 WHERE k = 1").unwrap();
    b.execute("UPDATE t SET c = 2 WHERE k = 2").unwrap();
    let waiter = thread::spawn(move || {
        let r = a.execute("UPDATE t SET c = 1 WHERE k = 2");
        (a, r)
    });
    while db.stat("txn.active") < 2 || !waits(&db) {
        thread::sleep(Duration::from_millis(5));
    }
    let e = b.execute("UPDATE t SET c = 2 WHERE k = 1").unwrap_err();
    assert_eq!(e.code, SqlState::DEADLOCK_DETECTED);
    b.execute("ROLLBACK").unwrap();
    let (mut a, r) = waiter.join().unwrap();
    r.unwrap();
    a.execute("COMMIT").unwrap();
    assert_eq!(one(&mut b, "SELECT sum(c) FROM t"), "2");
}

fn waits(db: &Database) -> bool {
    db.lock_waiters() > 0
}

/// `SET lock_timeout` bounds this session's waits (55P03), as PostgreSQL's.
#[test]
fn lock_timeout_is_a_session_setting() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_with(dir.path(), config()).unwrap();
    let mut a = setup(&db, 10);
    let mut b = Session::new(db.clone());
    assert_eq!(one(&mut b, "SHOW lock_timeout"), "0");
    b.execute("SET lock_timeout = '50ms'").unwrap();
    assert_eq!(one(&mut b, "SHOW lock_timeout"), "50ms");
    a.execute("BEGIN").unwrap();
    a.execute("UPDATE t SET c = 1 WHERE k = 1").unwrap();
    let e = b.execute("UPDATE t SET c = 2 WHERE k = 1").unwrap_err();
    assert_eq!(e.code, SqlState::LOCK_NOT_AVAILABLE);
    assert_eq!(e.message, "canceling statement due to lock timeout");
    a.execute("COMMIT").unwrap();
    b.execute("UPDATE t SET c = 2 WHERE k = 1").unwrap();
    assert_eq!(one(&mut b, "SELECT c FROM t WHERE k = 1"), "2");
}
