//! Isolation with real concurrent transactions on threads.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use ndpdb_formats::{SqlState, Value};
use ndpdb_host::Database;
use ndpdb_sql::{Output, Session};

fn setup() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let mut s = Session::new(db.clone());
    s.execute("CREATE TABLE acct (id INT PRIMARY KEY, v BIGINT NOT NULL); INSERT INTO acct VALUES (1, 0), (2, 0), (3, 100)")
        .unwrap();
    (dir, db)
}

fn value(s: &mut Session, sql: &str) -> Value {
    match s.execute(sql).unwrap().pop().unwrap() {
        Output::Rows { rows, .. } => rows[0][0].clone(),
        o => panic!("expected rows, got {o:?}"),
    }
}

fn session(db: &Database) -> Session {
    Session::new(db.clone())
}

/// Waits until some transaction is blocked on a lock.
fn wait_for_waiter(db: &Database) {
    let start = Instant::now();
    while db.stat("locks.waiting") < 1 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no transaction started waiting"
        );
        thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn no_dirty_read() {
    let (_d, db) = setup();
    let mut a = session(&db);
    let mut b = session(&db);
    a.execute("BEGIN; UPDATE acct SET v = 42 WHERE id = 1")
        .unwrap();
    assert_eq!(
        value(&mut b, "SELECT v FROM acct WHERE id = 1"),
        Value::BigInt(0)
    );
    assert_eq!(
        value(&mut b, "SELECT sum(v) FROM acct"),
        Value::Numeric(ndpdb_formats::Decimal::from_i64(100))
    );
    // The writer sees its own write.
    assert_eq!(
        value(&mut a, "SELECT v FROM acct WHERE id = 1"),
        Value::BigInt(42)
    );
    a.execute("ROLLBACK").unwrap();
    assert_eq!(
        value(&mut b, "SELECT v FROM acct WHERE id = 1"),
        Value::BigInt(0)
    );
}

