//! An update or lock job on the device never waits for the tuple locks
//! its own transaction took on the host. Those locks sit in the shared
//! lock table as host-shared entries; a job queued behind one waited for
//! itself until the deadlock search (after `deadlock_timeout`) failed the
//! statement with 40P01 — every time the same rows came up again.
//!
//! With a one-bucket SLT every tuple shares one lock, so each case here
//! is certain to hit it; the default SLT hits it whenever a host lock and
//! a tuple of the job hash to one bucket (always for the same tuple).

use std::thread;
use std::time::{Duration, Instant};

use ndpdb_formats::{SqlState, Value};
use ndpdb_host::{Config, Database};
use ndpdb_sql::{Output, Session};

fn config(slt_buckets: usize) -> Config {
    Config {
        slt_buckets,
        autovacuum: false,
        lock_timeout: Some(Duration::from_secs(5)),
        ..Config::default()
    }
}

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    match s
        .execute(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
        .pop()
    {
        Some(Output::Rows { rows, .. }) => rows,
        o => panic!("{sql}: expected rows, got {o:?}"),
    }
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(x) => *x as i64,
        Value::BigInt(x) => *x,
        Value::Numeric(_) => v
            .to_pg_text()
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("not an integer: {v:?}")),
        v => panic!("not an integer: {v:?}"),
    }
}

/// Runs `sql`, which must succeed well within the deadlock timeout.
fn quick(s: &mut Session, sql: &str) -> String {
    let t = Instant::now();
    let out = s.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    assert!(
        t.elapsed() < Duration::from_millis(900),
        "{sql} took {:?}: it waited for a lock",
        t.elapsed()
    );
    match out.last() {
        Some(Output::Command { tag }) => tag.clone(),
        Some(Output::Rows { rows, .. }) => format!("{} rows", rows.len()),
        o => format!("{o:?}"),
    }
}

fn setup(db: &Database) -> Session {
    let mut s = Session::new(db.clone());
    s.execute("CREATE TABLE t (k INT PRIMARY KEY, c BIGINT NOT NULL, g BIGINT NOT NULL)")
        .unwrap();
    s.execute("CREATE TABLE u (k INT PRIMARY KEY, v BIGINT NOT NULL)")
        .unwrap();
    let vals: Vec<String> = (0..100).map(|k| format!("({k}, 0, {})", k % 10)).collect();
    s.execute(&format!("INSERT INTO t VALUES {}", vals.join(", ")))
        .unwrap();
    s.execute("INSERT INTO u VALUES (1, 0), (2, 0)").unwrap();
    s.execute("SET ndp = on").unwrap();
    let plan = rows(&mut s, "EXPLAIN UPDATE t SET c = c + 1 WHERE g = 3");
    assert_eq!(
        plan[0][0].to_pg_text().as_deref(),
        Some("Update on t [device]")
    );
    s
}

fn sum_c(s: &mut Session, filter: &str) -> i64 {
    int(&rows(s, &format!("SELECT sum(c) FROM t WHERE {filter}"))[0][0])
}

#[test]
fn device_jobs_after_host_writes_and_row_locks_of_their_transaction() {
    for buckets in [1, 1 << 16] {
        let dir = tempfile::tempdir().unwrap();
        let db = ndpdb_embedded::open_with(dir.path(), config(buckets)).unwrap();
        let mut s = setup(&db);
        for round in 0..3 {
            // A host write in another table, a row of t locked on the
            // host, then device UPDATE and DELETE over that very row.
            s.execute("BEGIN").unwrap();
            quick(&mut s, "UPDATE u SET v = v + 1 WHERE k = 1");
            quick(&mut s, "SELECT c FROM t WHERE k = 13 FOR UPDATE");
            assert_eq!(
                quick(&mut s, "UPDATE t SET c = c + 1 WHERE g = 3"),
                "UPDATE 10"
            );
            s.execute("COMMIT").unwrap();
            assert_eq!(sum_c(&mut s, "g = 3"), 10 * (round + 1));
            // A rolled-back one leaves nothing behind either.
            s.execute("BEGIN").unwrap();
            quick(&mut s, "UPDATE u SET v = v + 100 WHERE k = 2");
            quick(&mut s, "UPDATE t SET c = c + 1000 WHERE g = 4");
            s.execute("ROLLBACK").unwrap();
        }
        // A device DELETE after a host INSERT into the table's bucket.
        s.execute("BEGIN").unwrap();
        quick(&mut s, "INSERT INTO u VALUES (3, 0)");
        assert_eq!(quick(&mut s, "DELETE FROM t WHERE g = 9"), "DELETE 10");
        s.execute("COMMIT").unwrap();
        // Savepoints: a device update rolled back, then done again.
        s.execute("BEGIN").unwrap();
        quick(&mut s, "UPDATE u SET v = v + 1 WHERE k = 3");
        s.execute("SAVEPOINT a").unwrap();
        quick(&mut s, "UPDATE t SET c = c + 500 WHERE g = 5");
        s.execute("ROLLBACK TO SAVEPOINT a").unwrap();
        quick(&mut s, "UPDATE t SET c = c + 5 WHERE g = 5");
        s.execute("COMMIT").unwrap();
        let mut other = Session::new(db.clone());
        other.execute("SET lock_timeout = '1s'").unwrap();
        assert_eq!(sum_c(&mut other, "g = 3"), 30);
        assert_eq!(sum_c(&mut other, "g = 4"), 0);
        assert_eq!(sum_c(&mut other, "g = 5"), 50);
        assert_eq!(int(&rows(&mut other, "SELECT count(*) FROM t")[0][0]), 90);
        assert_eq!(
            rows(&mut other, "SELECT k, v FROM u ORDER BY k"),
            vec![
                vec![Value::Int(1), Value::BigInt(3)],
                vec![Value::Int(2), Value::BigInt(0)],
                vec![Value::Int(3), Value::BigInt(1)],
            ]
        );
        // No lock is left: another session changes every row at once.
        other.execute("UPDATE t SET c = c + 1").unwrap();
        other.execute("UPDATE u SET v = v + 1").unwrap();
    }
}

