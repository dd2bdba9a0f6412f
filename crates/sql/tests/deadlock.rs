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
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
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
    eprintln!("host and NDP job crossing: 40P01 after {took:?}");
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

/// Two transactions whose update jobs wait on each other on the device
/// (no host waiter in the cycle): the younger one's job is cancelled and
/// its statement fails with 40P01; the other goes on.
#[test]
fn two_ndp_updates_crossing_on_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    let mut a = Session::new(db.clone());
    for t in ["t1", "t2"] {
        a.execute(&format!(
            "CREATE TABLE {t} (k INT PRIMARY KEY, c BIGINT NOT NULL, g INT NOT NULL)"
        ))
        .unwrap();
        let vals: Vec<String> = (0..50).map(|k| format!("({k}, 0, {k})")).collect();
        a.execute(&format!("INSERT INTO {t} VALUES {}", vals.join(", ")))
            .unwrap();
    }
    let mut b = Session::new(db.clone());
    for s in [&mut a, &mut b] {
        s.execute("SET ndp = on").unwrap();
        s.execute("BEGIN").unwrap();
    }
    // Non-key predicates: both statements run on the device.
    a.execute("UPDATE t1 SET c = c + 1 WHERE g = 7").unwrap();
    b.execute("UPDATE t2 SET c = c + 1 WHERE g = 7").unwrap();
    let first = thread::spawn(move || {
        let r = a.execute("UPDATE t2 SET c = c + 10 WHERE g = 7");
        (a, r)
    });
    thread::sleep(Duration::from_millis(300));
    assert!(!first.is_finished(), "a's job waits for b's lock");
    let asked = Instant::now();
    let rb = b.execute("UPDATE t1 SET c = c + 10 WHERE g = 7");
    let (mut a, ra) = first.join().unwrap();
    let took = asked.elapsed();
    eprintln!("two NDP jobs crossing: 40P01 after {took:?}");
    let codes = [&ra, &rb].map(|r| r.as_ref().err().map(|e| e.code));
    assert_eq!(
        codes
            .iter()
            .filter(|c| **c == Some(SqlState::DEADLOCK_DETECTED))
            .count(),
        1,
        "exactly one victim: {ra:?} / {rb:?}"
    );
    assert!(codes.iter().any(|c| c.is_none()), "{ra:?} / {rb:?}");
    assert!(took < Duration::from_secs(4), "{took:?}");
    let (winner, loser) = if ra.is_ok() {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    loser.execute("ROLLBACK").unwrap();
    winner.execute("COMMIT").unwrap();
    let sum = |s: &mut Session| {
        (
            one(s, "SELECT sum(c) FROM t1 WHERE g = 7"),
            one(s, "SELECT sum(c) FROM t2 WHERE g = 7"),
        )
    };
    let (s1, s2) = sum(&mut a);
    // The winner's two updates: +1 on its own table, +10 on the other.
    assert!(
        (s1 == "1" && s2 == "10") || (s1 == "10" && s2 == "1"),
        "{s1} / {s2}"
    );
    assert!(db.stat("txn.deadlocks") >= 1);
}

/// With a short deadlock_timeout the same cycle ends sooner; a cycle of
/// host transactions only is still found the moment it closes.
#[test]
fn deadlock_timeout_is_a_session_setting() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
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
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
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
