//! Version garbage collection (DESIGN.md §8a): VACUUM frees what no
//! snapshot needs and nothing else, freed pages are written again so the
//! store stops growing, user transactions are neither blocked nor failed
//! by versions GC moved, and all of it survives a crash.

use ndpdb_formats::Value;
use ndpdb_host::{Config, Database, Isolation, WriteOutcome};
use ndpdb_sql::{Output, Session};

/// GC runs only when a test asks for it.
fn config() -> Config {
    Config {
        delta_buffer_bytes: 64 << 10,
        buffer_pool_bytes: 1 << 20,
        autovacuum: false,
        ..Config::default()
    }
}

fn open(dir: &std::path::Path) -> Database {
    ndpdb_embedded::open_with(dir, config()).unwrap()
}

/// A database whose autovacuum worker naps `naptime`.
fn open_autovacuum(dir: &std::path::Path, naptime: std::time::Duration) -> Database {
    ndpdb_embedded::open_with(
        dir,
        Config {
            autovacuum: true,
            autovacuum_naptime: naptime,
            ..config()
        },
    )
    .unwrap()
}

/// `t(k, v, pad)` with keys `0..n`, `v = k`.
fn create(db: &Database, n: i64) -> Session {
    let mut s = Session::new(db.clone());
    s.execute("CREATE TABLE t (k BIGINT PRIMARY KEY, v BIGINT, pad TEXT)")
        .unwrap();
    let mut sql = String::from("BEGIN;");
    for k in 0..n {
        sql.push_str(&format!(
            "INSERT INTO t VALUES ({k}, {k}, '{}');",
            "p".repeat(40)
        ));
    }
    sql.push_str("COMMIT");
    s.execute(&sql).unwrap();
    s
}

fn int(s: &mut Session, sql: &str) -> i64 {
    match s.execute(sql).unwrap().pop().unwrap() {
        Output::Rows { rows, .. } => match &rows[0][0] {
            Value::BigInt(n) => *n,
            Value::Null => 0,
            v => v.to_pg_text().unwrap().parse().unwrap(),
        },
        o => panic!("{o:?}"),
    }
}

fn sum(s: &mut Session) -> i64 {
    int(s, "SELECT sum(v) FROM t")
}

#[test]
fn vacuum_frees_old_versions_and_the_store_stops_growing() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let n = 3000;
    let mut s = create(&db, n);
    let mut sizes = Vec::new();
    for round in 1..=10i64 {
        let ndp = if round % 2 == 0 { "on" } else { "off" };
        s.execute(&format!("SET ndp = {ndp}; UPDATE t SET v = v + 1"))
            .unwrap();
        s.execute("VACUUM t").unwrap();
        assert_eq!(sum(&mut s), n * (n - 1) / 2 + n * round);
        sizes.push(db.stat("storage.file_bytes"));
    }
    assert!(db.stat("gc.pages_freed") > 0);
    assert!(db.stat("gc.versions_reclaimed") >= 9 * n);
    // After the first rounds every update writes into freed pages.
    let (early, last) = (sizes[3], sizes[9]);
    assert!(
        last <= early + early / 10,
        "store grew from {early} to {last} bytes: {sizes:?}"
    );
    // Pages that only hold live versions are not rewritten.
    let again = db.vacuum(Some("t"), false).unwrap();
    assert_eq!((again.relocated, again.pages_freed), (0, 0));
}

#[test]
fn an_old_snapshot_keeps_the_versions_it_sees() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let n = 2000;
    let mut s = create(&db, n);
    let before = sum(&mut s);
    let mut old = Session::new(db.clone());
    old.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        .unwrap();
    assert_eq!(sum(&mut old), before);
    for _ in 0..3 {
        s.execute("UPDATE t SET v = v + 1").unwrap();
    }
    let r = db.vacuum(Some("t"), true).unwrap();
    assert_eq!(r.pages_freed, 0, "the old snapshot needs every version");
    assert_eq!(sum(&mut old), before);
    assert_eq!(int(&mut old, "SELECT v FROM t WHERE k = 7"), 7);
    old.execute("COMMIT").unwrap();
    let r = db.vacuum(Some("t"), true).unwrap();
    assert!(r.pages_freed > 0, "{r:?}");
    assert_eq!(sum(&mut s), before + 3 * n);
}

