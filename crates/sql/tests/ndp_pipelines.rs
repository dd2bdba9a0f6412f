//! NDP pipelines (update NDP §4.1): consecutive NDP statements of one
//! REPEATABLE READ transaction — SELECT … FOR UPDATE then UPDATE/DELETE
//! with the same or a narrower WHERE clause, UPDATE then DELETE — run over
//! the versions the previous statement left on the device instead of
//! walking the table again. Every scenario runs twice, once on the device
//! and once on the host only, and the tables must end up identical.

use ndpdb_formats::{SqlState, Value};
use ndpdb_host::{Config, Database};
use ndpdb_sql::{Output, Session};

const ROWS: i64 = 2000;

fn config() -> Config {
    Config {
        delta_buffer_bytes: 64 << 10,
        buffer_pool_bytes: 256 << 10,
        autovacuum: false,
        ..Config::default()
    }
}

fn run(s: &mut Session, sql: &str) -> Output {
    s.execute(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
        .pop()
        .unwrap_or_else(|| panic!("{sql}: no output"))
}

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    match run(s, sql) {
        Output::Rows { rows, .. } => rows,
        o => panic!("{sql}: expected rows, got {o:?}"),
    }
}

fn tag(s: &mut Session, sql: &str) -> String {
    match run(s, sql) {
        Output::Command { tag } => tag,
        o => panic!("{sql}: expected a command tag, got {o:?}"),
    }
}

/// An integer result (sums of BIGINT come back as NUMERIC).
fn int(v: &Value) -> i64 {
    match v {
        Value::Int(x) => *x as i64,
        Value::BigInt(x) => *x,
        v => v
            .to_pg_text()
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("not an integer: {v:?}")),
    }
}

fn open(dir: &std::path::Path) -> Database {
    ndpdb_embedded::open_with(dir, config()).unwrap()
}

/// `t(k, c, g, name)` with ROWS rows, flushed to the device.
fn setup(db: &Database) -> Session {
    let mut s = Session::new(db.clone());
    run(
        &mut s,
        "CREATE TABLE t (k INT PRIMARY KEY, c BIGINT NOT NULL, g INT NOT NULL, name TEXT)",
    );
    for chunk in (0..ROWS).collect::<Vec<_>>().chunks(500) {
        let vals: Vec<String> = chunk
            .iter()
            .map(|k| format!("({k}, 0, {}, 'row {k}')", k % 20))
            .collect();
        run(&mut s, &format!("INSERT INTO t VALUES {}", vals.join(", ")));
    }
    db.flush().unwrap();
    s
}

fn table(s: &mut Session) -> Vec<Vec<Value>> {
    rows(s, "SELECT k, c, g, name FROM t ORDER BY k")
}

/// Runs `script` (statements, with their expected results: a command tag
/// or a row count) on the device and on the host only; returns the
/// device run's database for more checks, after asserting that both
/// tables are equal at the end.
fn both_ways(script: &[(&str, &str)]) -> (tempfile::TempDir, Database) {
    let mut tables = Vec::new();
    let mut kept = None;
    for ndp in ["on", "off"] {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path());
        let mut s = setup(&db);
        run(&mut s, &format!("SET ndp = {ndp}"));
        for (sql, want) in script {
            let got = match run(&mut s, sql) {
                Output::Command { tag } => tag,
                Output::Rows { rows, .. } => format!("{} rows", rows.len()),
            };
            assert_eq!(&got, want, "ndp = {ndp}: {sql}");
        }
        tables.push(table(&mut s));
        if ndp == "on" {
            kept = Some((dir, db));
        }
    }
    assert!(tables[0] == tables[1], "device and host tables differ");
    kept.unwrap()
}