#[test]
fn lost_update_is_prevented_under_snapshot() {
    let (_d, db) = setup();
    let mut a = session(&db);
    let mut b = session(&db);
    a.execute("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
    b.execute("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
    assert_eq!(
        value(&mut a, "SELECT v FROM acct WHERE id = 1"),
        Value::BigInt(0)
    );
    assert_eq!(
        value(&mut b, "SELECT v FROM acct WHERE id = 1"),
        Value::BigInt(0)
    );
    a.execute("UPDATE acct SET v = v + 1 WHERE id = 1").unwrap();
    let db2 = db.clone();
    let h = thread::spawn(move || {
        let r = b.execute("UPDATE acct SET v = v + 1 WHERE id = 1");
        (b, r)
    });
    wait_for_waiter(&db2);
    a.execute("COMMIT").unwrap();
    let (mut b, r) = h.join().unwrap();
    let e = r.unwrap_err();
    assert_eq!(e.code, SqlState::SERIALIZATION_FAILURE);
    assert_eq!(b.transaction_status(), 'E');
    b.execute("ROLLBACK").unwrap();
    assert_eq!(
        value(&mut b, "SELECT v FROM acct WHERE id = 1"),
        Value::BigInt(1)
    );
}

#[test]
fn snapshot_reads_are_repeatable() {
    let (_d, db) = setup();
    let mut a = session(&db);
    let mut b = session(&db);
    a.execute("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
    assert_eq!(
        value(&mut a, "SELECT v FROM acct WHERE id = 3"),
        Value::BigInt(100)
    );
    b.execute("UPDATE acct SET v = 7 WHERE id = 3; INSERT INTO acct VALUES (4, 4); DELETE FROM acct WHERE id = 2")
        .unwrap();
    assert_eq!(
        value(&mut a, "SELECT v FROM acct WHERE id = 3"),
        Value::BigInt(100)
    );
    assert_eq!(value(&mut a, "SELECT count(*) FROM acct"), Value::BigInt(3));
    a.execute("COMMIT").unwrap();
    assert_eq!(
        value(&mut a, "SELECT v FROM acct WHERE id = 3"),
        Value::BigInt(7)
    );
    assert_eq!(value(&mut a, "SELECT count(*) FROM acct"), Value::BigInt(3));
}

#[test]
fn read_committed_sees_commits_between_statements() {
    let (_d, db) = setup();
    let mut a = session(&db);
    let mut b = session(&db);
    a.execute("BEGIN ISOLATION LEVEL READ COMMITTED").unwrap();
    assert_eq!(
        value(&mut a, "SELECT v FROM acct WHERE id = 3"),
        Value::BigInt(100)
    );
    b.execute("UPDATE acct SET v = 5 WHERE id = 3").unwrap();
    assert_eq!(
        value(&mut a, "SELECT v FROM acct WHERE id = 3"),
        Value::BigInt(5)
    );
    a.execute("COMMIT").unwrap();
}

#[test]
fn read_committed_writer_rechecks_after_waiting() {
    let (_d, db) = setup();
    let mut a = session(&db);
    let mut b = session(&db);
    let mut c = session(&db);
    for s in [&mut a, &mut b, &mut c] {
        s.execute("SET default_transaction_isolation = 'read committed'")
            .unwrap();
    }
    a.execute("BEGIN; UPDATE acct SET v = v + 10 WHERE id = 1")
        .unwrap();
    let db2 = db.clone();
    // b increments the new version; c's predicate no longer holds after a commits.
    let hb = thread::spawn(move || {
        let r = b.execute("UPDATE acct SET v = v + 1 WHERE id = 1");
        (b, r)
    });
    wait_for_waiter(&db2);
    let hc = thread::spawn(move || {
        let r = c.execute("UPDATE acct SET v = 99 WHERE id = 1 AND v = 0");
        (c, r)
    });
    while db.stat("locks.waiting") < 2 {
        thread::sleep(Duration::from_millis(2));
    }
    a.execute("COMMIT").unwrap();
    let (_, rb) = hb.join().unwrap();
    let (_, rc) = hc.join().unwrap();
    assert_eq!(rb.unwrap()[0].tag(), "UPDATE 1");
    assert_eq!(rc.unwrap()[0].tag(), "UPDATE 0");
    assert_eq!(
        value(&mut a, "SELECT v FROM acct WHERE id = 1"),
        Value::BigInt(11)
    );
}

#[test]
fn blocked_writer_wakes_on_commit_and_on_abort() {
    let (_d, db) = setup();
    for end in ["COMMIT", "ROLLBACK"] {
        let mut a = session(&db);
        let mut b = session(&db);
        b.execute("SET default_transaction_isolation = 'read committed'")
            .unwrap();
        a.execute("BEGIN; UPDATE acct SET v = v + 1 WHERE id = 2")
            .unwrap();
        let before = value(&mut b, "SELECT v FROM acct WHERE id = 2");
        let h = thread::spawn(move || {
            b.execute("UPDATE acct SET v = v + 100 WHERE id = 2")
                .map(|_| ())
        });
        wait_for_waiter(&db);
        a.execute(end).unwrap();
        h.join().unwrap().unwrap();
        let expect = before.as_i64().unwrap() + 100 + if end == "COMMIT" { 1 } else { 0 };
        assert_eq!(
            value(&mut a, "SELECT v FROM acct WHERE id = 2"),
            Value::BigInt(expect)
        );
    }
}

#[test]
fn deadlock_is_detected_and_the_survivor_proceeds() {
    let (_d, db) = setup();
    let mut a = session(&db);
    let mut b = session(&db);
    a.execute("BEGIN; UPDATE acct SET v = 1 WHERE id = 1")
        .unwrap();
    b.execute("BEGIN; UPDATE acct SET v = 2 WHERE id = 2")
        .unwrap();
    let h = thread::spawn(move || {
        let r = a.execute("UPDATE acct SET v = 1 WHERE id = 2");
        (a, r)
    });
    wait_for_waiter(&db);
    let e = b.execute("UPDATE acct SET v = 2 WHERE id = 1").unwrap_err();
    assert_eq!(e.code, SqlState::DEADLOCK_DETECTED);
    // b's transaction is aborted; its locks are gone, so a proceeds.
    let (mut a, r) = h.join().unwrap();
    r.unwrap();
    a.execute("COMMIT").unwrap();
    assert_eq!(
        b.execute("SELECT 1").unwrap_err().code,
        SqlState::IN_FAILED_SQL_TRANSACTION
    );
    assert_eq!(b.execute("COMMIT").unwrap()[0].tag(), "ROLLBACK");
    assert_eq!(
        value(&mut b, "SELECT v FROM acct WHERE id = 2"),
        Value::BigInt(1)
    );
}

#[test]
fn lock_timeout_gives_55p03() {
    let dir = tempfile::tempdir().unwrap();
    let config = ndpdb_host::Config {
        lock_timeout: Some(Duration::from_millis(50)),
        ..Default::default()
    };
    let db = ndpdb_embedded::open_with(dir.path(), config).unwrap();
    let mut a = session(&db);
    let mut b = session(&db);
    a.execute("CREATE TABLE t (k INT PRIMARY KEY); INSERT INTO t VALUES (1); BEGIN; DELETE FROM t WHERE k = 1")
        .unwrap();
    let e = b.execute("DELETE FROM t WHERE k = 1").unwrap_err();
    assert_eq!(e.code, SqlState::LOCK_NOT_AVAILABLE);
    a.execute("COMMIT").unwrap();
}

#[test]
fn concurrent_increments_are_never_lost() {
    let (_d, db) = setup();
    let threads = 4;
    let per_thread = 150;
    let db = Arc::new(db);
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let db = db.clone();
            thread::spawn(move || {
                let mut s = Session::new((*db).clone());
                let mut committed = 0;
                let mut i = 0;
                while committed < per_thread {
                    i += 1;
                    let k = 1 + (i + t) % 2;
                    let r = s.execute(&format!(
                        "BEGIN; UPDATE acct SET v = v + 1 WHERE id = {k}; UPDATE acct SET v = v + 1 WHERE id = 3; COMMIT"
                    ));
                    match r {
                        Ok(_) => committed += 1,
                        Err(e) => {
                            assert!(
                                [SqlState::SERIALIZATION_FAILURE, SqlState::DEADLOCK_DETECTED].contains(&e.code),
                                "unexpected error {e:?}"
                            );
                            s.execute("ROLLBACK").unwrap();
                        }
                    }
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let mut s = Session::new((*db).clone());
    let total = (threads * per_thread) as i64;
    assert_eq!(
        value(&mut s, "SELECT v FROM acct WHERE id = 3"),
        Value::BigInt(100 + total)
    );
    let a = value(&mut s, "SELECT v FROM acct WHERE id = 1")
        .as_i64()
        .unwrap();
    let b = value(&mut s, "SELECT v FROM acct WHERE id = 2")
        .as_i64()
        .unwrap();
    assert_eq!(a + b, total);
}

#[test]
fn error_in_block_aborts_until_rollback() {
    let (_d, db) = setup();
    let mut s = session(&db);
    s.execute("BEGIN; UPDATE acct SET v = 9 WHERE id = 1")
        .unwrap();
    assert_eq!(
        s.execute("SELECT 1/0").unwrap_err().code,
        SqlState::DIVISION_BY_ZERO
    );
    assert_eq!(
        s.execute("SELECT 1").unwrap_err().code,
        SqlState::IN_FAILED_SQL_TRANSACTION
    );
    assert_eq!(s.execute("ROLLBACK").unwrap()[0].tag(), "ROLLBACK");
    assert_eq!(
        value(&mut s, "SELECT v FROM acct WHERE id = 1"),
        Value::BigInt(0)
    );
    // A duplicate key inside a block aborts it too; nothing of it is kept.
    s.execute("BEGIN; INSERT INTO acct VALUES (10, 1)").unwrap();
    assert_eq!(
        s.execute("INSERT INTO acct VALUES (1, 1)")
            .unwrap_err()
            .code,
        SqlState::UNIQUE_VIOLATION
    );
    s.execute("COMMIT").unwrap();
    assert_eq!(
        value(&mut s, "SELECT count(*) FROM acct WHERE id = 10"),
        Value::BigInt(0)
    );
}

/// ALTER TABLE … ADD PRIMARY KEY builds its index while no transaction
/// runs: it waits for running ones, within lock_timeout (55P03) and
/// statement_timeout (57014), and completes once they end.
#[test]
fn adding_a_primary_key_waits_for_running_transactions() {
    let (_d, db) = setup();
    let mut a = session(&db);
    let mut b = session(&db);
    a.execute("CREATE TABLE k (a INT, b INT); INSERT INTO k VALUES (1, 1), (2, 2)")
        .unwrap();
    a.execute("BEGIN; INSERT INTO k VALUES (3, 3)").unwrap();
    b.execute("SET lock_timeout = '50ms'").unwrap();
    let e = b.execute("ALTER TABLE k ADD PRIMARY KEY (a)").unwrap_err();
    assert_eq!(e.code, SqlState::LOCK_NOT_AVAILABLE, "{e:?}");
    b.execute("SET lock_timeout = 0; SET statement_timeout = '50ms'")
        .unwrap();
    let e = b.execute("ALTER TABLE k ADD PRIMARY KEY (a)").unwrap_err();
    assert_eq!(e.code, SqlState::QUERY_CANCELED, "{e:?}");
    b.execute("SET statement_timeout = 0").unwrap();
    let alter = thread::spawn(move || {
        let r = b.execute("ALTER TABLE k ADD PRIMARY KEY (a)");
        (b, r)
    });
    thread::sleep(Duration::from_millis(100));
    assert!(
        !alter.is_finished(),
        "the build waits for the open transaction"
    );
    a.execute("COMMIT").unwrap();
    let (mut b, r) = alter.join().unwrap();
    r.unwrap();
    // The row the waited-for transaction inserted is indexed too.
    let e = b.execute("INSERT INTO k VALUES (3, 0)").unwrap_err();
    assert_eq!(e.code, SqlState::UNIQUE_VIOLATION);
    assert_eq!(value(&mut b, "SELECT b FROM k WHERE a = 3"), Value::Int(3));
}

/// `INSERT … ON CONFLICT DO NOTHING` waits for a concurrent inserter of
/// the key and then does nothing if it committed, inserts if it rolled
/// back (READ COMMITTED); under REPEATABLE READ a conflicting row the
/// snapshot does not see is 40001, as in PostgreSQL.
#[test]
fn on_conflict_do_nothing_waits_for_the_other_inserter() {
    let (_d, db) = setup();
    for (end, inserted) in [("COMMIT", "INSERT 0 0"), ("ROLLBACK", "INSERT 0 1")] {
        let mut a = session(&db);
        let mut b = session(&db);
        a.execute("DELETE FROM acct WHERE id = 7").unwrap();
        a.execute("BEGIN; INSERT INTO acct VALUES (7, 1)").unwrap();
        let h = thread::spawn(move || {
            b.execute("INSERT INTO acct VALUES (7, 2) ON CONFLICT DO NOTHING")
                .map(|mut o| o.pop().unwrap().tag())
        });
        wait_for_waiter(&db);
        a.execute(end).unwrap();
        assert_eq!(h.join().unwrap().unwrap(), inserted, "after {end}");
        let expect = if end == "COMMIT" { 1 } else { 2 };
        assert_eq!(
            value(&mut a, "SELECT v FROM acct WHERE id = 7"),
            Value::BigInt(expect)
        );
    }

    let mut a = session(&db);
    let mut b = session(&db);
    a.execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM acct")
        .unwrap();
    b.execute("INSERT INTO acct VALUES (8, 0)").unwrap();
    let err = a
        .execute("INSERT INTO acct VALUES (8, 1) ON CONFLICT DO NOTHING")
        .unwrap_err();
    assert_eq!(err.code, SqlState::SERIALIZATION_FAILURE);
    a.execute("ROLLBACK").unwrap();
    // A row the snapshot sees is simply left alone.
    a.execute("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
    let out = a
        .execute("INSERT INTO acct VALUES (8, 1) ON CONFLICT DO NOTHING")
        .unwrap();
    assert_eq!(out[0].tag(), "INSERT 0 0");
    a.execute("COMMIT").unwrap();
}

/// `ON CONFLICT DO UPDATE` waits for a concurrent inserter of the key and
/// then updates the row it committed (READ COMMITTED): two upserts of one
/// counter both count. Under REPEATABLE READ a row the snapshot does not
/// see is 40001.
#[test]
fn on_conflict_do_update_updates_the_row_the_other_inserter_committed() {
    let (_d, db) = setup();
    let mut a = session(&db);
    let mut b = session(&db);
    a.execute(
        "BEGIN; INSERT INTO acct VALUES (9, 1) ON CONFLICT (id) DO UPDATE SET v = acct.v + 1",
    )
    .unwrap();
    let h = thread::spawn(move || {
        b.execute("INSERT INTO acct VALUES (9, 1) ON CONFLICT (id) DO UPDATE SET v = acct.v + 1")
            .map(|mut o| o.pop().unwrap().tag())
    });
    wait_for_waiter(&db);
    a.execute("COMMIT").unwrap();
    assert_eq!(h.join().unwrap().unwrap(), "INSERT 0 1");
    assert_eq!(
        value(&mut a, "SELECT v FROM acct WHERE id = 9"),
        Value::BigInt(2)
    );

    let mut b = session(&db);
    a.execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM acct")
        .unwrap();
    b.execute("INSERT INTO acct VALUES (12, 0)").unwrap();
    let err = a
        .execute("INSERT INTO acct VALUES (12, 5) ON CONFLICT (id) DO UPDATE SET v = excluded.v")
        .unwrap_err();
    assert_eq!(err.code, SqlState::SERIALIZATION_FAILURE);
    a.execute("ROLLBACK").unwrap();
}