/// A run reads only the pages that changed since the last one (as
/// PostgreSQL's VACUUM skips all-visible pages): once a run found every
/// version a head all snapshots see, the next reads no page; an update
/// reopens the pages its rows were on, and their garbage is still
/// freed; an old snapshot still keeps what it sees; a reopen reads
/// everything again.
#[test]
fn vacuum_reads_only_the_pages_changed_since_its_last_run() {
    let dir = tempfile::tempdir().unwrap();
    let n = 3000;
    let total = {
        let db = open(dir.path());
        let mut s = create(&db, n);
        let first = db.vacuum(Some("t"), false).unwrap();
        let total = first.pages_scanned;
        assert!(total >= 10 && first.pages_skipped == 0, "{first:?}");
        let second = db.vacuum(Some("t"), false).unwrap();
        assert_eq!((second.pages_scanned, second.pages_skipped), (0, total));

        // The first tenth of the keys, on the first pages: every version
        // there superseded.
        s.execute("UPDATE t SET v = v + 1 WHERE k < 300").unwrap();
        let third = db.vacuum(Some("t"), false).unwrap();
        assert!(third.pages_freed > 0, "{third:?}");
        assert!(
            third.pages_scanned < total / 2 && third.pages_skipped > total / 2,
            "{third:?} of {total} pages"
        );
        assert_eq!(sum(&mut s), n * (n - 1) / 2 + 300);

        // Settled pages an old snapshot still reads from are not freed
        // under it, and are once it ends.
        let mut old = Session::new(db.clone());
        old.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            .unwrap();
        let before = sum(&mut old);
        s.execute("UPDATE t SET v = v + 1").unwrap();
        let held = db.vacuum(Some("t"), false).unwrap();
        assert_eq!(held.pages_freed, 0, "{held:?}");
        assert_eq!(sum(&mut old), before);
        old.execute("COMMIT").unwrap();
        let freed = db.vacuum(Some("t"), false).unwrap();
        assert!(freed.pages_freed >= total / 2, "{freed:?} of {total} pages");
        assert_eq!(sum(&mut s), before + n);
        total
    };
    let db = open(dir.path());
    let again = db.vacuum(Some("t"), false).unwrap();
    assert!(again.pages_scanned >= total / 2, "{again:?}");
    assert_eq!(again.pages_skipped, 0);
    let mut s = Session::new(db.clone());
    assert_eq!(sum(&mut s), n * (n - 1) / 2 + 300 + n);
}

/// A writer that read a version before GC moved it certifies against
/// the copy: no serialization failure, no lost update.
#[test]
fn a_version_moved_by_gc_does_not_fail_its_writer() {
    for ndp in ["off", "on"] {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path());
        let n = 2000;
        let mut s = create(&db, n);
        // Pages of the load keep their odd rows: VACUUM FULL moves those.
        s.execute("UPDATE t SET v = v + 1 WHERE k % 2 = 0").unwrap();
        let mut w = Session::new(db.clone());
        w.execute(&format!(
            "SET ndp = {ndp}; BEGIN ISOLATION LEVEL REPEATABLE READ"
        ))
        .unwrap();
        assert_eq!(sum(&mut w), n * (n - 1) / 2 + n / 2);
        let r = db.vacuum(Some("t"), true).unwrap();
        assert_eq!(r.relocated, n as u64 / 2, "ndp = {ndp}");
        w.execute("UPDATE t SET v = v + 10").unwrap();
        w.execute("COMMIT").unwrap();
        assert_eq!(sum(&mut s), n * (n - 1) / 2 + n / 2 + 10 * n, "ndp = {ndp}");
        assert_eq!(int(&mut s, "SELECT v FROM t WHERE k = 5"), 15);
    }
}

