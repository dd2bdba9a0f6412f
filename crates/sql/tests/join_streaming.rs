//! Which side of a two-table hash join streams: a large first table whose
//! filter keeps most of its rows streams through the hashed second table
//! (CH-benCHmark Q15's ORDER-LINE through STOCK), while a selective
//! filter keeps the first table's few rows and joins them afterwards.
//! Both give the same answers.

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

#[test]
fn a_filter_keeping_most_rows_streams_the_large_table_through_the_small_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let mut s = Session::new(db);
    s.execute(
        "CREATE TABLE s (w INT, i INT, q INT, PRIMARY KEY (w, i));
         CREATE TABLE l (o INT PRIMARY KEY, w INT, i INT, amt INT, d INT);
         INSERT INTO s SELECT w, g, g % 7 FROM generate_series(1, 25000) g, generate_series(1, 2) w;
         INSERT INTO l SELECT g, 1 + (g * 7) % 2, 1 + (g * 13) % 25000, g % 100, g % 50
             FROM generate_series(1, 120000) g",
    )
    .unwrap();
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
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let mut s = Session::new(db);
    s.execute(
        "CREATE TABLE n (k INT PRIMARY KEY, name TEXT);
         CREATE TABLE s (w INT, i INT, q INT, PRIMARY KEY (w, i));
         CREATE TABLE l (o INT PRIMARY KEY, w INT, i INT, amt INT, d INT);
         INSERT INTO n SELECT k, 'n' || k FROM generate_series(0, 6) k;
         INSERT INTO s SELECT w, g, g % 7 FROM generate_series(1, 25000) g, generate_series(1, 2) w;
         INSERT INTO l SELECT g, 1 + (g * 7) % 2, 1 + (g * 13) % 25000, g % 100, g % 50
             FROM generate_series(1, 120000) g",
    )
    .unwrap();
    let joins = "FROM n, s, l WHERE n.k = s.q AND l.w = s.w AND l.i = s.i";
    let sql = format!("SELECT name, count(*), sum(amt) {joins} GROUP BY name ORDER BY name");
    let plan = explain_analyze(&mut s, &sql);
    assert!(plan.contains("s: 50000 rows read through"), "{plan}");
    assert!(plan.contains("l: 120000 rows read through"), "{plan}");
    // Every order line finds its stock row; its group is that row's q.
    let mut expected = std::collections::BTreeMap::<i64, (i64, i64)>::new();
    for g in 1..=120_000i64 {
        let i = 1 + (g * 13) % 25_000;
        let e = expected.entry(i % 7).or_default();
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
