//! Update NDP: UPDATE and DELETE on the device under SLT locks, with the
//! paper's conflict scenarios, counters that expose lost updates, readers
//! that must never see half an update, and recovery.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use ndpdb_formats::{SqlState, Value};
use ndpdb_host::{Config, Database};
use ndpdb_sql::{Output, Session};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// No background GC: some tests count WAL bytes.
fn config() -> Config {
    Config {
        delta_buffer_bytes: 64 << 10,
        buffer_pool_bytes: 256 << 10,
        autovacuum: false,
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

/// An integer result (sums of BIGINT come back as NUMERIC).
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

fn tag(s: &mut Session, sql: &str) -> String {
    match s
        .execute(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
        .pop()
    {
        Some(Output::Command { tag }) => tag,
        o => panic!("{sql}: expected a command tag, got {o:?}"),
    }
}

fn setup(db: &Database, n: i64) -> Session {
    let mut s = Session::new(db.clone());
    s.execute(
        "CREATE TABLE t (k INT PRIMARY KEY, c BIGINT NOT NULL, g BIGINT NOT NULL, name TEXT)",
    )
    .unwrap();
    for chunk in (0..n).collect::<Vec<_>>().chunks(200) {
        let vals: Vec<String> = chunk
            .iter()
            .map(|k| format!("({k}, 0, 0, 'row {k}')"))
            .collect();
        s.execute(&format!("INSERT INTO t VALUES {}", vals.join(", ")))
            .unwrap();
    }
    s
}

#[test]
fn ndp_update_and_delete_equal_the_host_versions() {
    let run = |ndp: &str| {
        let dir = tempfile::tempdir().unwrap();
        let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
        let mut s = setup(&db, 500);
        db.flush().unwrap();
        // Some rows only in the delta buffer, some flushed.
        s.execute("UPDATE t SET c = 5 WHERE k % 7 = 0").unwrap();
        s.execute(&format!("SET ndp = {ndp}")).unwrap();
        assert_eq!(
            tag(
                &mut s,
                "UPDATE t SET c = c * 2 + 1, name = name || '!' WHERE k % 3 = 0"
            ),
            "UPDATE 167"
        );
        assert_eq!(tag(&mut s, "DELETE FROM t WHERE k % 10 = 9"), "DELETE 50");
        s.execute("BEGIN").unwrap();
        assert_eq!(tag(&mut s, "UPDATE t SET g = g + 1"), "UPDATE 450");
        // The transaction reads its own device-made versions.
        assert_eq!(int(&rows(&mut s, "SELECT sum(g) FROM t")[0][0]), 450);
        s.execute("COMMIT").unwrap();
        s.execute("SET ndp = off").unwrap();
        rows(&mut s, "SELECT k, c, g, name FROM t ORDER BY k")
    };
    let host = run("off");
    let device = run("on");
    assert_eq!(host.len(), 450);
    assert_eq!(host, device);
}

#[test]
fn explain_places_bulk_modifications_on_the_device_and_key_updates_on_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    let mut s = setup(&db, 20_000);
    let plan = |s: &mut Session, sql: &str| -> String {
        rows(s, &format!("EXPLAIN {sql}"))
            .iter()
            .map(|r| r[0].to_pg_text().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    };
    // auto (the default): a whole-table update goes to the device, a
    // primary-key update stays on the host.
    assert!(plan(&mut s, "UPDATE t SET c = c + 1").starts_with("Update on t [device]"));
    assert!(plan(&mut s, "DELETE FROM t WHERE c > 5").starts_with("Delete on t [device]"));
    assert!(plan(&mut s, "UPDATE t SET c = 1 WHERE k = 7").starts_with("Update on t [host]"));
    // A key change cannot run on the device.
    assert!(plan(&mut s, "UPDATE t SET k = k + 1000000").starts_with("Update on t [host]"));
    s.execute("SET ndp = on").unwrap();
    let e = s.execute("UPDATE t SET k = k + 1000000").unwrap_err();
    assert_eq!(e.code, SqlState::FEATURE_NOT_SUPPORTED);
    s.execute("SET ndp = off").unwrap();
    assert!(plan(&mut s, "UPDATE t SET c = c + 1").starts_with("Update on t [host]"));
}

/// Update NDP Fig. 11: a host writer that read t before the NDP job
/// locked it waits for the job's SLT lock, wakes at the NDP commit and
/// fails certification (its version is stale).
#[test]
fn host_writer_waiting_on_an_ndp_lock_aborts_after_the_ndp_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    let mut n = setup(&db, 100);
    let mut h = Session::new(db.clone());
    h.execute("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
    assert_eq!(int(&rows(&mut h, "SELECT c FROM t WHERE k = 1")[0][0]), 0);
    n.execute("SET ndp = on").unwrap();
    n.execute("BEGIN").unwrap();
    assert_eq!(tag(&mut n, "UPDATE t SET c = c + 10"), "UPDATE 100");
    let waits = db.stat("txn.lock_waits");
    let writer = thread::spawn(move || {
        let r = h.execute("UPDATE t SET c = c + 1 WHERE k = 1");
        (h, r)
    });
    thread::sleep(Duration::from_millis(200));
    assert!(
        !writer.is_finished(),
        "the host writer must wait for the device's lock"
    );
    n.execute("COMMIT").unwrap();
    let (mut h, r) = writer.join().unwrap();
    assert_eq!(r.unwrap_err().code, SqlState::SERIALIZATION_FAILURE);
    h.execute("ROLLBACK").unwrap();
    assert_eq!(db.stat("txn.lock_waits"), waits + 1);
    assert_eq!(int(&rows(&mut n, "SELECT c FROM t WHERE k = 1")[0][0]), 10);
    // A new transaction updates the NDP version.
    h.execute("UPDATE t SET c = c + 1 WHERE k = 1").unwrap();
    assert_eq!(int(&rows(&mut n, "SELECT c FROM t WHERE k = 1")[0][0]), 11);
}

/// A host transaction that committed a newer version before the device
/// locked the tuple makes the job stop early (first-updater-wins).
#[test]
fn a_newer_committed_version_makes_the_ndp_job_abort_early() {
    // Keys in the chunks of either PE: the one that finds the conflict
    // stops the other, and the statement reports the conflict.
    for (flush, key) in [(false, 2500), (true, 2500), (false, 1500), (true, 1500)] {
        let dir = tempfile::tempdir().unwrap();
        let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
        let mut n = setup(&db, 3000);
        let mut h = Session::new(db.clone());
        n.execute("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
        rows(&mut n, "SELECT count(*) FROM t");
        h.execute(&format!("UPDATE t SET c = 1 WHERE k = {key}"))
            .unwrap();
        if flush {
            db.flush().unwrap();
        }
        n.execute("SET ndp = on").unwrap();
        let e = n.execute("UPDATE t SET c = c + 100").unwrap_err();
        assert_eq!(e.code, SqlState::SERIALIZATION_FAILURE, "{e:?}");
        assert_eq!(db.stat("ndp.early_aborts"), 1);
        n.execute("ROLLBACK").unwrap();
        let sum = int(&rows(&mut n, "SELECT sum(c) FROM t")[0][0]);
        assert_eq!(sum, 1, "the job's work is invisible");
        // Its locks are gone: the host can update every row.
        assert_eq!(tag(&mut h, "UPDATE t SET g = 1"), "UPDATE 3000");
    }
}

/// A host commit that the device could not see (in flight at the job's
/// snapshot, committed while the job waited for its lock, not flushed)
/// slips past locking; the host's validation of ΔVID catches it.
#[test]
fn validation_catches_a_conflict_that_slipped_past_locking() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    let mut n = setup(&db, 200);
    db.flush().unwrap();
    let mut h = Session::new(db.clone());
    h.execute("BEGIN").unwrap();
    h.execute("UPDATE t SET c = 7 WHERE k = 150").unwrap();
    // Under REPEATABLE READ the job's update of a row changed since its
    // snapshot is a serialization failure.
    n.execute("SET ndp = on; SET default_transaction_isolation = 'repeatable read'")
        .unwrap();
    let job = thread::spawn(move || {
        let r = n.execute("UPDATE t SET c = c + 100");
        (n, r)
    });
    thread::sleep(Duration::from_millis(200));
    assert!(
        !job.is_finished(),
        "the job waits for the host's lock on k = 150"
    );
    h.execute("COMMIT").unwrap();
    let (mut n, r) = job.join().unwrap();
    assert_eq!(r.unwrap_err().code, SqlState::SERIALIZATION_FAILURE);
    assert_eq!(db.stat("ndp.validation_failures"), 1);
    assert_eq!(db.stat("ndp.early_aborts"), 0);
    assert_eq!(int(&rows(&mut n, "SELECT sum(c) FROM t")[0][0]), 7);
    // Nothing stays locked; a retry succeeds.
    assert_eq!(tag(&mut n, "UPDATE t SET c = c + 100"), "UPDATE 200");
    assert_eq!(int(&rows(&mut n, "SELECT sum(c) FROM t")[0][0]), 20_007);
}

#[test]
fn ndp_delete_then_host_insert_of_the_same_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    let mut s = setup(&db, 300);
    s.execute("SET ndp = on").unwrap();
    assert_eq!(tag(&mut s, "DELETE FROM t WHERE k >= 100"), "DELETE 200");
    s.execute("SET ndp = off").unwrap();
    let e = s
        .execute("INSERT INTO t VALUES (5, 0, 0, 'dup')")
        .unwrap_err();
    assert_eq!(e.code, SqlState::UNIQUE_VIOLATION);
    s.execute("INSERT INTO t VALUES (150, 42, 0, 'again')")
        .unwrap();
    assert_eq!(
        rows(&mut s, "SELECT c, name FROM t WHERE k = 150"),
        vec![vec![Value::BigInt(42), Value::Text("again".into())]]
    );
    assert_eq!(int(&rows(&mut s, "SELECT count(*) FROM t")[0][0]), 101);
    // In one transaction: device delete, then host re-insert.
    s.execute("SET ndp = on").unwrap();
    s.execute("BEGIN").unwrap();
    assert_eq!(tag(&mut s, "DELETE FROM t WHERE c = 0"), "DELETE 100");
    s.execute("INSERT INTO t VALUES (7, 1, 1, 'back')").unwrap();
    s.execute("COMMIT").unwrap();
    assert_eq!(
        rows(&mut s, "SELECT k, name FROM t ORDER BY k"),
        vec![
            vec![Value::Int(7), Value::Text("back".into())],
            vec![Value::Int(150), Value::Text("again".into())]
        ]
    );
}

#[test]
fn rolled_back_ndp_work_is_invisible_and_committed_work_survives_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
        let mut s = setup(&db, 1000);
        s.execute("SET ndp = on").unwrap();
        s.execute("BEGIN").unwrap();
        s.execute("UPDATE t SET c = 99").unwrap();
        s.execute("ROLLBACK").unwrap();
        assert_eq!(rows(&mut s, "SELECT max(c) FROM t")[0][0], Value::BigInt(0));
        // Host and device changes in one transaction, the host one on top
        // of the device's version of the same row.
        s.execute("BEGIN").unwrap();
        s.execute("UPDATE t SET c = c + 3 WHERE k < 500").unwrap();
        s.execute("SET ndp = off").unwrap();
        s.execute("UPDATE t SET c = c * 10 WHERE k = 1").unwrap();
        s.execute("COMMIT").unwrap();
        assert!(db.stat("ndp.rows_modified") >= 1500);
        db.close_like_a_crash();
    }
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    let mut s = Session::new(db.clone());
    let r = &rows(&mut s, "SELECT count(*), sum(c) FROM t WHERE k < 500")[0];
    assert_eq!((int(&r[0]), int(&r[1])), (500, 499 * 3 + 30));
    assert_eq!(
        rows(&mut s, "SELECT c FROM t WHERE k = 1")[0][0],
        Value::BigInt(30)
    );
    assert_eq!(
        rows(&mut s, "SELECT max(c) FROM t WHERE k >= 500")[0][0],
        Value::BigInt(0)
    );
}

