//! SERIALIZABLE (SSI) with sessions in one process, under every NDP
//! placement: write skew and predicate anti-dependency cycles end with
//! one transaction failing (40001) whether the reads run on the host or
//! on the device, and bulk UPDATEs on the device take part.

use ndpdb_formats::{SqlState, Value};
use ndpdb_host::{Config, Database};
use ndpdb_sql::{Output, Session};

fn open() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        autovacuum: false,
        ..Config::default()
    };
    let db = ndpdb_embedded::open_with(dir.path(), config).unwrap();
    (dir, db)
}

fn session(db: &Database, ndp: &str) -> Session {
    let mut s = Session::new(db.clone());
    s.execute(&format!("SET ndp = {ndp}")).unwrap();
    s
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

fn int(s: &mut Session, sql: &str) -> i64 {
    match &rows(s, sql)[0][0] {
        Value::BigInt(v) => *v,
        Value::Int(v) => *v as i64,
        Value::Numeric(d) => d.to_string().parse().unwrap(),
        v => panic!("{sql}: {v:?}"),
    }
}

fn load(db: &Database, n: i64) {
    let mut s = Session::new(db.clone());
    s.execute(
        "CREATE TABLE doctors (id INT PRIMARY KEY, shift INT NOT NULL, on_call BOOLEAN NOT NULL)",
    )
    .unwrap();
    let vals: Vec<String> = (0..n).map(|i| format!("({i}, {}, true)", i % 2)).collect();
    s.execute(&format!("INSERT INTO doctors VALUES {}", vals.join(", ")))
        .unwrap();
    db.flush().unwrap();
}

/// Runs the write-skew schedule; returns the outcome of the second
/// commit (the first always commits).
fn write_skew(db: &Database, ndp: &str, isolation: &str) -> Result<(), ndpdb_sql::Error> {
    let mut a = session(db, ndp);
    let mut b = session(db, ndp);
    for s in [&mut a, &mut b] {
        s.execute(&format!("BEGIN ISOLATION LEVEL {isolation}"))
            .unwrap();
    }
    let q = "SELECT count(*) FROM doctors WHERE shift = 0 AND on_call";
    let (ca, cb) = (int(&mut a, q), int(&mut b, q));
    assert!(ca >= 2 && cb >= 2);
    a.execute("UPDATE doctors SET on_call = false WHERE id = 0")
        .unwrap();
    b.execute("UPDATE doctors SET on_call = false WHERE id = 2")
        .unwrap();
    a.execute("COMMIT").unwrap();
    b.execute("COMMIT").map(|_| ())
}

#[test]
fn write_skew_is_prevented_at_serializable_wherever_the_reads_run() {
    for ndp in ["off", "on", "auto"] {
        let (_d, db) = open();
        load(&db, 4); // shift 0: doctors 0 and 2
        let e = write_skew(&db, ndp, "SERIALIZABLE").expect_err(ndp);
        assert_eq!(e.code, SqlState::SERIALIZATION_FAILURE, "{ndp}: {e:?}");
        assert_eq!(
            e.message,
            "could not serialize access due to read/write dependencies among transactions"
        );
        let mut s = session(&db, "off");
        let left = int(
            &mut s,
            "SELECT count(*) FROM doctors WHERE shift = 0 AND on_call",
        );
        assert_eq!(left, 1, "{ndp}: the invariant holds");
    }
}

#[test]
fn write_skew_happens_at_repeatable_read() {
    let (_d, db) = open();
    load(&db, 4);
    write_skew(&db, "on", "REPEATABLE READ").unwrap();
    let mut s = session(&db, "off");
    let left = int(
        &mut s,
        "SELECT count(*) FROM doctors WHERE shift = 0 AND on_call",
    );
    assert_eq!(left, 0, "snapshot isolation allows write skew");
}

/// G2 with predicates and inserts: each transaction reads a predicate the
/// other's insert matches.
#[test]
fn predicate_anti_dependency_cycle_fails_one() {
    for ndp in ["off", "on"] {
        let (_d, db) = open();
        load(&db, 4);
        let mut a = session(&db, ndp);
        let mut b = session(&db, ndp);
        for s in [&mut a, &mut b] {
            s.execute("BEGIN ISOLATION LEVEL SERIALIZABLE").unwrap();
            assert_eq!(int(s, "SELECT count(*) FROM doctors WHERE shift = 5"), 0);
        }
        a.execute("INSERT INTO doctors VALUES (100, 5, true)")
            .unwrap();
        b.execute("INSERT INTO doctors VALUES (101, 5, true)")
            .unwrap();
        a.execute("COMMIT").unwrap();
        let e = b.execute("COMMIT").unwrap_err();
        assert_eq!(e.code, SqlState::SERIALIZATION_FAILURE, "{ndp}");
    }
}

/// A bulk UPDATE run on the device writes the table it scans: with
/// another transaction reading that table and writing one the first
/// read, the cycle is caught.
#[test]
fn device_updates_take_part_in_conflicts() {
    let (_d, db) = open();
    load(&db, 2000);
    let mut s = Session::new(db.clone());
    s.execute("CREATE TABLE totals (id INT PRIMARY KEY, n BIGINT NOT NULL)")
        .unwrap();
    s.execute("INSERT INTO totals VALUES (1, 0)").unwrap();
    let mut a = session(&db, "on");
    let mut b = session(&db, "on");
    a.execute("BEGIN ISOLATION LEVEL SERIALIZABLE").unwrap();
    b.execute("BEGIN ISOLATION LEVEL SERIALIZABLE").unwrap();
    assert_eq!(int(&mut a, "SELECT n FROM totals WHERE id = 1"), 0);
    assert_eq!(
        int(&mut b, "SELECT count(*) FROM doctors WHERE on_call"),
        2000
    );
    let plan = rows(
        &mut a,
        "EXPLAIN UPDATE doctors SET on_call = false WHERE shift = 1",
    );
    assert!(format!("{plan:?}").contains("[device]"), "{plan:?}");
    a.execute("UPDATE doctors SET on_call = false WHERE shift = 1")
        .unwrap();
    b.execute("UPDATE totals SET n = 2000 WHERE id = 1")
        .unwrap();
    b.execute("COMMIT").unwrap();
    let e = a.execute("COMMIT").unwrap_err();
    assert_eq!(e.code, SqlState::SERIALIZATION_FAILURE);
    assert_eq!(
        int(&mut s, "SELECT count(*) FROM doctors WHERE on_call"),
        2000,
        "the device's versions were discarded"
    );
}

/// Transactions that do not overlap never conflict, and a READ ONLY
/// transaction that overlaps a writer may still commit.
#[test]
fn serial_and_read_only_transactions_commit() {
    let (_d, db) = open();
    load(&db, 4);
    let mut a = session(&db, "auto");
    let mut b = session(&db, "auto");
    for _ in 0..3 {
        for s in [&mut a, &mut b] {
            s.execute("BEGIN ISOLATION LEVEL SERIALIZABLE").unwrap();
            int(s, "SELECT count(*) FROM doctors WHERE on_call");
            s.execute("UPDATE doctors SET on_call = NOT on_call WHERE id = 1")
                .unwrap();
            s.execute("COMMIT").unwrap();
        }
    }
    a.execute("BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY")
        .unwrap();
    int(&mut a, "SELECT count(*) FROM doctors WHERE on_call");
    b.execute("BEGIN ISOLATION LEVEL SERIALIZABLE").unwrap();
    int(&mut b, "SELECT count(*) FROM doctors WHERE on_call");
    b.execute("UPDATE doctors SET on_call = false WHERE id = 3")
        .unwrap();
    b.execute("COMMIT").unwrap();
    int(&mut a, "SELECT count(*) FROM doctors WHERE on_call");
    a.execute("COMMIT").unwrap();
    assert_eq!(db.stat("ssi.tracked"), 0, "nothing stays tracked");
}

/// A scan whose terms fix the leading columns of a composite primary key
/// conflicts only with writes of rows with that key prefix, as
/// PostgreSQL's index-range predicate locks do.
#[test]
fn key_prefix_reads_conflict_only_within_their_prefix() {
    let (_d, db) = open();
    let mut s = Session::new(db.clone());
    s.execute("CREATE TABLE duty (shift INT, name TEXT, on_call BOOLEAN NOT NULL, PRIMARY KEY (shift, name))")
        .unwrap();
    s.execute(
        "INSERT INTO duty VALUES (1, 'a', true), (1, 'b', true), (2, 'c', true), (2, 'd', true)",
    )
    .unwrap();
    let run = |shift_a: i32, shift_b: i32| {
        let mut a = session(&db, "off");
        let mut b = session(&db, "off");
        a.execute("BEGIN ISOLATION LEVEL SERIALIZABLE").unwrap();
        b.execute("BEGIN ISOLATION LEVEL SERIALIZABLE").unwrap();
        for (s, shift) in [(&mut a, shift_a), (&mut b, shift_b)] {
            let n = int(
                s,
                &format!("SELECT count(*) FROM duty WHERE shift = {shift} AND on_call"),
            );
            assert!(n >= 1);
        }
        let victim = |shift: i32, first: bool| match (shift, first) {
            (1, true) => "a",
            (1, false) => "b",
            (_, true) => "c",
            _ => "d",
        };
        a.execute(&format!(
            "UPDATE duty SET on_call = NOT on_call WHERE shift = {shift_a} AND name = '{}'",
            victim(shift_a, true)
        ))
        .unwrap();
        b.execute(&format!(
            "UPDATE duty SET on_call = NOT on_call WHERE shift = {shift_b} AND name = '{}'",
            victim(shift_b, false)
        ))
        .unwrap();
        a.execute("COMMIT").unwrap();
        b.execute("COMMIT").map(|_| ())
    };
    run(1, 2).expect("different shifts do not conflict");
    let e = run(1, 1).expect_err("the same shift is write skew");
    assert_eq!(e.code, SqlState::SERIALIZATION_FAILURE);
}
