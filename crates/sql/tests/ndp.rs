//! Read-only NDP: offloaded queries return exactly what the host returns
//! at the same snapshot (differential), see only what their snapshot
//! sees, are not disturbed by concurrent flushes, and fail cleanly on
//! corrupt pages. The differential tests run on every engine variant
//! (`ndpdb_embedded::process`: with `NDPDB_TEST_DEVICE_BIN` set, the
//! device is an `ndpdb device` process).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use ndpdb_formats::codec::Writer;
use ndpdb_formats::{SqlState, Value};
use ndpdb_host::Config;
use ndpdb_sql::{Output, Session};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn config() -> Config {
    Config {
        delta_buffer_bytes: 32 << 10,
        buffer_pool_bytes: 128 << 10,
        ..Config::default()
    }
}

fn rows(out: Output) -> Vec<Vec<Value>> {
    match out {
        Output::Rows { rows, .. } => rows,
        o => panic!("expected rows, got {o:?}"),
    }
}

/// Rows as a sorted multiset (queries without ORDER BY have no order).
fn canonical(mut r: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    let key = |row: &Vec<Value>| {
        let mut w = Writer::new();
        for v in row {
            v.key_bytes(&mut w);
        }
        w.into_inner()
    };
    r.sort_by_key(key);
    r
}

fn query(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    rows(
        s.execute(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
            .pop()
            .unwrap(),
    )
}

const SCHEMA: &str = "CREATE TABLE f (id INT PRIMARY KEY, g INT, n BIGINT, amount NUMERIC(8,2), w DOUBLE PRECISION, name TEXT, ok BOOLEAN, d DATE)";

fn random_row(rng: &mut StdRng, id: i64) -> String {
    let g = rng.gen_range(0..7).to_string();
    let n = rng.gen_range(-1000i64..1000).to_string();
    let amount = format!("{}.{:02}", rng.gen_range(-500..500), rng.gen_range(0..100));
    let w = format!("{}", rng.gen_range(-100.0..100.0f64));
    let name = format!(
        "'n{}{}'",
        rng.gen_range(0..30),
        "x".repeat(rng.gen_range(0..300))
    );
    let ok = rng.gen_bool(0.5).to_string();
    let d = format!(
        "'2024-{:02}-{:02}'",
        rng.gen_range(1..13),
        rng.gen_range(1..29)
    );
    let vals: Vec<String> = [g, n, amount, w, name, ok, d]
        .into_iter()
        .map(|v| {
            if rng.gen_ratio(1, 10) {
                "NULL".to_string()
            } else {
                v
            }
        })
        .collect();
    format!("({id}, {})", vals.join(", "))
}

fn random_query(rng: &mut StdRng) -> String {
    let filters = [
        "TRUE".to_string(),
        format!("g = {}", rng.gen_range(0..7)),
        format!(
            "n > {} AND n < {}",
            rng.gen_range(-1000..0),
            rng.gen_range(0..1000)
        ),
        format!(
            "amount BETWEEN {} AND {}",
            rng.gen_range(-500..0),
            rng.gen_range(0..500)
        ),
        format!("name LIKE 'n{}%'", rng.gen_range(0..30)),
        "ok IS NULL OR NOT ok".to_string(),
        format!("d >= '2024-{:02}-01'", rng.gen_range(1..13)),
        format!(
            "g IN ({}, {}) AND w > {}",
            rng.gen_range(0..7),
            rng.gen_range(0..7),
            rng.gen_range(-100..100)
        ),
        format!("id % {} = 0", rng.gen_range(2..9)),
    ];
    let f = &filters[rng.gen_range(0..filters.len())];
    match rng.gen_range(0..4) {
        0 => format!("SELECT id, n, name, amount * 2 FROM f WHERE {f}"),
        1 => format!("SELECT count(*), sum(n), sum(amount), min(name), max(d), avg(amount), avg(w) FROM f WHERE {f}"),
        2 => format!("SELECT g, count(*), sum(amount), count(DISTINCT ok), max(n) FROM f WHERE {f} GROUP BY g"),
        _ => format!("SELECT ok, min(amount), avg(n) FROM f WHERE {f} GROUP BY ok HAVING count(*) > 1"),
    }
}

/// Equal, except that DOUBLE sums may differ in the last bits: the
/// device adds per-PE partials, so the order of additions differs.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => {
            (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0)
        }
        _ => a == b,
    }
}

/// Compares a query with ndp off and on (with and without the device's
/// preloader) inside one snapshot transaction.
fn same_on_both_sides(s: &mut Session, q: &str) {
    s.execute("SET ndp = off").unwrap();
    let host = canonical(query(s, q));
    s.execute("SET ndp = on").unwrap();
    for preload in ["off", "on"] {
        s.execute(&format!("SET ndp_preload = {preload}")).unwrap();
        let device = canonical(query(s, q));
        let same = host.len() == device.len()
            && host
                .iter()
                .zip(&device)
                .all(|(h, d)| h.len() == d.len() && h.iter().zip(d).all(|(x, y)| same_value(x, y)));
        assert!(
            same,
            "query: {q} (preloader {preload})\nhost:   {host:?}\ndevice: {device:?}"
        );
    }
}