/// End-NDP names its Start-NDP record; recovery refuses a log whose
/// End-NDP names anything else (XX001) instead of applying its ΔMaps.
#[test]
fn recovery_checks_that_end_ndp_names_its_start_ndp() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
        let mut s = setup(&db, 300);
        s.execute("SET ndp = on").unwrap();
        assert_eq!(tag(&mut s, "UPDATE t SET c = c + 1"), "UPDATE 300");
        db.close_like_a_crash();
    }
    {
        let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
        let mut s = Session::new(db.clone());
        assert_eq!(int(&rows(&mut s, "SELECT sum(c) FROM t")[0][0]), 300);
        s.execute("SET ndp = on").unwrap();
        assert_eq!(tag(&mut s, "UPDATE t SET c = c + 1"), "UPDATE 300");
        db.close_like_a_crash();
    }
    {
        use ndpdb_wal::{Wal, WalRecord};
        let (wal, recovered) = Wal::open(&dir.path().join("wal")).unwrap();
        let not_a_start = recovered
            .records
            .iter()
            .find(|(_, r)| !matches!(r, WalRecord::StartNdp { .. }))
            .map(|(lsn, _)| *lsn)
            .unwrap();
        let txid = ndpdb_formats::TxId(1 << 40);
        let lsn = wal.append(&[
            WalRecord::EndNdp {
                txid,
                table: ndpdb_formats::TableId(1),
                start: Some(not_a_start),
                overflow: None,
                delta: Default::default(),
            },
            WalRecord::Commit { txid },
        ]);
        wal.sync(lsn).unwrap();
    }
    let e = ndpdb_embedded::open_with(dir.path(), config())
        .err()
        .unwrap();
    assert_eq!(e.code, SqlState::DATA_CORRUPTED, "{e:?}");
    assert!(e.message.contains("End-NDP"), "{e:?}");
}

