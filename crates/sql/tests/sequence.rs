//! Sequences outside transactions: values never repeat across rollbacks
//! and crashes, `currval` belongs to the session, and SERIAL keys keep
//! growing after a restart.

use ndpdb_formats::{SqlState, Value};
use ndpdb_sql::{Output, Session};

fn ints(s: &mut Session, sql: &str) -> Vec<i64> {
    match s.execute(sql).unwrap().pop().unwrap() {
        Output::Rows { rows, .. } => rows
            .into_iter()
            .map(|r| r[0].as_i64().expect("an integer"))
            .collect(),
        o => panic!("{o:?}"),
    }
}

#[test]
fn values_are_unique_across_rollbacks_crashes_and_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let mut seen = Vec::new();
    {
        let db = ndpdb_embedded::open(dir.path()).unwrap();
        let mut a = Session::new(db.clone());
        let mut b = Session::new(db.clone());
        a.execute("CREATE TABLE t (id SERIAL PRIMARY KEY, v TEXT)")
            .unwrap();
        a.execute("INSERT INTO t (v) VALUES ('a'), ('b')").unwrap();
        // A rolled-back insert still used its value.
        a.execute("BEGIN; INSERT INTO t (v) VALUES ('gone'); ROLLBACK")
            .unwrap();
        seen.extend(ints(&mut a, "SELECT nextval('t_id_seq')"));
        // currval is the session's own.
        assert_eq!(ints(&mut a, "SELECT currval('t_id_seq')"), seen);
        let e = b.execute("SELECT currval('t_id_seq')").unwrap_err();
        assert_eq!(e.code, SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE);
        seen.extend(ints(&mut b, "SELECT nextval('t_id_seq')"));
        seen.extend(ints(&mut a, "SELECT id FROM t ORDER BY id"));
        drop((a, b));
        db.close_like_a_crash();
    }
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let mut s = Session::new(db);
    s.execute("INSERT INTO t (v) VALUES ('after')").unwrap();
    let after = ints(&mut s, "SELECT id FROM t WHERE v = 'after'");
    seen.sort_unstable();
    assert_eq!(seen, vec![1, 2, 4, 5]);
    assert!(
        after[0] > 5,
        "{after:?} repeats a value handed out before the crash"
    );
    // The rows committed before the crash are there, in key order.
    let rows = match s
        .execute("SELECT v FROM t ORDER BY id")
        .unwrap()
        .pop()
        .unwrap()
    {
        Output::Rows { rows, .. } => rows,
        o => panic!("{o:?}"),
    };
    let text = |v: &str| vec![Value::Text(v.into())];
    assert_eq!(rows, vec![text("a"), text("b"), text("after")]);
}