#[test]
fn offloaded_queries_equal_host_queries_at_the_same_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::process::open_variant(dir.path(), config()).unwrap();
    let mut setup = Session::new(db.clone());
    setup.execute(SCHEMA).unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    let mut next_id = 0i64;
    for _ in 0..6 {
        let vals: Vec<String> = (0..100)
            .map(|_| {
                next_id += 1;
                random_row(&mut rng, next_id)
            })
            .collect();
        setup
            .execute(&format!("INSERT INTO f VALUES {}", vals.join(", ")))
            .unwrap();
    }
    for round in 0..8 {
        // Committed changes: updates, deletes, inserts (some stay in the delta buffer).
        let mut w = Session::new(db.clone());
        for _ in 0..20 {
            let id = rng.gen_range(1..=next_id);
            let sql = match rng.gen_range(0..3) {
                0 => format!(
                    "UPDATE f SET n = n + 1, amount = amount - 1, g = {} WHERE id = {id}",
                    rng.gen_range(0..7)
                ),
                1 => format!("DELETE FROM f WHERE id = {id}"),
                _ => {
                    next_id += 1;
                    format!("INSERT INTO f VALUES {}", random_row(&mut rng, next_id))
                }
            };
            w.execute(&sql).unwrap();
        }
        // An aborted transaction and one left in flight during the queries.
        w.execute(&format!(
            "BEGIN; UPDATE f SET n = 999999 WHERE id % 3 = {}; ROLLBACK",
            round % 3
        ))
        .unwrap();
        let mut in_flight = Session::new(db.clone());
        in_flight
            .execute(&format!(
                "BEGIN; UPDATE f SET name = 'in-flight' WHERE id % 5 = {}; INSERT INTO f VALUES {}",
                round % 5,
                random_row(&mut rng, next_id + 1000)
            ))
            .unwrap();
        if round % 3 == 0 {
            db.flush().unwrap();
        }
        // A reader at one snapshot; then more commits that it must not see.
        let mut r = Session::new(db.clone());
        r.execute("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
        for _ in 0..6 {
            same_on_both_sides(&mut r, &random_query(&mut rng));
        }
        // (Its locks would block the writer below.)
        in_flight.execute("ROLLBACK").unwrap();
        w.execute(&format!("UPDATE f SET amount = 0 WHERE g = {}", round % 7))
            .unwrap();
        w.execute(&format!("DELETE FROM f WHERE id % 11 = {}", round))
            .unwrap();
        for _ in 0..6 {
            same_on_both_sides(&mut r, &random_query(&mut rng));
        }
        r.execute("COMMIT").unwrap();
    }
    assert!(db.stat("ndp.calls") >= 192);
    assert!(db.stat("delta_buffer.flushes") >= 3);
}

#[test]
fn ndp_sees_commits_before_its_snapshot_and_not_after() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::process::open_variant(dir.path(), config()).unwrap();
    let mut a = Session::new(db.clone());
    let mut b = Session::new(db.clone());
    a.execute("CREATE TABLE c (k INT PRIMARY KEY, v INT); INSERT INTO c VALUES (1, 1), (2, 2)")
        .unwrap();
    a.execute("SET ndp = on").unwrap();
    let count = |s: &mut Session| query(s, "SELECT count(*), sum(v) FROM c")[0].clone();
    assert_eq!(count(&mut a), vec![Value::BigInt(2), Value::BigInt(3)]);
    a.execute("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
    assert_eq!(count(&mut a), vec![Value::BigInt(2), Value::BigInt(3)]);
    b.execute("INSERT INTO c VALUES (3, 30); UPDATE c SET v = 10 WHERE k = 1")
        .unwrap();
    // Started before the commit: does not see it.
    assert_eq!(count(&mut a), vec![Value::BigInt(2), Value::BigInt(3)]);
    a.execute("COMMIT").unwrap();
    // Started after: sees it.
    assert_eq!(count(&mut a), vec![Value::BigInt(3), Value::BigInt(42)]);
}

