//! Savepoints: ROLLBACK TO undoes the write set, the tuple locks and the
//! update-NDP statements since the savepoint; what came before commits
//! and survives a crash.

use ndpdb_formats::{SqlState, Value};
use ndpdb_host::{Config, Database};
use ndpdb_sql::{Output, Session};

fn config() -> Config {
    Config {
        autovacuum: false,
        ..Config::default()
    }
}

fn sum_count(s: &mut Session) -> (String, String) {
    match s.execute("SELECT sum(v), count(*) FROM t").unwrap().pop() {
        Some(Output::Rows { rows, .. }) => (
            rows[0][0].to_pg_text().unwrap_or_default(),
            rows[0][1].to_pg_text().unwrap_or_default(),
        ),
        o => panic!("{o:?}"),
    }
}

fn load(db: &Database, n: i64) -> Session {
    let mut s = Session::new(db.clone());
    s.execute("CREATE TABLE t (k INT PRIMARY KEY, v BIGINT NOT NULL)")
        .unwrap();
    let vals: Vec<String> = (1..=n).map(|k| format!("({k}, {k})")).collect();
    s.execute(&format!("INSERT INTO t VALUES {}", vals.join(", ")))
        .unwrap();
    db.flush().unwrap();
    s
}

#[test]
fn rollback_to_discards_device_updates_and_keeps_earlier_work_across_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
        let mut s = load(&db, 4000);
        s.execute("SET ndp = on").unwrap();
        s.execute("BEGIN").unwrap();
        s.execute("UPDATE t SET v = v + 1 WHERE k <= 100").unwrap();
        s.execute("SAVEPOINT a").unwrap();
        s.execute("UPDATE t SET v = v + 1000").unwrap();
        s.execute("DELETE FROM t WHERE k > 3000").unwrap();
        assert_eq!(sum_count(&mut s), ("7501600".into(), "3000".into()));
        s.execute("ROLLBACK TO SAVEPOINT a").unwrap();
        // As they were at the savepoint: 1..4000 plus 100.
        assert_eq!(sum_count(&mut s), ("8002100".into(), "4000".into()));
        s.execute("SAVEPOINT b").unwrap();
        s.execute("UPDATE t SET v = 0 WHERE k = 4000").unwrap();
        s.execute("RELEASE b").unwrap();
        s.execute("COMMIT").unwrap();
        assert_eq!(sum_count(&mut s), ("7998100".into(), "4000".into()));
        db.close_like_a_crash();
    }
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    let mut s = Session::new(db);
    assert_eq!(sum_count(&mut s), ("7998100".into(), "4000".into()));
    s.execute("SET ndp = on").unwrap();
    assert_eq!(sum_count(&mut s), ("7998100".into(), "4000".into()));
}

#[test]
fn rollback_to_releases_the_locks_taken_since() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    let mut a = load(&db, 10);
    let mut b = Session::new(db.clone());
    b.execute("SET lock_timeout = '200ms'").unwrap();
    a.execute(
        "BEGIN; UPDATE t SET v = -1 WHERE k = 1; SAVEPOINT s; UPDATE t SET v = -2 WHERE k = 2",
    )
    .unwrap();
    let e = b.execute("UPDATE t SET v = 20 WHERE k = 2").unwrap_err();
    assert_eq!(e.code, SqlState::LOCK_NOT_AVAILABLE);
    a.execute("ROLLBACK TO s").unwrap();
    b.execute("UPDATE t SET v = 20 WHERE k = 2").unwrap();
    // Taken before the savepoint: still held.
    let e = b.execute("UPDATE t SET v = 10 WHERE k = 1").unwrap_err();
    assert_eq!(e.code, SqlState::LOCK_NOT_AVAILABLE);
    a.execute("COMMIT").unwrap();
    match b
        .execute("SELECT v FROM t WHERE k <= 2 ORDER BY k")
        .unwrap()
        .pop()
    {
        Some(Output::Rows { rows, .. }) => {
            assert_eq!(rows, vec![vec![Value::BigInt(-1)], vec![Value::BigInt(20)]])
        }
        o => panic!("{o:?}"),
    }
}

#[test]
fn a_failed_block_with_a_savepoint_recovers_with_rollback_to() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    let mut s = load(&db, 3);
    s.execute("BEGIN; INSERT INTO t VALUES (10, 10); SAVEPOINT s; INSERT INTO t VALUES (11, 11)")
        .unwrap();
    let e = s.execute("INSERT INTO t VALUES (1, 1)").unwrap_err();
    assert_eq!(e.code, SqlState::UNIQUE_VIOLATION);
    let e = s.execute("SELECT 1").unwrap_err();
    assert_eq!(e.code, SqlState::IN_FAILED_SQL_TRANSACTION);
    let e = s.execute("ROLLBACK TO nope").unwrap_err();
    assert_eq!(e.code, SqlState::INVALID_SAVEPOINT_SPECIFICATION);
    s.execute("ROLLBACK TO s").unwrap();
    s.execute("INSERT INTO t VALUES (12, 12); COMMIT").unwrap();
    assert_eq!(sum_count(&mut s), ("28".into(), "5".into()));
}

#[test]
fn read_only_transactions_refuse_writes_and_copy() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    let mut s = load(&db, 3);
    s.execute("BEGIN READ ONLY").unwrap();
    let p = s.prepare("INSERT INTO t (k, v) VALUES ($1, $2)").unwrap();
    let e = s
        .insert_rows(&p, vec![vec![Value::Int(9), Value::BigInt(9)]], &|_, e| e)
        .unwrap_err();
    assert_eq!(e.code, SqlState::READ_ONLY_SQL_TRANSACTION);
    assert_eq!(
        e.message,
        "cannot execute COPY FROM in a read-only transaction"
    );
    s.execute("ROLLBACK").unwrap();
    s.execute("SET default_transaction_read_only = on").unwrap();
    let e = s.execute("UPDATE t SET v = 0").unwrap_err();
    assert_eq!(
        e.message,
        "cannot execute UPDATE in a read-only transaction"
    );
    assert_eq!(sum_count(&mut s), ("6".into(), "3".into()));
}
