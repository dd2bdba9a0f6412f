//! Controlled lock violation (update NDP §5.4): while an update-NDP
//! transaction moves its overflow logs at commit, host transactions
//! waiting for its rows take their locks — READ COMMITTED writers go on
//! with the new versions and commit after it (a commit dependency),
//! snapshot writers fail early with 40001 — instead of waiting out the
//! log movement.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use ndpdb_formats::{SqlState, Value};
use ndpdb_host::{Config, Database};
use ndpdb_sql::{Output, Session};

const ROWS: i64 = 20_000;

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

fn ok(s: &mut Session, sql: &str) {
    s.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
}

/// A table whose full update makes an overflow log of some megabytes
/// (its move is the window this is about).
fn setup(db: &Database) {
    let mut s = Session::new(db.clone());
    ok(
        &mut s,
        "CREATE TABLE t (k INT PRIMARY KEY, c BIGINT NOT NULL, pad TEXT)",
    );
    let pad = "x".repeat(300);
    for chunk in (0..ROWS).collect::<Vec<_>>().chunks(1000) {
        let vals: Vec<String> = chunk.iter().map(|k| format!("({k}, 0, '{pad}')")).collect();
        ok(&mut s, &format!("INSERT INTO t VALUES {}", vals.join(", ")));
    }
    db.flush().unwrap();
}

/// An update job over the whole table, committed with extended logging
/// and `ndp_lock_violation = on`, while `waiter` (started once the job
/// holds its locks) waits for row 7. Returns what the waiter reported and
/// when the NDP commit returned.
fn ndp_commit_beside<T: Send + 'static>(
    db: &Database,
    waiter: impl FnOnce(Session) -> T + Send + 'static,
) -> (T, Instant) {
    let mut n = Session::new(db.clone());
    ok(&mut n, "SET ndp = on");
    ok(&mut n, "SET ndp_logging = extended");
    ok(&mut n, "SET ndp_lock_violation = on");
    ok(&mut n, "BEGIN");
    ok(&mut n, "UPDATE t SET c = c + 1");
    let h = Session::new(db.clone());
    let waiting = db.clone();
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        let out = waiter(h);
        tx.send(Instant::now()).unwrap();
        out
    });
    // The waiter queues behind the job's lock on row 7.
    let t0 = Instant::now();
    while waiting.lock_waiters() == 0 {
        assert!(t0.elapsed() < Duration::from_secs(10), "no waiter");
        std::thread::sleep(Duration::from_millis(1));
    }
    ok(&mut n, "COMMIT");
    let committed = Instant::now();
    let out = thread.join().unwrap();
    let _ = rx.recv();
    (out, committed)
}

#[test]
fn ndp_lock_violation_is_a_setting() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    let mut s = Session::new(db);
    assert_eq!(one(&mut s, "SHOW ndp_lock_violation"), "off");
    ok(&mut s, "SET ndp_lock_violation = on");
    assert_eq!(one(&mut s, "SHOW ndp_lock_violation"), "on");
    let e = s.execute("SET ndp_lock_violation = sometimes").unwrap_err();
    assert_eq!(e.code, SqlState::INVALID_PARAMETER_VALUE);
}