/// The same, one step at a time: the version read before GC, written
/// after it.
#[test]
fn a_writer_certifies_against_the_copy_of_the_version_it_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let n = 1000;
    let mut s = create(&db, n);
    s.execute("UPDATE t SET v = v + 1 WHERE k % 2 = 0").unwrap();
    let ts = db.table("t").unwrap();
    let mut tx = db.begin(Isolation::Snapshot).unwrap();
    let (vid, seen, row) = tx.get_by_key(&ts, &[Value::BigInt(7)]).unwrap().unwrap();
    assert_eq!(row[1], Value::BigInt(7));
    let r = db.vacuum(Some("t"), true).unwrap();
    assert_eq!(r.relocated, n as u64 / 2);
    assert_ne!(ts.vids.head(vid), seen, "GC moved the version read");
    let mut apply = |row: &[Value]| {
        let mut row = row.to_vec();
        row[1] = Value::BigInt(70);
        Ok(Some(row))
    };
    let out = tx.update(&ts, vid, seen, &mut apply).unwrap();
    assert!(matches!(out, WriteOutcome::Done(_)), "{out:?}");
    tx.commit().unwrap();
    assert_eq!(int(&mut s, "SELECT v FROM t WHERE k = 7"), 70);
    // A version that really is newer still fails the writer (40001).
    let mut tx = db.begin(Isolation::Snapshot).unwrap();
    let (vid, seen, _) = tx.get_by_key(&ts, &[Value::BigInt(9)]).unwrap().unwrap();
    s.execute("UPDATE t SET v = 0 WHERE k = 9").unwrap();
    db.vacuum(Some("t"), true).unwrap();
    let e = tx.update(&ts, vid, seen, &mut apply).unwrap_err();
    assert_eq!(e.code.0, "40001");
}

/// GC running all the time next to a writer on the host, then on the
/// device: no writer fails because of it and no update is lost.
#[test]
fn writers_next_to_a_running_gc_neither_fail_nor_lose_updates() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let n = 2000;
    let mut s = create(&db, n);
    let mut expected = n * (n - 1) / 2;
    for ndp in ["off", "on"] {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let gc = {
            let (db, stop) = (db.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut runs = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    db.vacuum(Some("t"), runs % 2 == 0).unwrap();
                    runs += 1;
                }
                runs
            })
        };
        let mut w = Session::new(db.clone());
        w.execute(&format!("SET ndp = {ndp}")).unwrap();
        for i in 0..20 {
            // Four rows in five: each round leaves a fifth of the last
            // round's pages live, for GC to move.
            w.execute(&format!(
                "BEGIN ISOLATION LEVEL REPEATABLE READ; \
                 UPDATE t SET v = v + 1 WHERE k % 5 <> {}; COMMIT",
                i % 5
            ))
            .unwrap();
            expected += 4 * n / 5;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(gc.join().unwrap() > 0);
        assert_eq!(sum(&mut s), expected, "ndp = {ndp}");
    }
    assert!(db.stat("gc.versions_relocated") > 0);
    db.verify_pk_indexes().unwrap();
}

#[test]
fn deleted_tuples_leave_the_vid_map_and_their_keys_can_return() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = create(&db, 1000);
    s.execute("DELETE FROM t WHERE k % 2 = 0").unwrap();
    let r = db.vacuum(Some("t"), false).unwrap();
    assert_eq!(r.tuples_removed, 500);
    assert_eq!(int(&mut s, "SELECT count(*) FROM t"), 500);
    s.execute("INSERT INTO t VALUES (4, 4, 'back')").unwrap();
    let e = s
        .execute("INSERT INTO t VALUES (4, 4, 'twice')")
        .unwrap_err();
    assert_eq!(e.code.0, "23505");
    assert_eq!(int(&mut s, "SELECT count(*) FROM t"), 501);
    db.verify_pk_indexes().unwrap();
}

