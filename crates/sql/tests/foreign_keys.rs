//! FOREIGN KEYs between concurrent transactions and across a reopen: a
//! referencing insert and the removal of its key wait for each other as
//! in PostgreSQL (the referenced key's FOR KEY SHARE lock), whichever
//! comes first; the loser gets 23503 once the winner commits, and goes
//! on if the winner rolls back. Constraints are durable.

use std::thread;
use std::time::Duration;

use ndpdb_formats::{SqlState, Value};
use ndpdb_host::{Config, Database};
use ndpdb_sql::{Output, Session};

fn open(dir: &std::path::Path) -> Database {
    let config = Config {
        autovacuum: false,
        ..Config::default()
    };
    ndpdb_embedded::open_with(dir, config).unwrap()
}

fn count(s: &mut Session, sql: &str) -> i64 {
    match s.execute(sql).unwrap().pop() {
        Some(Output::Rows { rows, .. }) => match rows[0][0] {
            Value::BigInt(n) => n,
            ref v => panic!("{sql}: {v:?}"),
        },
        o => panic!("{sql}: {o:?}"),
    }
}

fn schema(db: &Database) -> Session {
    let mut s = Session::new(db.clone());
    s.execute("CREATE TABLE parent (id INT PRIMARY KEY)")
        .unwrap();
    s.execute("CREATE TABLE child (id INT PRIMARY KEY, p INT REFERENCES parent)")
        .unwrap();
    s.execute("INSERT INTO parent VALUES (1), (2)").unwrap();
    s
}

/// Runs `sql` in `s` on a thread: its result once the statement ends.
fn later(mut s: Session, sql: &'static str) -> thread::JoinHandle<(Session, Result<(), SqlState>)> {
    thread::spawn(move || {
        let r = s.execute(sql).map(|_| ()).map_err(|e| e.code);
        (s, r)
    })
}

fn wait_for_a_waiter(db: &Database) {
    for _ in 0..500 {
        if db.lock_waiters() > 0 {
            return;
        }
        thread::sleep(Duration::from_millis(10));
    }
    panic!("nobody waits");
}

#[test]
fn deleting_a_key_waits_for_an_uncommitted_reference_then_fails() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut a = schema(&db);
    a.execute("BEGIN").unwrap();
    a.execute("INSERT INTO child VALUES (10, 1)").unwrap();
    let b = later(Session::new(db.clone()), "DELETE FROM parent WHERE id = 1");
    wait_for_a_waiter(&db);
    a.execute("COMMIT").unwrap();
    let (mut b, r) = b.join().unwrap();
    assert_eq!(r, Err(SqlState::FOREIGN_KEY_VIOLATION));
    assert_eq!(count(&mut b, "SELECT count(*) FROM parent WHERE id = 1"), 1);
}

#[test]
fn deleting_a_key_goes_on_when_the_reference_rolls_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut a = schema(&db);
    a.execute("BEGIN").unwrap();
    a.execute("INSERT INTO child VALUES (10, 1)").unwrap();
    let b = later(Session::new(db.clone()), "DELETE FROM parent WHERE id = 1");
    wait_for_a_waiter(&db);
    a.execute("ROLLBACK").unwrap();
    let (mut b, r) = b.join().unwrap();
    assert_eq!(r, Ok(()));
    assert_eq!(count(&mut b, "SELECT count(*) FROM parent"), 1);
}

#[test]
fn a_reference_waits_for_an_uncommitted_delete_of_its_key() {
    for commit in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path());
        let mut a = schema(&db);
        a.execute("BEGIN").unwrap();
        a.execute("DELETE FROM parent WHERE id = 2").unwrap();
        let b = later(Session::new(db.clone()), "INSERT INTO child VALUES (20, 2)");
        wait_for_a_waiter(&db);
        a.execute(if commit { "COMMIT" } else { "ROLLBACK" })
            .unwrap();
        let (mut b, r) = b.join().unwrap();
        if commit {
            assert_eq!(r, Err(SqlState::FOREIGN_KEY_VIOLATION));
            assert_eq!(count(&mut b, "SELECT count(*) FROM child"), 0);
        } else {
            assert_eq!(r, Ok(()));
            assert_eq!(count(&mut b, "SELECT count(*) FROM child"), 1);
        }
    }
}

#[test]
fn references_to_one_key_do_not_wait_for_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut a = schema(&db);
    let mut b = Session::new(db.clone());
    a.execute("BEGIN").unwrap();
    b.execute("BEGIN").unwrap();
    a.execute("INSERT INTO child VALUES (1, 1)").unwrap();
    b.execute("INSERT INTO child VALUES (2, 1)").unwrap();
    // An UPDATE of the parent that keeps its key takes no key lock.
    b.execute("UPDATE parent SET id = id WHERE id = 1").unwrap();
    a.execute("COMMIT").unwrap();
    b.execute("COMMIT").unwrap();
    assert_eq!(count(&mut a, "SELECT count(*) FROM child WHERE p = 1"), 2);
}

#[test]
fn constraints_survive_a_reopen_and_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = schema(&db);
        s.execute(
            "CREATE TABLE grandchild (c INT, FOREIGN KEY (c) REFERENCES child ON DELETE CASCADE)",
        )
        .unwrap();
        s.execute("INSERT INTO child VALUES (5, 2)").unwrap();
        s.execute("INSERT INTO grandchild VALUES (5), (5)").unwrap();
        drop(s);
        db.close_like_a_crash();
    }
    let db = open(dir.path());
    let mut s = Session::new(db.clone());
    let e = s.execute("INSERT INTO child VALUES (6, 99)").unwrap_err();
    assert_eq!(e.code, SqlState::FOREIGN_KEY_VIOLATION);
    let e = s.execute("DELETE FROM parent WHERE id = 2").unwrap_err();
    assert_eq!(e.code, SqlState::FOREIGN_KEY_VIOLATION);
    s.execute("DELETE FROM child WHERE id = 5").unwrap();
    assert_eq!(count(&mut s, "SELECT count(*) FROM grandchild"), 0);
    s.execute("DELETE FROM parent WHERE id = 2").unwrap();
}