/// Host transactions increment random rows while NDP statements increment
/// ranges and the whole table; readers check that a whole-table update is
/// never half visible; flushes run concurrently. At the end every row's
/// counter equals the committed increments that touched it.
#[test]
fn concurrent_host_and_ndp_increments_lose_nothing() {
    const N: i64 = 400;
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(
        dir.path(),
        Config {
            lock_timeout: Some(Duration::from_secs(2)),
            ..config()
        },
    )
    .unwrap();
    setup(&db, N);
    let stop = Arc::new(AtomicBool::new(false));
    let expected: Arc<Vec<AtomicU64>> = Arc::new((0..N).map(|_| AtomicU64::new(0)).collect());
    let whole = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    for t in 0..2u64 {
        let (db, stop, expected) = (db.clone(), stop.clone(), expected.clone());
        threads.push(thread::spawn(move || {
            let mut s = Session::new(db);
            s.execute("SET ndp = off").unwrap();
            let mut rng = StdRng::seed_from_u64(t);
            while !stop.load(Ordering::Relaxed) {
                let k = rng.gen_range(0..N);
                match s.execute(&format!("UPDATE t SET c = c + 1 WHERE k = {k}")) {
                    Ok(_) => {
                        expected[k as usize].fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => assert!(
                        [
                            SqlState::SERIALIZATION_FAILURE,
                            SqlState::LOCK_NOT_AVAILABLE
                        ]
                        .contains(&e.code),
                        "{e:?}"
                    ),
                }
            }
        }));
    }
    {
        let (db, stop) = (db.clone(), stop.clone());
        threads.push(thread::spawn(move || {
            let mut s = Session::new(db.clone());
            s.execute("SET ndp = on").unwrap();
            let mut checks = 0;
            while !stop.load(Ordering::Relaxed) || checks < 20 {
                let r = rows(&mut s, "SELECT min(g), max(g) FROM t");
                assert_eq!(
                    r[0][0], r[0][1],
                    "a whole-table NDP update was half visible"
                );
                checks += 1;
                if checks % 5 == 0 {
                    db.flush().unwrap();
                }
            }
        }));
    }
    let mut rng = StdRng::seed_from_u64(99);
    let mut s = Session::new(db.clone());
    s.execute("SET ndp = on").unwrap();
    let (mut committed, mut failed) = (0, 0);
    for round in 0..150 {
        let (lo, hi) = if round % 4 == 0 {
            (0, N)
        } else {
            let lo = rng.gen_range(0..N - 50);
            (lo, lo + rng.gen_range(10..50))
        };
        let sql = if (lo, hi) == (0, N) {
            "UPDATE t SET c = c + 1, g = g + 1".to_string()
        } else {
            format!("UPDATE t SET c = c + 1 WHERE k >= {lo} AND k < {hi}")
        };
        s.execute("BEGIN").unwrap();
        match s.execute(&sql) {
            Ok(_) => {
                // Some NDP transactions roll back: their work must vanish.
                if round % 7 == 3 {
                    s.execute("ROLLBACK").unwrap();
                    continue;
                }
                s.execute("COMMIT").unwrap();
                committed += 1;
                for k in lo..hi {
                    expected[k as usize].fetch_add(1, Ordering::Relaxed);
                }
                if (lo, hi) == (0, N) {
                    whole.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(e) => {
                assert!(
                    [
                        SqlState::SERIALIZATION_FAILURE,
                        SqlState::LOCK_NOT_AVAILABLE
                    ]
                    .contains(&e.code),
                    "{e:?}"
                );
                failed += 1;
                s.execute("ROLLBACK").unwrap();
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    assert!(
        committed >= 20,
        "only {committed} NDP updates committed ({failed} failed)"
    );
    // The two sides did meet: host writers waited for device locks.
    assert!(db.stat("txn.lock_waits") > 0);
    s.execute("SET ndp = off").unwrap();
    let got: HashMap<i64, (i64, i64)> = rows(&mut s, "SELECT k, c, g FROM t")
        .iter()
        .map(|r| (int(&r[0]), (int(&r[1]), int(&r[2]))))
        .collect();
    assert_eq!(got.len(), N as usize);
    for k in 0..N {
        let (c, g) = got[&k];
        assert_eq!(
            c as u64,
            expected[k as usize].load(Ordering::Relaxed),
            "row {k}: lost or doubled increments"
        );
        assert_eq!(g as u64, whole.load(Ordering::Relaxed));
    }
    // Nothing is left locked: every row can be updated at once.
    assert_eq!(tag(&mut s, "UPDATE t SET g = 0"), format!("UPDATE {N}"));
}

/// With a one-bucket SLT every tuple shares one lock: a transaction's
/// host statements must not wait for the bucket its own update job holds,
/// while other transactions do (false conflicts, never wrong results).
#[test]
fn a_transaction_never_waits_for_its_own_jobs_bucket() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(
        dir.path(),
        Config {
            slt_buckets: 1,
            lock_timeout: Some(Duration::from_millis(300)),
            ..config()
        },
    )
    .unwrap();
    let mut s = setup(&db, 1000);
    s.execute("SET ndp = on").unwrap();
    s.execute("BEGIN").unwrap();
    assert_eq!(tag(&mut s, "UPDATE t SET c = 1 WHERE k < 10"), "UPDATE 10");
    s.execute("SET ndp = off").unwrap();
    assert_eq!(tag(&mut s, "UPDATE t SET c = 2 WHERE k = 500"), "UPDATE 1");
    assert_eq!(
        tag(&mut s, "UPDATE t SET c = c + 1 WHERE k = 3"),
        "UPDATE 1"
    );
    // Another transaction waits for the bucket and times out.
    let mut other = Session::new(db.clone());
    let e = other
        .execute("UPDATE t SET c = 9 WHERE k = 900")
        .unwrap_err();
    assert_eq!(e.code, SqlState::LOCK_NOT_AVAILABLE);
    s.execute("COMMIT").unwrap();
    other.execute("UPDATE t SET c = 9 WHERE k = 900").unwrap();
    assert_eq!(
        int(&rows(&mut s, "SELECT sum(c) FROM t")[0][0]),
        // k < 10: nine rows of 1 and k = 3 at 2; k = 500: 2; k = 900: 9.
        9 + 2 + 2 + 9
    );
}

/// In-storage SELECT … FOR UPDATE locks the qualifying rows in the SLT;
/// an UPDATE with the same WHERE clause in the same transaction changes
/// exactly those versions without walking the table again.
#[test]
fn select_for_update_on_the_device_then_update_reuses_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(
        dir.path(),
        Config {
            lock_timeout: Some(Duration::from_millis(200)),
            ..config()
        },
    )
    .unwrap();
    let mut s = setup(&db, 2000);
    s.execute("SET ndp = on").unwrap();
    let plan: Vec<String> = rows(
        &mut s,
        "EXPLAIN SELECT k, c FROM t WHERE k % 10 = 0 FOR UPDATE",
    )
    .iter()
    .map(|r| r[0].to_pg_text().unwrap_or_default())
    .collect();
    assert!(plan.iter().any(|l| l.contains("locks rows")), "{plan:?}");
    // Pipelines run under REPEATABLE READ.
    s.execute("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
    let locked = rows(&mut s, "SELECT k, c FROM t WHERE k % 10 = 0 FOR UPDATE");
    assert_eq!(locked.len(), 200);
    // Another transaction cannot change a locked row, but can change others.
    let mut other = Session::new(db.clone());
    let e = other
        .execute("UPDATE t SET c = 5 WHERE k = 10")
        .unwrap_err();
    assert_eq!(e.code, SqlState::LOCK_NOT_AVAILABLE);
    other.execute("UPDATE t SET c = 5 WHERE k = 11").unwrap();
    let walked = db.stat("ndp.tuples");
    assert_eq!(
        tag(&mut s, "UPDATE t SET c = c + 1 WHERE k % 10 = 0"),
        "UPDATE 200"
    );
    assert_eq!(
        db.stat("ndp.tuples") - walked,
        200,
        "the update walked only the locked rows"
    );
    s.execute("COMMIT").unwrap();
    assert_eq!(int(&rows(&mut s, "SELECT sum(c) FROM t")[0][0]), 200 + 5);
    other.execute("UPDATE t SET c = 7 WHERE k = 10").unwrap();
    // A FOR UPDATE that ends without an update releases its locks too.
    s.execute("BEGIN").unwrap();
    assert_eq!(
        rows(&mut s, "SELECT k FROM t WHERE k < 5 FOR UPDATE").len(),
        5
    );
    s.execute("ROLLBACK").unwrap();
    other.execute("UPDATE t SET c = 9 WHERE k = 3").unwrap();
}

/// `ndp_logging = off`: no Start-/End-NDP records; the commit checkpoints
/// instead (ΔMaps merged on the device, replay starting after them), so a
/// crash after the commit keeps them.
#[test]
fn unlogged_ndp_updates_are_flushed_at_commit() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
        let mut s = setup(&db, 500);
        db.flush().unwrap();
        let wal = db.stat("wal.bytes");
        s.execute("SET ndp = on").unwrap();
        s.execute("SET ndp_logging = off").unwrap();
        assert_eq!(
            rows(&mut s, "SHOW ndp_logging")[0][0],
            Value::Text("off".into())
        );
        assert_eq!(tag(&mut s, "UPDATE t SET c = 3"), "UPDATE 500");
        // Only the commit and checkpoint records, not 500 × 24 B of ΔVID.
        assert!(
            db.stat("wal.bytes") - wal < 200,
            "{}",
            db.stat("wal.bytes") - wal
        );
        assert!(s.execute("SET ndp_logging = verbose").is_err());
        db.close_like_a_crash();
    }
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    let mut s = Session::new(db);
    assert_eq!(int(&rows(&mut s, "SELECT sum(c) FROM t")[0][0]), 1500);
}

/// `statement_timeout` ends a host scan, a device scan and a device
/// update with 57014; the update's versions are discarded and its SLT
/// locks released, so the same update then runs on a clean table.
#[test]
fn statement_timeout_cancels_host_and_device_statements_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    let mut s = setup(&db, 20_000);
    db.flush().unwrap();
    // 1 ms (the unit PostgreSQL rounds to): each of these statements
    // over 20,000 rows takes longer.
    s.execute("SET statement_timeout = '1ms'").unwrap();
    for (ndp, sql) in [
        ("off", "SELECT count(*) FROM t WHERE name LIKE 'row%'"),
        ("on", "SELECT count(*) FROM t WHERE name LIKE 'row%'"),
        ("on", "UPDATE t SET c = c + 1"),
    ] {
        s.execute(&format!("SET ndp = {ndp}")).unwrap();
        let e = match s.execute(sql) {
            Ok(out) => panic!("{sql} (ndp {ndp}) was not canceled: {out:?}"),
            Err(e) => e,
        };
        assert_eq!(e.code, SqlState::QUERY_CANCELED, "{sql} (ndp {ndp}): {e:?}");
        assert!(e.message.contains("statement timeout"), "{e:?}");
    }
    s.execute("SET statement_timeout = 0").unwrap();
    assert_eq!(
        rows(&mut s, "SELECT count(*) FROM t WHERE c <> 0")[0][0],
        Value::BigInt(0),
        "the canceled update left nothing behind"
    );
    // Its locks are gone: a host writer and the same update go through.
    let mut other = Session::new(db.clone());
    other.execute("SET statement_timeout = '5s'").unwrap();
    assert_eq!(
        tag(&mut other, "UPDATE t SET g = 1 WHERE k = 5"),
        "UPDATE 1"
    );
    s.execute("SET ndp = on").unwrap();
    assert_eq!(tag(&mut s, "UPDATE t SET c = c + 1"), "UPDATE 20000");
}