#[test]
fn flushes_racing_with_ndp_queries_do_not_change_their_results() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::process::open_variant(dir.path(), config()).unwrap();
    let mut s = Session::new(db.clone());
    s.execute("CREATE TABLE r (k INT PRIMARY KEY, v BIGINT, pad TEXT)")
        .unwrap();
    let vals: Vec<String> = (0..2000)
        .map(|k| format!("({k}, {k}, '{}')", "p".repeat(100)))
        .collect();
    s.execute(&format!("INSERT INTO r VALUES {}", vals.join(",")))
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writer = {
        let (db, stop, written) = (db.clone(), stop.clone(), written.clone());
        thread::spawn(move || {
            let mut w = Session::new(db.clone());
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                w.execute(&format!(
                    "UPDATE r SET v = v + 1, pad = pad || 'x' WHERE k = {}",
                    i % 2000
                ))
                .unwrap();
                written.store(i, Ordering::Relaxed);
                if i.is_multiple_of(50) {
                    db.flush().unwrap();
                }
            }
            i
        })
    };
    let mut checked = 0;
    // At least 15 rounds, and as many more as the writer needs for 60
    // updates (however busy the machine), up to 1,000.
    let mut rounds = 0;
    while rounds < 15 || (written.load(Ordering::Relaxed) <= 60 && rounds < 1_000) {
        rounds += 1;
        s.execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SET ndp = on")
            .unwrap();
        let first = query(&mut s, "SELECT count(*), sum(v), max(length(pad)) FROM r");
        let mut by_key = BTreeMap::new();
        for _ in 0..4 {
            assert_eq!(
                query(&mut s, "SELECT count(*), sum(v), max(length(pad)) FROM r"),
                first
            );
            let rows = query(&mut s, "SELECT k, v FROM r WHERE k % 100 = 7");
            if by_key.is_empty() {
                by_key.extend(
                    rows.iter()
                        .map(|r| (r[0].clone().as_i64(), r[1].clone().as_i64())),
                );
            } else {
                let again: BTreeMap<_, _> = rows
                    .iter()
                    .map(|r| (r[0].clone().as_i64(), r[1].clone().as_i64()))
                    .collect();
                assert_eq!(again, by_key);
            }
            checked += 1;
        }
        s.execute("SET ndp = off").unwrap();
        assert_eq!(
            query(&mut s, "SELECT count(*), sum(v), max(length(pad)) FROM r"),
            first
        );
        s.execute("COMMIT").unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let updates = writer.join().unwrap();
    assert!(updates > 50 && checked >= 60, "updates {updates}");
    assert!(db.stat("delta_buffer.flushes") > 1);
}

#[test]
fn spn_udf_gives_identical_scores_on_host_and_device() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::process::open_variant(dir.path(), Config::default()).unwrap();
    let mut s = Session::new(db.clone());
    s.execute("CREATE TABLE u (id INT PRIMARY KEY, f BYTEA)")
        .unwrap();
    let mut rng = StdRng::seed_from_u64(3);
    let mut table = db.begin(ndpdb_host::Isolation::Snapshot).unwrap();
    table.begin_statement();
    let ts = db.table("u").unwrap();
    for id in 0..500 {
        let mut f = [0f32; 20];
        for x in f.iter_mut() {
            *x = rng.gen_range(-4.0..4.0);
        }
        table
            .insert(
                &ts,
                vec![
                    Value::Int(id),
                    Value::Bytea(ndpdb_formats::udf::spn_features(&f)),
                ],
            )
            .unwrap();
    }
    table.commit().unwrap();
    let q = "SELECT id, spn_score(f) FROM u WHERE id % 3 = 0";
    s.execute("SET ndp = off").unwrap();
    let host = canonical(query(&mut s, q));
    s.execute("SET ndp = on").unwrap();
    let device = canonical(query(&mut s, q));
    assert_eq!(host.len(), 167);
    // Bit-identical per row: the device runs the same function.
    assert_eq!(host, device);
    assert!(matches!(host[0][1], Value::Double(x) if x.is_finite()));
    let e = s.execute("SELECT spn_score('\\x0102'::bytea)").unwrap_err();
    assert_eq!(e.code, SqlState::INVALID_PARAMETER_VALUE);
}

#[test]
fn a_corrupt_page_fails_the_job_not_the_device() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = ndpdb_embedded::open(dir.path()).unwrap();
        let mut s = Session::new(db.clone());
        s.execute("CREATE TABLE h (a INT, b TEXT); INSERT INTO h VALUES (1, 'one'), (2, 'two')")
            .unwrap();
        s.execute("CREATE TABLE ok (a INT); INSERT INTO ok VALUES (5)")
            .unwrap();
    }
    let pages = dir.path().join("device/pages.dat");
    let mut bytes = std::fs::read(&pages).unwrap();
    bytes[8000] ^= 0xFF;
    std::fs::write(&pages, bytes).unwrap();
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let mut s = Session::new(db.clone());
    s.execute("SET ndp = on").unwrap();
    let e = s.execute("SELECT count(*) FROM h").unwrap_err();
    assert_eq!(e.code, SqlState::DATA_CORRUPTED, "{e:?}");
    // The device keeps serving other jobs.
    assert_eq!(
        query(&mut s, "SELECT sum(a) FROM ok"),
        vec![vec![Value::BigInt(5)]]
    );
}