/// In-storage SELECT … FOR UPDATE after a host write of its transaction:
/// the rows are locked (others wait) and the following UPDATE changes them.
#[test]
fn device_row_locks_after_a_host_write_of_their_transaction() {
    for buckets in [1, 1 << 16] {
        let dir = tempfile::tempdir().unwrap();
        let db = ndpdb_embedded::open_with(dir.path(), config(buckets)).unwrap();
        let mut s = setup(&db);
        s.execute("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
        quick(&mut s, "UPDATE u SET v = 1 WHERE k = 1");
        // A row the device job locks again, locked on the host first.
        assert_eq!(
            quick(&mut s, "SELECT c FROM t WHERE k = 21 FOR UPDATE"),
            "1 rows"
        );
        let plan = rows(&mut s, "EXPLAIN SELECT k FROM t WHERE g = 2 FOR UPDATE");
        let plan: Vec<String> = plan
            .iter()
            .map(|r| r[0].to_pg_text().unwrap_or_default())
            .collect();
        assert!(plan.iter().any(|l| l.contains("locks rows")), "{plan:?}");
        assert_eq!(
            quick(&mut s, "SELECT k FROM u WHERE k = 2 FOR UPDATE"),
            "1 rows"
        );
        assert_eq!(
            quick(&mut s, "SELECT k, c FROM t WHERE g = 1 FOR UPDATE"),
            "10 rows"
        );
        let mut other = Session::new(db.clone());
        other.execute("SET lock_timeout = '200ms'").unwrap();
        let e = other
            .execute("UPDATE t SET c = 1 WHERE k = 31")
            .unwrap_err();
        assert_eq!(e.code, SqlState::LOCK_NOT_AVAILABLE);
        quick(&mut s, "UPDATE t SET c = c + 2 WHERE g = 1");
        s.execute("COMMIT").unwrap();
        assert_eq!(sum_c(&mut other, "g = 1"), 20);
        assert_eq!(sum_c(&mut other, "g = 2"), 0);
        other.execute("UPDATE t SET c = 1 WHERE k = 31").unwrap();
    }
}

/// With one bucket, another transaction that joined this transaction's
/// host group may hold a tuple the device job changes: the job's change
/// waits for that lock and, under READ COMMITTED, is redone on the
/// version committed meanwhile (no lost update); under REPEATABLE READ
/// it fails with 40001 — never 40P01.
#[test]
fn a_tuple_held_by_a_host_group_member_is_waited_for_and_validated() {
    for (isolation, expect) in [("READ COMMITTED", Ok(())), ("REPEATABLE READ", Err(()))] {
        let dir = tempfile::tempdir().unwrap();
        let db = ndpdb_embedded::open_with(dir.path(), config(1)).unwrap();
        let mut s = setup(&db);
        s.execute(&format!("BEGIN ISOLATION LEVEL {isolation}"))
            .unwrap();
        quick(&mut s, "SELECT count(*) FROM t");
        quick(&mut s, "UPDATE u SET v = 1 WHERE k = 1");
        // Another transaction shares the one bucket (it joins the host
        // group) and holds tuple k = 3, which the device job changes.
        let mut other = Session::new(db.clone());
        other.execute("BEGIN").unwrap();
        quick(&mut other, "UPDATE t SET c = 40 WHERE k = 3");
        let committer = thread::spawn(move || {
            thread::sleep(Duration::from_millis(300));
            other.execute("COMMIT").unwrap();
        });
        let t = Instant::now();
        let r = s.execute("UPDATE t SET c = c + 1 WHERE g = 3");
        committer.join().unwrap();
        assert!(t.elapsed() >= Duration::from_millis(250), "it waited");
        match expect {
            Ok(()) => {
                assert!(r.is_ok(), "{r:?}");
                s.execute("COMMIT").unwrap();
                // k = 3 got 40 + 1, the other nine rows 1.
                assert_eq!(sum_c(&mut s, "g = 3"), 41 + 9);
                assert_eq!(int(&rows(&mut s, "SELECT c FROM t WHERE k = 3")[0][0]), 41);
            }
            Err(()) => {
                let e = r.unwrap_err();
                assert_eq!(e.code, SqlState::SERIALIZATION_FAILURE, "{e:?}");
                s.execute("ROLLBACK").unwrap();
                assert_eq!(sum_c(&mut s, "g = 3"), 40);
            }
        }
        // Nothing stays locked.
        s.execute("UPDATE t SET c = 0").unwrap();
    }
}