#[test]
fn collected_garbage_and_reused_pages_survive_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let n = 2000;
    let expected;
    {
        let db = open(dir.path());
        let mut s = create(&db, n);
        for round in 0..4 {
            s.execute("UPDATE t SET v = v + 1").unwrap();
            s.execute(if round % 2 == 0 {
                "VACUUM FULL t"
            } else {
                "VACUUM"
            })
            .unwrap();
        }
        s.execute("DELETE FROM t WHERE k < 100").unwrap();
        s.execute("UPDATE t SET v = v + 1 WHERE k % 3 = 0").unwrap();
        expected = sum(&mut s);
        db.close_like_a_crash();
    }
    let db = open(dir.path());
    db.verify_pk_indexes().unwrap();
    let mut s = Session::new(db.clone());
    assert_eq!(sum(&mut s), expected);
    assert_eq!(int(&mut s, "SELECT count(*) FROM t"), n - 100);
    // Space freed before the crash is free after it.
    assert_eq!(
        db.stat("storage.free_pages")
            + db.stat("storage.mapped_pages")
            + db.stat("storage.released_pages"),
        db.stat("storage.file_bytes") / 8192
    );
    db.vacuum(None, true).unwrap();
    let again = db.vacuum(None, true).unwrap();
    assert_eq!((again.relocated, again.pages_freed), (0, 0));
    assert_eq!(sum(&mut s), expected);
}

/// A table's run reads that table's pages only (the store knows each
/// page's table from its write, or learns it from a read after a reopen):
/// with two tables' versions interleaved in the store, each VACUUM frees
/// pages of its own table, before and after a reopen, and none of either
/// table's pages is passed over.
#[test]
fn each_table_gc_frees_its_own_pages_beside_another_tables_also_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let n = 2000;
    let loaded;
    let update_both = |s: &mut Session| {
        for _ in 0..3 {
            s.execute("UPDATE t SET v = v + 1; UPDATE u SET v = v + 2")
                .unwrap();
        }
    };
    let freed = |db: &Database, table: &str| {
        let r = db.vacuum(Some(table), false).unwrap();
        assert!(r.pages_freed > 0, "VACUUM {table} freed nothing: {r:?}");
    };
    let check = |s: &mut Session, rounds: i64| {
        assert_eq!(sum(s), n * (n - 1) / 2 + 3 * rounds * n);
        assert_eq!(
            int(s, "SELECT sum(v) FROM u"),
            n * (n - 1) / 2 + 6 * rounds * n
        );
    };
    {
        let db = open(dir.path());
        let mut s = create(&db, n);
        s.execute("CREATE TABLE u (k BIGINT PRIMARY KEY, v BIGINT, pad TEXT)")
            .unwrap();
        s.execute("INSERT INTO u SELECT k, k, pad FROM t").unwrap();
        db.flush().unwrap();
        loaded = db.stat("storage.mapped_pages");
        update_both(&mut s);
        freed(&db, "t");
        freed(&db, "u");
        check(&mut s, 1);
        update_both(&mut s);
    }
    let db = open(dir.path());
    let mut s = Session::new(db.clone());
    check(&mut s, 2);
    freed(&db, "u");
    freed(&db, "t");
    check(&mut s, 2);
    update_both(&mut s);
    freed(&db, "t");
    freed(&db, "u");
    check(&mut s, 3);
    // Compacting both leaves about the pages the rows took when loaded:
    // no page of either table was passed over.
    db.vacuum(Some("t"), true).unwrap();
    db.vacuum(Some("u"), true).unwrap();
    db.flush().unwrap();
    let compacted = db.stat("storage.mapped_pages");
    assert!(
        compacted <= loaded + loaded / 4 + 8,
        "{compacted} pages mapped after VACUUM FULL, {loaded} after the load"
    );
    let again = db.vacuum(None, true).unwrap();
    assert_eq!((again.relocated, again.pages_freed), (0, 0));
    check(&mut s, 3);
}