/// A READ COMMITTED writer waiting for a row the job changed takes the
/// lock while the overflow log moves, writes on the job's version, and
/// its commit is acknowledged only after the job's.
#[test]
fn a_read_committed_waiter_writes_on_the_new_version_and_commits_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    setup(&db);
    ndp_commit_beside(&db, |mut h| {
        ok(&mut h, "BEGIN ISOLATION LEVEL READ COMMITTED");
        ok(&mut h, "UPDATE t SET c = c + 100 WHERE k = 7");
        ok(&mut h, "COMMIT");
    });
    // The waiter certified against the job's version while the job
    // committed (a dependency is only recorded then).
    assert_eq!(db.stat("ndp.lock_violations"), 1);
    assert_eq!(db.stat("ndp.commit_dependencies"), 1);
    // Most of the job's overflow log moved while it ran.
    let (moved, streamed) = (
        db.stat("ndp.overflow_bytes"),
        db.stat("ndp.overflow_streamed_bytes"),
    );
    assert!(streamed > 0 && streamed <= moved, "{streamed} of {moved}");
    let mut s = Session::new(db.clone());
    assert_eq!(one(&mut s, "SELECT c FROM t WHERE k = 7"), "101");
    assert_eq!(
        one(&mut s, "SELECT count(*) FROM t WHERE c = 1"),
        (ROWS - 1).to_string()
    );
    // Both survive a crash, and the log has the job's commit first.
    drop(s);
    db.close_like_a_crash();
    let (_, recovered) = ndpdb_wal::Wal::open(&dir.path().join("wal")).unwrap();
    let ndp_tx = recovered
        .records
        .iter()
        .find_map(|(_, r)| match r {
            ndpdb_wal::WalRecord::EndNdp { txid, .. } => Some(*txid),
            _ => None,
        })
        .expect("End-NDP");
    let commits: Vec<_> = recovered
        .records
        .iter()
        .filter_map(|(_, r)| match r {
            ndpdb_wal::WalRecord::Commit { txid } => Some(*txid),
            _ => None,
        })
        .collect();
    let at = commits.iter().position(|t| *t == ndp_tx).unwrap();
    assert_eq!(
        at,
        commits.len() - 2,
        "the dependent's commit follows: {commits:?}"
    );
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    let mut s = Session::new(db);
    assert_eq!(one(&mut s, "SELECT c FROM t WHERE k = 7"), "101");
    assert_eq!(
        one(&mut s, "SELECT sum(c) FROM t"),
        (ROWS + 100).to_string()
    );
}

/// A snapshot writer whose snapshot predates the job's commit fails with
/// 40001 as soon as the job is violable, not after its log has moved.
#[test]
fn a_snapshot_waiter_fails_early() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    setup(&db);
    ndp_commit_beside(&db, |mut h| {
        ok(&mut h, "BEGIN ISOLATION LEVEL REPEATABLE READ");
        let e = h
            .execute("UPDATE t SET c = c + 100 WHERE k = 7")
            .unwrap_err();
        assert_eq!(e.code, SqlState::SERIALIZATION_FAILURE, "{e:?}");
    });
    // It failed against the job's version while the job committed.
    assert_eq!(db.stat("ndp.violation_early_aborts"), 1);
    let mut s = Session::new(db.clone());
    assert_eq!(one(&mut s, "SELECT c FROM t WHERE k = 7"), "1");
    assert_eq!(db.stat("ndp.commit_dependencies"), 0);
}

/// Without lock violation the waiter waits out the whole commit.
#[test]
fn without_lock_violation_the_waiter_waits_for_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    setup(&db);
    let mut n = Session::new(db.clone());
    ok(&mut n, "SET ndp = on");
    ok(&mut n, "SET ndp_logging = extended");
    ok(&mut n, "BEGIN");
    ok(&mut n, "UPDATE t SET c = c + 1");
    let mut h = Session::new(db.clone());
    let waiting = db.clone();
    let thread = std::thread::spawn(move || {
        ok(&mut h, "BEGIN ISOLATION LEVEL READ COMMITTED");
        ok(&mut h, "UPDATE t SET c = c + 100 WHERE k = 7");
        let updated = Instant::now();
        ok(&mut h, "COMMIT");
        updated
    });
    while waiting.lock_waiters() == 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    ok(&mut n, "COMMIT");
    let committed = Instant::now();
    let updated = thread.join().unwrap();
    assert!(updated >= committed - Duration::from_millis(50));
    assert_eq!(db.stat("ndp.lock_violations"), 0);
    let mut s = Session::new(db);
    assert_eq!(one(&mut s, "SELECT c FROM t WHERE k = 7"), "101");
}
