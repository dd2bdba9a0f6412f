//! Joins, and GROUP BY over them, on `host_workers` threads answer as on
//! one thread: the same rows in the same order, groups in the order of
//! their first rows. A streamed table is joined and grouped by the scan's
//! workers chunk by chunk; rows held in memory probe on join threads.

use ndpdb_formats::Value;
use ndpdb_sql::{Output, Session};

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    match s.execute(sql).unwrap().pop().unwrap() {
        Output::Rows { rows, .. } => rows,
        o => panic!("{o:?}"),
    }
}

fn plan(s: &mut Session, sql: &str) -> String {
    rows(s, &format!("EXPLAIN ANALYZE {sql}"))
        .into_iter()
        .map(|r| format!("{:?}\n", r[0]))
        .collect()
}

#[test]
fn threads_answer_as_one_thread_does_in_the_same_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let mut s = Session::new(db);
    s.execute(
        "CREATE TABLE n (k INT PRIMARY KEY, name TEXT);
         CREATE TABLE s (w INT, i INT, q INT, PRIMARY KEY (w, i));
         CREATE TABLE l (o INT PRIMARY KEY, w INT, i INT, amt NUMERIC(6,2), d INT);
         CREATE TABLE m (i INT PRIMARY KEY, tag TEXT);
         INSERT INTO n SELECT k, 'n' || k FROM generate_series(0, 6) k;
         INSERT INTO s SELECT w, g, (g * 31) % 7 FROM generate_series(1, 25000) g, generate_series(1, 2) w;
         INSERT INTO l SELECT g, 1 + (g * 7) % 2, 1 + (g * 13) % 25000, (g % 1000) / 10.0, g % 50
             FROM generate_series(1, 120000) g;
         INSERT INTO m SELECT g, 't' || (g % 13) FROM generate_series(1, 10000) g",
    )
    .unwrap();
    // The last step streams l (120,000 rows) through the 50,000 rows
    // joined so far: grouped on the scan's workers.
    let streamed = "SELECT name, count(*), sum(amt), min(d), max(o), count(DISTINCT d), avg(amt)
        FROM n, s, l WHERE n.k = s.q AND l.w = s.w AND l.i = s.i AND l.d > s.q GROUP BY name";
    // Groups whose first rows lie in different chunks (and so reach
    // different workers first).
    let spread = "SELECT l.o / 1000, count(*), sum(amt) FROM n, s, l
        WHERE n.k = s.q AND l.w = s.w AND l.i = s.i GROUP BY l.o / 1000";
    // The last step hashes m and probes it with the 50,000 rows held.
    let held = "SELECT tag, name, count(*), sum(s.i) FROM n, s, m
        WHERE n.k = s.q AND m.i = s.i GROUP BY tag, name";
    // Rows out of a join without GROUP BY, in the order they are made.
    let joined = "SELECT s.w, s.i, tag FROM n, s, m WHERE n.k = s.q AND m.i = s.i AND s.q < 3";
    s.execute("SET host_workers = 2").unwrap();
    let p = plan(&mut s, streamed);
    assert!(p.contains("l: 120000 rows read through"), "{p}");
    let p = plan(&mut s, held);
    assert!(p.contains("m: 10000 rows read in"), "{p}");
    assert!(p.contains("20000 rows joined"), "{p}");
    let answers = |s: &mut Session, workers: u32| {
        s.execute(&format!("SET host_workers = {workers}")).unwrap();
        [streamed, spread, held, joined].map(|q| rows(s, q))
    };
    let one = answers(&mut s, 1);
    // Every order line finds its stock row; d > q drops some.
    let counted: i64 = one[0]
        .iter()
        .map(|r| match r[1] {
            Value::BigInt(n) => n,
            ref v => panic!("{v:?}"),
        })
        .sum();
    let kept = (1..=120_000i64)
        .filter(|g| g % 50 > ((1 + (g * 13) % 25_000) * 31) % 7)
        .count() as i64;
    assert_eq!(counted, kept);
    assert_eq!(one[1].len(), 121);
    assert_eq!(one[2].len(), 13 * 7);
    for workers in [2, 3] {
        assert_eq!(answers(&mut s, workers), one, "{workers} workers");
    }
}
