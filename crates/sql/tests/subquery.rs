//! Subqueries in prepared statements and across executions: memoized
//! answers never outlive an execution, parameters reach every level, and
//! planned (or failed) subqueries hold no database open.

use ndpdb_formats::{SqlState, Value};
use ndpdb_sql::{Output, Session};

fn rows(o: Output) -> Vec<Vec<Value>> {
    match o {
        Output::Rows { rows, .. } => rows,
        o => panic!("{o:?}"),
    }
}

fn setup(s: &mut Session) {
    s.execute(
        "CREATE TABLE a (id INT PRIMARY KEY, g INT);
         CREATE TABLE b (id INT PRIMARY KEY, a_id INT, v INT);
         INSERT INTO a VALUES (1, 1), (2, 1), (3, 2), (4, NULL);
         INSERT INTO b VALUES (10, 1, 5), (11, 1, 7), (12, 3, 9), (13, NULL, 1)",
    )
    .unwrap();
}

#[test]
fn prepared_subqueries_see_each_executions_parameters_and_data() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let mut s = Session::new(db);
    setup(&mut s);
    // $1 inside a correlated subquery, $2 in an uncorrelated IN, $3 outside.
    let p = s
        .prepare(
            "SELECT id, (SELECT count(*) FROM b WHERE b.a_id = a.id AND b.v > $1) \
             FROM a WHERE id IN (SELECT a_id FROM b WHERE v >= $2) AND id < $3 ORDER BY id",
        )
        .unwrap();
    let run = |s: &mut Session, args: [i32; 3]| {
        let params: Vec<Value> = args.iter().map(|&v| Value::Int(v)).collect();
        rows(s.execute_prepared(&p, &params).unwrap())
    };
    let int = |v: &[(i32, i64)]| -> Vec<Vec<Value>> {
        v.iter()
            .map(|&(a, b)| vec![Value::Int(a), Value::BigInt(b)])
            .collect()
    };
    assert_eq!(run(&mut s, [0, 0, 10]), int(&[(1, 2), (3, 1)]));
    assert_eq!(run(&mut s, [6, 0, 10]), int(&[(1, 1), (3, 1)]));
    assert_eq!(run(&mut s, [6, 8, 10]), int(&[(3, 1)]));
    assert_eq!(run(&mut s, [6, 0, 2]), int(&[(1, 1)]));
    // New data between executions: no answer is kept from the last one.
    s.execute("INSERT INTO b VALUES (14, 2, 100)").unwrap();
    assert_eq!(run(&mut s, [6, 8, 10]), int(&[(2, 1), (3, 1)]));
}

#[test]
fn subquery_errors_carry_postgresql_codes() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let mut s = Session::new(db);
    setup(&mut s);
    let code = |s: &mut Session, sql: &str| s.execute(sql).map(|_| ()).unwrap_err().code;
    assert_eq!(
        code(&mut s, "SELECT (SELECT id FROM b)"),
        SqlState::CARDINALITY_VIOLATION
    );
    assert_eq!(
        code(&mut s, "SELECT id FROM a WHERE g IN (SELECT id, v FROM b)"),
        SqlState::SYNTAX_ERROR
    );
    assert_eq!(
        code(&mut s, "SELECT id FROM a WHERE EXISTS (SELECT nope FROM b)"),
        SqlState::UNDEFINED_COLUMN
    );
    assert_eq!(
        code(&mut s, "SELECT * FROM (SELECT 1)"),
        SqlState::SYNTAX_ERROR
    );
    // A correlated subquery over grouped rows may name grouped columns only.
    assert_eq!(
        code(
            &mut s,
            "SELECT g, (SELECT count(*) FROM b WHERE b.a_id = a.id) FROM a GROUP BY g"
        ),
        SqlState::GROUPING_ERROR
    );
}

#[test]
fn planned_and_failed_subqueries_leave_the_database_closable() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = ndpdb_embedded::open(dir.path()).unwrap();
        let mut s = Session::new(db);
        setup(&mut s);
        s.prepare("SELECT id FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.a_id = a.id)")
            .unwrap();
        assert!(s
            .execute("SELECT id FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.a_id = a.nope)")
            .is_err());
        s.execute("WITH w AS (SELECT * FROM b) SELECT count(*) FROM w")
            .unwrap();
    }
    // Every handle is gone: the database opens again in this process.
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let mut s = Session::new(db);
    let r = rows(
        s.execute(
            "SELECT count(*) FROM a WHERE id NOT IN (SELECT a_id FROM b WHERE a_id IS NOT NULL)",
        )
        .unwrap()
        .pop()
        .unwrap(),
    );
    assert_eq!(r, vec![vec![Value::BigInt(2)]]);
}

#[test]
fn window_functions_rank_their_own_query_and_are_refused_inside_a_select_list_subquery() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let mut s = Session::new(db);
    setup(&mut s);
    let out = s
        .execute(
            "SELECT id, row_number() OVER (PARTITION BY g ORDER BY id DESC) FROM a ORDER BY id",
        )
        .unwrap()
        .pop()
        .unwrap();
    let got: Vec<(i64, i64)> = rows(out)
        .iter()
        .map(|r| (r[0].as_i64().unwrap(), r[1].as_i64().unwrap()))
        .collect();
    assert_eq!(got, vec![(1, 2), (2, 1), (3, 1), (4, 1)]);
    // A window call in a scalar subquery of the SELECT list is refused
    // rather than evaluated as the outer query's.
    let e = s
        .execute("SELECT id, (SELECT row_number() OVER () FROM b LIMIT 1) FROM a")
        .unwrap_err();
    assert_eq!(e.code, SqlState::FEATURE_NOT_SUPPORTED, "{e:?}");
}

/// What ndpdb cannot answer as PostgreSQL does is refused, never answered
/// otherwise: an aggregate of an enclosing query's columns inside a
/// subquery (PostgreSQL aggregates the outer rows), SELECT … INTO, and
/// CREATE TABLE clauses that would change what the table holds.
#[test]
fn statements_answered_otherwise_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let mut s = Session::new(db);
    setup(&mut s);
    let code = |s: &mut Session, sql: &str| s.execute(sql).unwrap_err().code;
    for sql in [
        "SELECT (SELECT count(*) FILTER (WHERE a.g <> 0) FROM b LIMIT 1) FROM a",
        "SELECT (SELECT max(a.g) FROM b LIMIT 1) FROM a",
        "SELECT id INTO t2 FROM a",
        "CREATE TABLE p (x INT) PARTITION BY RANGE (x)",
        "CREATE TABLE c () INHERITS (a)",
    ] {
        assert_eq!(code(&mut s, sql), SqlState::FEATURE_NOT_SUPPORTED, "{sql}");
    }
    assert_eq!(
        code(&mut s, "SELECT (SELECT id INTO t3 FROM b LIMIT 1) FROM a"),
        SqlState::SYNTAX_ERROR
    );
    // An aggregate of the subquery's own rows, naming an outer column too,
    // is the subquery's.
    let got = rows(
        s.execute(
            "SELECT id, (SELECT count(*) FILTER (WHERE b.v > a.g) FROM b) FROM a ORDER BY id",
        )
        .unwrap()
        .pop()
        .unwrap(),
    );
    assert_eq!(got[0], vec![Value::Int(1), Value::BigInt(3)]);
}