#[test]
fn for_update_then_a_narrower_update_then_delete_run_over_the_stages() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = setup(&db);
    run(&mut s, "SET ndp = on");
    run(&mut s, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    assert_eq!(
        rows(&mut s, "SELECT k, c FROM t WHERE g = 0 FOR UPDATE").len(),
        100
    );
    let (walked, pipelined) = (db.stat("ndp.tuples"), db.stat("ndp.pipelined_statements"));
    // Narrower: one more condition.
    assert_eq!(
        tag(&mut s, "UPDATE t SET c = c + k WHERE g = 0 AND k < 1000"),
        "UPDATE 50"
    );
    assert_eq!(db.stat("ndp.tuples") - walked, 100, "only the locked rows");
    // The DELETE goes on from the UPDATE's new versions: its filter is
    // checked on them (c = k now).
    let walked = db.stat("ndp.tuples");
    assert_eq!(
        tag(
            &mut s,
            "DELETE FROM t WHERE g = 0 AND k < 1000 AND c >= 500"
        ),
        "DELETE 25"
    );
    assert_eq!(db.stat("ndp.tuples") - walked, 50, "only the changed rows");
    assert_eq!(db.stat("ndp.pipelined_statements") - pipelined, 2);
    // The transaction sees its own pipeline's work.
    let r = &rows(&mut s, "SELECT count(*), sum(c) FROM t WHERE g = 0")[0];
    assert_eq!((int(&r[0]), int(&r[1])), (75, (0..500).step_by(20).sum()));
    // Others do not, until it commits.
    let mut other = Session::new(db.clone());
    assert_eq!(
        rows(&mut other, "SELECT count(*) FROM t")[0][0],
        Value::BigInt(ROWS)
    );
    run(&mut s, "COMMIT");
    assert_eq!(
        rows(&mut other, "SELECT count(*) FROM t")[0][0],
        Value::BigInt(ROWS - 25)
    );
    // The locks went with the commit.
    assert_eq!(
        tag(&mut other, "UPDATE t SET c = 1 WHERE k = 0"),
        "UPDATE 1"
    );
}

#[test]
fn pipelines_give_the_host_only_answers() {
    // FOR UPDATE → same predicate → narrower; UPDATE → DELETE whose rows
    // the UPDATE moved out of the predicate (nothing deleted, as in
    // PostgreSQL); a wider statement scans; ROLLBACK drops everything.
    let (_dir, db) = both_ways(&[
        ("BEGIN ISOLATION LEVEL REPEATABLE READ", "BEGIN"),
        ("SELECT k FROM t WHERE g < 3 FOR UPDATE", "300 rows"),
        ("UPDATE t SET c = c + 1 WHERE g < 3", "UPDATE 300"),
        (
            "UPDATE t SET c = c * 10 WHERE g < 3 AND k % 2 = 0",
            "UPDATE 200",
        ),
        (
            "DELETE FROM t WHERE g < 3 AND k % 2 = 0 AND k > 1900",
            "DELETE 9",
        ),
        ("COMMIT", "COMMIT"),
        ("BEGIN ISOLATION LEVEL REPEATABLE READ", "BEGIN"),
        ("UPDATE t SET g = g + 100 WHERE g = 5", "UPDATE 100"),
        ("DELETE FROM t WHERE g = 5", "DELETE 0"),
        ("COMMIT", "COMMIT"),
        ("BEGIN ISOLATION LEVEL REPEATABLE READ", "BEGIN"),
        ("SELECT k FROM t WHERE g = 7 FOR UPDATE", "100 rows"),
        ("UPDATE t SET c = -1 WHERE g >= 7", "UPDATE 1400"),
        ("DELETE FROM t WHERE g >= 7 AND k < 100", "DELETE 70"),
        ("COMMIT", "COMMIT"),
        ("BEGIN ISOLATION LEVEL REPEATABLE READ", "BEGIN"),
        ("UPDATE t SET c = 42 WHERE g = 1", "UPDATE 100"),
        ("DELETE FROM t WHERE g = 1", "DELETE 100"),
        ("ROLLBACK", "ROLLBACK"),
    ]);
    // On the device: FOR UPDATE → UPDATE → UPDATE → DELETE, UPDATE →
    // DELETE, UPDATE → DELETE after the wider UPDATE, UPDATE → DELETE.
    assert_eq!(db.stat("ndp.pipelined_statements"), 3 + 1 + 1 + 1);
}

/// READ COMMITTED takes a new snapshot per statement: an UPDATE after a
/// SELECT … FOR UPDATE must also change rows committed in between, so it
/// scans instead of going on from the locked rows.
#[test]
fn read_committed_statements_see_rows_committed_in_between() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = setup(&db);
    run(&mut s, "SET ndp = on");
    run(&mut s, "BEGIN ISOLATION LEVEL READ COMMITTED");
    assert_eq!(
        rows(&mut s, "SELECT k FROM t WHERE g = 0 FOR UPDATE").len(),
        100
    );
    let mut other = Session::new(db.clone());
    run(&mut other, "INSERT INTO t VALUES (5000, 0, 0, 'new')");
    assert_eq!(
        tag(&mut s, "UPDATE t SET c = 7 WHERE g = 0"),
        "UPDATE 101",
        "the row committed after the FOR UPDATE is updated too"
    );
    assert_eq!(
        tag(&mut s, "DELETE FROM t WHERE g = 0 AND c = 7"),
        "DELETE 101"
    );
    run(&mut s, "COMMIT");
    assert_eq!(db.stat("ndp.pipelined_statements"), 0);
    assert_eq!(
        rows(&mut other, "SELECT count(*) FROM t WHERE g = 0")[0][0],
        Value::BigInt(0)
    );
}

