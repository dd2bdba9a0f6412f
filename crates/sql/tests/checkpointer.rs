//! Checkpoints commits ask for are taken by the engine's checkpointer
//! thread: a commit past `checkpoint_wal_bytes` gets one without taking
//! it, sessions committing at once get one between them (not one each),
//! and a crash after background checkpoints loses no commit.

use std::time::{Duration, Instant};

use ndpdb_formats::Value;
use ndpdb_host::{Config, Database};
use ndpdb_sql::{Output, Session};

const THRESHOLD: u64 = 256 << 10;

fn config() -> Config {
    Config {
        delta_buffer_bytes: 64 << 10,
        checkpoint_wal_bytes: THRESHOLD,
        autovacuum: false,
        ..Config::default()
    }
}

fn open(dir: &std::path::Path) -> Database {
    ndpdb_embedded::open_with(dir, config()).unwrap()
}

/// Rows `from..to` of `t`, one transaction per 20 rows.
fn insert(s: &mut Session, from: i64, to: i64) {
    let keys: Vec<i64> = (from..to).collect();
    for batch in keys.chunks(20) {
        let mut sql = String::from("BEGIN;");
        for k in batch {
            sql.push_str(&format!(
                "INSERT INTO t VALUES ({k}, '{}');",
                "x".repeat(200)
            ));
        }
        sql.push_str("COMMIT");
        s.execute(&sql).unwrap();
    }
}

/// Waits until the checkpointer has answered every request: the WAL
/// written since the last checkpoint is below the threshold again.
fn settled(db: &Database) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while db.stat("wal.bytes_since_checkpoint") as u64 >= THRESHOLD {
        assert!(Instant::now() < deadline, "no checkpoint was taken");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn count(db: &Database) -> i64 {
    let mut s = Session::new(db.clone());
    match s.execute("SELECT count(*) FROM t").unwrap().pop().unwrap() {
        Output::Rows { rows, .. } => match rows[0][0] {
            Value::BigInt(n) => n,
            ref v => panic!("{v:?}"),
        },
        o => panic!("{o:?}"),
    }
}

/// `t` with rows `0..n`, and the checkpoints they asked for taken.
fn checkpointed(db: &Database, n: i64) -> Session {
    let mut s = Session::new(db.clone());
    s.execute("CREATE TABLE t (k BIGINT PRIMARY KEY, v TEXT)")
        .unwrap();
    let before = db.stat("wal.checkpoints");
    insert(&mut s, 0, n);
    settled(db);
    assert!(db.stat("wal.checkpoints") > before);
    s
}

#[test]
fn commits_past_the_threshold_get_a_checkpoint_from_the_checkpointer() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    checkpointed(&db, 4000);
    assert_eq!(db.stat("wal.checkpoint_failures"), 0);
    assert_eq!(count(&db), 4000);
}

/// Four sessions commit at once: every commit past the threshold asks,
/// and the requests made while a checkpoint runs are answered by one
/// more, so the checkpoints are about the WAL written over the
/// threshold — not one per session.
#[test]
fn sessions_committing_at_once_share_the_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    Session::new(db.clone())
        .execute("CREATE TABLE t (k BIGINT PRIMARY KEY, v TEXT)")
        .unwrap();
    let (checkpoints, wal) = (db.stat("wal.checkpoints"), db.stat("wal.bytes"));
    std::thread::scope(|scope| {
        for w in 0..4 {
            let db = db.clone();
            scope.spawn(move || {
                let mut s = Session::new(db);
                insert(&mut s, w * 3000, (w + 1) * 3000);
            });
        }
    });
    settled(&db);
    let taken = (db.stat("wal.checkpoints") - checkpoints) as u64;
    let written = (db.stat("wal.bytes") - wal) as u64;
    assert!(taken >= 1);
    // One per threshold of WAL, and one for requests made while the
    // last ran.
    assert!(
        taken <= written / THRESHOLD + 2,
        "{taken} checkpoints for {written} bytes of WAL"
    );
    assert_eq!(count(&db), 12_000);
}

#[test]
fn a_crash_after_background_checkpoints_loses_no_commit() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = checkpointed(&db, 3000);
        // The WAL tail after the last checkpoint, then the crash.
        insert(&mut s, 3000, 3100);
        drop(s);
        db.close_like_a_crash();
    }
    let db = open(dir.path());
    assert_eq!(count(&db), 3100);
    db.verify_pk_indexes().unwrap();
}
