//! Flush & append and restarts: data written before and after several
//! delta-buffer flushes and restarts reads back identically; corrupt
//! pages give clear errors.

use std::collections::BTreeMap;
use std::io::{Seek, SeekFrom, Write};

use ndpdb_formats::{SqlState, Value};
use ndpdb_host::Config;
use ndpdb_sql::{Output, Session};

fn small_config() -> Config {
    Config {
        delta_buffer_bytes: 16 << 10,
        buffer_pool_bytes: 256 << 10,
        ..Config::default()
    }
}

fn dump(s: &mut Session) -> BTreeMap<i64, String> {
    match s.execute("SELECT k, v FROM t").unwrap().pop().unwrap() {
        Output::Rows { rows, .. } => rows
            .into_iter()
            .map(|r| match (&r[0], &r[1]) {
                (Value::BigInt(k), Value::Text(v)) => (*k, v.clone()),
                other => panic!("{other:?}"),
            })
            .collect(),
        o => panic!("{o:?}"),
    }
}

#[test]
fn data_survives_flushes_and_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let mut model: BTreeMap<i64, String> = BTreeMap::new();
    {
        let db = ndpdb_embedded::open_with(dir.path(), small_config()).unwrap();
        let mut s = Session::new(db.clone());
        s.execute("CREATE TABLE t (k BIGINT PRIMARY KEY, v TEXT)")
            .unwrap();
        for round in 0..6i64 {
            let mut sql = String::from("BEGIN;");
            for i in 0..200 {
                let k = round * 200 + i;
                let v = format!("r{round}-{i}-{}", "p".repeat((k % 300) as usize));
                sql.push_str(&format!("INSERT INTO t VALUES ({k}, '{v}');"));
                model.insert(k, v);
            }
            sql.push_str("COMMIT");
            s.execute(&sql).unwrap();
            // Update and delete rows of earlier rounds (already flushed).
            s.execute(&format!(
                "UPDATE t SET v = v || '+u{round}' WHERE k % 7 = {}",
                round % 7
            ))
            .unwrap();
            for (k, v) in model.iter_mut() {
                if k % 7 == round % 7 {
                    v.push_str(&format!("+u{round}"));
                }
            }
            s.execute(&format!("DELETE FROM t WHERE k % 11 = {}", round % 11))
                .unwrap();
            model.retain(|k, _| k % 11 != round % 11);
            if round % 2 == 0 {
                db.flush().unwrap();
            }
            assert_eq!(dump(&mut s), model, "round {round} before restart");
        }
        assert!(
            db.stat("delta_buffer.flushes") >= 5,
            "flushes: {}",
            db.stat("delta_buffer.flushes")
        );
        assert!(
            db.stat("buffer.misses") > 0,
            "reads went through the device"
        );
        // Leave some versions only in the delta buffer and the WAL.
        s.execute("UPDATE t SET v = 'last' WHERE k = 7").unwrap();
        model.insert(7, "last".into());
        assert!(db.stat("delta_buffer.bytes") > 0);
        drop(s);
        db.close_like_a_crash();
    }
    for restart in 0..3 {
        let db = ndpdb_embedded::open_with(dir.path(), small_config()).unwrap();
        if restart == 0 {
            assert!(
                db.recovery_report().replayed_versions > 0,
                "the last update came from the WAL"
            );
        }
        db.verify_pk_indexes().unwrap();
        let mut s = Session::new(db.clone());
        assert_eq!(dump(&mut s), model, "after restart {restart}");
        s.execute(&format!(
            "INSERT INTO t VALUES ({}, 'r{restart}')",
            10_000 + restart
        ))
        .unwrap();
        model.insert(10_000 + restart, format!("r{restart}"));
    }
}

/// `buffer.misses` counts every page read from the device;
/// `buffer.scan_reads` the part that host scans read past the pool, so
/// that point reads' misses are the difference (what OLTP beside
/// analytics is measured by).
#[test]
fn scan_reads_are_counted_apart_from_point_misses() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = ndpdb_embedded::open_with(dir.path(), small_config()).unwrap();
        let mut s = Session::new(db.clone());
        s.execute("CREATE TABLE t (k BIGINT PRIMARY KEY, v TEXT)")
            .unwrap();
        let rows: Vec<String> = (0..2000)
            .map(|k| format!("({k}, '{}')", "x".repeat(200)))
            .collect();
        s.execute(&format!("INSERT INTO t VALUES {}", rows.join(",")))
            .unwrap();
        db.checkpoint().unwrap();
    }
    // Reopened: nothing of the table is in the pool.
    let db = ndpdb_embedded::open_with(dir.path(), small_config()).unwrap();
    let mut s = Session::new(db.clone());
    s.execute("SET ndp = off").unwrap();
    let point_misses =
        |db: &ndpdb_host::Database| db.stat("buffer.misses") - db.stat("buffer.scan_reads");
    let before = (db.stat("buffer.scan_reads"), point_misses(&db));
    s.execute("SELECT count(*), sum(length(v)) FROM t").unwrap();
    let scanned = db.stat("buffer.scan_reads") - before.0;
    assert!(
        scanned >= 40,
        "a scan of 2,000 rows of 200 bytes read {scanned} pages past the pool"
    );
    assert_eq!(point_misses(&db), before.1, "the scan counted point misses");
    let before = (db.stat("buffer.scan_reads"), point_misses(&db));
    s.execute("SELECT v FROM t WHERE k = 1234").unwrap();
    assert_eq!(db.stat("buffer.scan_reads"), before.0);
    assert_eq!(
        point_misses(&db),
        before.1 + 1,
        "a key lookup reads its one page"
    );
}

#[test]
fn a_database_is_opened_by_one_owner_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let e = ndpdb_embedded::open(dir.path()).err().unwrap();
    assert_eq!(e.code, SqlState::OBJECT_IN_USE);
    drop(db);
    ndpdb_embedded::open(dir.path()).unwrap();
}

#[test]
fn corrupt_page_gives_an_error_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = ndpdb_embedded::open(dir.path()).unwrap();
        let mut s = Session::new(db.clone());
        s.execute("CREATE TABLE heap (a INT, b TEXT); CREATE TABLE keyed (a INT PRIMARY KEY)")
            .unwrap();
        s.execute("INSERT INTO heap VALUES (1, 'one'), (2, 'two')")
            .unwrap();
        db.checkpoint().unwrap();
        s.execute("INSERT INTO keyed VALUES (1), (2)").unwrap();
        db.checkpoint().unwrap();
    }
    // Page 0 holds the heap table's rows: flip bytes in it.
    let pages = dir.path().join("device/pages.dat");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&pages)
        .unwrap();
    f.seek(SeekFrom::Start(8000)).unwrap();
    f.write_all(b"garbage!").unwrap();
    drop(f);
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let mut s = Session::new(db);
    let e = s.execute("SELECT * FROM heap").unwrap_err();
    assert_eq!(e.code, SqlState::DATA_CORRUPTED);
    assert!(e.message.contains("checksum"), "{}", e.message);
    // Other tables stay usable.
    assert_eq!(
        s.execute("SELECT count(*) FROM keyed").unwrap()[0].tag(),
        "SELECT 1"
    );
}