/// A host write to the table ends the pipeline: the next bulk statement
/// runs on the host and sees the host's change.
#[test]
fn a_host_write_between_the_statements_ends_the_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = setup(&db);
    run(&mut s, "SET ndp = on");
    run(&mut s, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    assert_eq!(tag(&mut s, "UPDATE t SET c = 1 WHERE g = 3"), "UPDATE 100");
    // A primary-key update stays on the host.
    assert_eq!(tag(&mut s, "UPDATE t SET c = 2 WHERE k = 3"), "UPDATE 1");
    let pipelined = db.stat("ndp.pipelined_statements");
    assert_eq!(
        tag(&mut s, "DELETE FROM t WHERE g = 3 AND c = 1"),
        "DELETE 99"
    );
    assert_eq!(db.stat("ndp.pipelined_statements"), pipelined);
    run(&mut s, "COMMIT");
    assert_eq!(
        rows(&mut s, "SELECT k, c FROM t WHERE g = 3"),
        vec![vec![Value::Int(3), Value::BigInt(2)]]
    );
}

/// An UPDATE → DELETE pipeline commits as two chained update jobs: both
/// survive a crash (basic logging) and a lock-violating commit
/// (extended logging with `ndp_lock_violation = on`).
#[test]
fn a_committed_pipeline_survives_a_crash_in_every_logging_mode() {
    for (logging, violation) in [("basic", "off"), ("extended", "on"), ("off", "off")] {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = open(dir.path());
            let mut s = setup(&db);
            run(&mut s, "SET ndp = on");
            run(&mut s, &format!("SET ndp_logging = {logging}"));
            run(&mut s, &format!("SET ndp_lock_violation = {violation}"));
            run(&mut s, "BEGIN ISOLATION LEVEL REPEATABLE READ");
            assert_eq!(
                tag(&mut s, "UPDATE t SET c = k WHERE g < 10"),
                "UPDATE 1000"
            );
            assert_eq!(
                tag(&mut s, "DELETE FROM t WHERE g < 10 AND c >= 1000"),
                "DELETE 500"
            );
            run(&mut s, "COMMIT");
            assert_eq!(db.stat("ndp.pipelined_statements"), 1, "{logging}");
            db.close_like_a_crash();
        }
        let db = open(dir.path());
        let mut s = Session::new(db.clone());
        let r = &rows(
            &mut s,
            "SELECT count(*), sum(c), max(c) FROM t WHERE g < 10",
        )[0];
        let kept: i64 = (0..1000).filter(|k| k % 20 < 10).sum();
        assert_eq!(
            (int(&r[0]), int(&r[1]), int(&r[2])),
            (500, kept, 989),
            "ndp_logging = {logging}"
        );
        assert_eq!(
            rows(&mut s, "SELECT count(*) FROM t")[0][0],
            Value::BigInt(ROWS - 500)
        );
    }
}

/// A failed pipeline statement leaves nothing behind: the transaction
/// rolls back to the state before it began.
#[test]
fn a_failing_step_rolls_the_whole_pipeline_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = setup(&db);
    let before = table(&mut s);
    run(&mut s, "SET ndp = on");
    run(&mut s, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    assert_eq!(
        tag(&mut s, "UPDATE t SET c = 100 WHERE g = 4"),
        "UPDATE 100"
    );
    let e = s
        .execute("UPDATE t SET c = c / (c - 100) WHERE g = 4 AND k < 500")
        .unwrap_err();
    assert_eq!(e.code, SqlState::DIVISION_BY_ZERO);
    run(&mut s, "ROLLBACK");
    assert!(table(&mut s) == before);
    // Nothing stays locked.
    let mut other = Session::new(db.clone());
    assert_eq!(
        tag(&mut other, "UPDATE t SET c = 3 WHERE g = 4"),
        "UPDATE 100"
    );
}
