//! Which side of a two-table hash join streams: a large first table whose
//! filter keeps most of its rows streams through the hashed second table
//! (CH-benCHmark Q15's ORDER-LINE through STOCK), while a selective
//! filter keeps the first table's few rows and joins them afterwards.
//! Both give the same answers. A streamed table is joined (and grouped)
//! by the scan's workers chunk by chunk, rows held in memory probe on
//! join threads: with `host_workers` threads the answers are those of
//! one thread, in the same order.

use ndpdb_formats::Value;
use ndpdb_sql::{Output, Session};

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    match s.execute(sql).unwrap().pop().unwrap() {
        Output::Rows { rows, .. } => rows,
        o => panic!("{o:?}"),
    }
}

fn explain_analyze(s: &mut Session, sql: &str) -> String {
    rows(s, &format!("EXPLAIN ANALYZE {sql}"))
        .into_iter()
        .map(|r| format!("{:?}\n", r[0]))
        .collect()
}

/// Stock rows `s` (w 1–2, i 1–25,000, q = i mod 7), 120,000 order lines
/// `l` that each find their stock row (amt = o mod 100, d = o mod 50),
/// nations `n` (k 0–6) and 10,000 tags `m` (by i).
fn stock_and_lines() -> (tempfile::TempDir, Session) {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let mut s = Session::new(db);
    s.execute(
        "CREATE TABLE n (k INT PRIMARY KEY, name TEXT);
         CREATE TABLE s (w INT, i INT, q INT, PRIMARY KEY (w, i));
         CREATE TABLE l (o INT PRIMARY KEY, w INT, i INT, amt INT, d INT);
         CREATE TABLE m (i INT PRIMARY KEY, tag TEXT);
         INSERT INTO n SELECT k, 'n' || k FROM generate_series(0, 6) k;
         INSERT INTO s SELECT w, g, g % 7 FROM generate_series(1, 25000) g, generate_series(1, 2) w;
         INSERT INTO l SELECT g, 1 + (g * 7) % 2, 1 + (g * 13) % 25000, g % 100, g % 50
             FROM generate_series(1, 120000) g;
         INSERT INTO m SELECT g, 't' || (g % 13) FROM generate_series(1, 10000) g",
    )
    .unwrap();
    (dir, s)
}

/// The stock row's q of order line `g`.
fn q_of_line(g: i64) -> i64 {
    (1 + (g * 13) % 25_000) % 7
}

#[test]
fn a_filter_keeping_most_rows_streams_the_large_table_through_the_small_one() {
    let (_dir, mut s) = stock_and_lines();
    let join = |filter: &str| {
        format!("SELECT count(*), sum(amt) FROM l, s WHERE l.w = s.w AND l.i = s.i AND {filter}")
    };
    // 98 % of l's rows pass: l streams through s's 50,000 hashed rows.
    let most = join("l.d >= 1");
    let plan = explain_analyze(&mut s, &most);
    assert!(
        plan.contains("l: 117600 rows read through a join filter of 50000 keys"),
        "{plan}"
    );
    assert_eq!(
        rows(&mut s, &most),
        vec![vec![Value::BigInt(117_600), Value::BigInt(5_880_000)]]
    );
    // 2 %: l's 2,400 rows are read first and joined afterwards.
    let few = join("l.d = 7");
    let plan = explain_analyze(&mut s, &few);
    assert!(plan.contains("l: 2400 rows read"), "{plan}");
    assert!(
        !plan.contains("through a join filter of 50000 keys"),
        "{plan}"
    );
    assert_eq!(
        rows(&mut s, &few),
        vec![vec![
            Value::BigInt(2_400),
            Value::BigInt(1_200 * 7 + 1_200 * 57)
        ]]
    );
}

/// Three tables where each join streams the larger table through the
/// rows joined so far: the scan's workers probe their chunks at once.
/// The answers are those of joining row by row (computed here), and an
/// error raised while joining on a worker is the statement's error.
#[test]
fn rows_streamed_through_a_join_are_joined_on_the_scan_workers() {
    let (_dir, mut s) = stock_and_lines();
    let joins = "FROM n, s, l WHERE n.k = s.q AND l.w = s.w AND l.i = s.i";
    let sql = format!("SELECT name, count(*), sum(amt) {joins} GROUP BY name ORDER BY name");
    let plan = explain_analyze(&mut s, &sql);
    assert!(plan.contains("s: 50000 rows read through"), "{plan}");
    assert!(plan.contains("l: 120000 rows read through"), "{plan}");
    // Every order line finds its stock row; its group is that row's q.
    let mut expected = std::collections::BTreeMap::<i64, (i64, i64)>::new();
    for g in 1..=120_000i64 {
        let e = expected.entry(q_of_line(g)).or_default();
        e.0 += 1;
        e.1 += g % 100;
    }
    let expected: Vec<Vec<Value>> = expected
        .into_iter()
        .map(|(q, (n, sum))| {
            vec![
                Value::Text(format!("n{q}")),
                Value::BigInt(n),
                Value::BigInt(sum),
            ]
        })
        .collect();
    assert_eq!(rows(&mut s, &sql), expected);
    // Beside an outer join, an inner join's ON term that is not a key is
    // evaluated as rows are joined; l.d equals s.q for some of them.
    let err = s
        .execute(
            "SELECT count(*) FROM n JOIN s ON n.k = s.q
                 JOIN l ON l.w = s.w AND l.i = s.i AND l.amt / (l.d - s.q) >= 0
                 LEFT JOIN n AS m ON m.k = l.d",
        )
        .unwrap_err();
    assert_eq!(err.code.0, "22012", "{err:?}");
}

/// Joins, and GROUP BY over them, on 1, 2 and 3 threads: the same rows
/// in the same order, groups in the order of their first rows.
#[test]
fn threads_answer_as_one_thread_does_in_the_same_order() {
    let (_dir, mut s) = stock_and_lines();
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
    let p = explain_analyze(&mut s, streamed);
    assert!(p.contains("l: 120000 rows read through"), "{p}");
    let p = explain_analyze(&mut s, held);
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
    let kept = (1..=120_000i64).filter(|&g| g % 50 > q_of_line(g)).count() as i64;
    assert_eq!(counted, kept);
    assert_eq!(one[1].len(), 121);
    assert_eq!(one[2].len(), 13 * 7);
    for workers in [2, 3] {
        assert_eq!(answers(&mut s, workers), one, "{workers} workers");
    }
}