/// Without any VACUUM: the background worker collects each table past
/// its threshold, and the store stays within a few times the live data.
#[test]
fn autovacuum_keeps_the_store_from_growing() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_autovacuum(dir.path(), std::time::Duration::from_millis(20));
    let n = 3000;
    let mut s = create(&db, n);
    db.flush().unwrap();
    let loaded = db.stat("storage.file_bytes");
    for round in 1..=12 {
        let runs = db.stat("gc.runs");
        s.execute("UPDATE t SET v = v + 1").unwrap();
        let t = std::time::Instant::now();
        while db.stat("gc.runs") == runs {
            assert!(t.elapsed().as_secs() < 20, "no GC run after round {round}");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    assert_eq!(sum(&mut s), n * (n - 1) / 2 + 12 * n);
    let file = db.stat("storage.file_bytes");
    assert!(
        file <= 4 * loaded,
        "{file} bytes after 12 updates, {loaded} after the load"
    );
    assert_eq!(db.stat("gc.failures"), 0);
}

/// A small table that every transaction updates passes its threshold
/// again and again; the worker collects it at most once a naptime (as
/// PostgreSQL visits a database), and does collect it.
#[test]
fn autovacuum_collects_a_hot_table_at_most_once_a_naptime() {
    let dir = tempfile::tempdir().unwrap();
    let naptime = std::time::Duration::from_millis(250);
    let db = open_autovacuum(dir.path(), naptime);
    // 10 rows: a threshold of 52 versions, passed every 6 statements.
    let mut s = create(&db, 10);
    let start = std::time::Instant::now();
    let mut statements = 0;
    while start.elapsed() < 6 * naptime {
        s.execute("UPDATE t SET v = v + 1").unwrap();
        statements += 1;
    }
    let runs = db.stat("gc.runs");
    let elapsed = start.elapsed();
    let most = (elapsed.as_millis() / naptime.as_millis()) as i64 + 1;
    assert!(
        (1..=most).contains(&runs),
        "{runs} GC runs in {elapsed:?} ({statements} updates), at most {most}"
    );
    assert_eq!(sum(&mut s), 45 + 10 * statements);
    assert_eq!(db.stat("gc.failures"), 0);
}

/// A long snapshot holds the horizon: one run collects what it can below
/// it, and the worker then leaves the table alone, however many versions
/// pile up, until the horizon passes that run's; then it collects again.
#[test]
fn autovacuum_waits_for_the_horizon_to_pass_its_last_run() {
    let dir = tempfile::tempdir().unwrap();
    let naptime = std::time::Duration::from_millis(20);
    let db = open_autovacuum(dir.path(), naptime);
    let mut s = create(&db, 10);
    let mut long = Session::new(db.clone());
    long.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        .unwrap();
    assert_eq!(int(&mut long, "SELECT sum(v) FROM t"), 45);
    let before = db.stat("gc.runs");
    // The worker waits ten naptimes (and their polls) for the long
    // transaction, then runs: about every 0.4 s without the horizon check.
    let start = std::time::Instant::now();
    let mut statements = 0;
    while start.elapsed() < std::time::Duration::from_secs(3) {
        s.execute("UPDATE t SET v = v + 1").unwrap();
        statements += 1;
    }
    let held = db.stat("gc.runs") - before;
    assert!(
        held <= 1,
        "{held} GC runs in 3 s under one snapshot ({statements} updates)"
    );
    assert_eq!(int(&mut long, "SELECT sum(v) FROM t"), 45);
    long.execute("COMMIT").unwrap();
    let after = db.stat("gc.runs");
    let t = std::time::Instant::now();
    while db.stat("gc.runs") == after {
        assert!(
            t.elapsed().as_secs() < 20,
            "no GC run once the horizon moved"
        );
        s.execute("UPDATE t SET v = v + 1").unwrap();
        statements += 1;
    }
    assert_eq!(sum(&mut s), 45 + 10 * statements);
    assert_eq!(db.stat("gc.failures"), 0);
}

#[test]
fn vacuum_runs_outside_transaction_blocks_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = create(&db, 10);
    s.execute("BEGIN").unwrap();
    let e = s.execute("VACUUM").unwrap_err();
    assert_eq!(e.code.0, "25001");
    s.execute("ROLLBACK").unwrap();
    let e = s.execute("VACUUM nosuch").unwrap_err();
    assert_eq!(e.code.0, "42P01");
    assert_eq!(s.execute("VACUUM t").unwrap()[0].tag(), "VACUUM");
}
