//! ALTER TABLE … ADD / DROP COLUMN rewrite the table while no transaction
//! runs: a running transaction makes them wait (55P03 past lock_timeout),
//! and the rewritten table, its indexes and its sequence survive a crash.

use ndpdb_formats::{SqlState, Value};
use ndpdb_sql::{Output, Session};

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    match s.execute(sql).unwrap().pop().unwrap() {
        Output::Rows { rows, .. } => rows,
        o => panic!("{o:?}"),
    }
}

#[test]
fn a_rewrite_waits_for_running_transactions_and_survives_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = ndpdb_embedded::open(dir.path()).unwrap();
        let mut a = Session::new(db.clone());
        let mut b = Session::new(db.clone());
        a.execute(
            "CREATE TABLE t (id SERIAL PRIMARY KEY, k INT, drop_me TEXT);
             CREATE UNIQUE INDEX t_k ON t (k);
             INSERT INTO t (k, drop_me) VALUES (10, 'x'), (20, 'y')",
        )
        .unwrap();
        // A transaction of another session holds the rewrite off.
        b.execute("BEGIN; SELECT * FROM t").unwrap();
        a.execute("SET lock_timeout = '200ms'").unwrap();
        let e = a
            .execute("ALTER TABLE t ADD COLUMN v INT DEFAULT 7")
            .unwrap_err();
        assert_eq!(e.code, SqlState::LOCK_NOT_AVAILABLE);
        b.execute("COMMIT").unwrap();
        a.execute("ALTER TABLE t ADD COLUMN v INT DEFAULT 7; ALTER TABLE t DROP COLUMN drop_me")
            .unwrap();
        a.execute("INSERT INTO t (k) VALUES (30)").unwrap();
        drop((a, b));
        db.close_like_a_crash();
    }
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let mut s = Session::new(db);
    let int = |v: &[i32]| v.iter().map(|&x| Value::Int(x)).collect::<Vec<_>>();
    assert_eq!(
        rows(&mut s, "SELECT id, k, v FROM t ORDER BY id"),
        vec![int(&[1, 10, 7]), int(&[2, 20, 7]), int(&[3, 30, 7])]
    );
    // The unique index came through the rewrite and the crash.
    let plan = rows(&mut s, "EXPLAIN SELECT id FROM t WHERE k = 20");
    assert!(
        format!("{plan:?}").contains("Index Scan using t_k"),
        "{plan:?}"
    );
    let e = s.execute("INSERT INTO t (k) VALUES (20)").unwrap_err();
    assert_eq!(e.code, SqlState::UNIQUE_VIOLATION);
    // The SERIAL sequence moved with the table.
    s.execute("INSERT INTO t (k) VALUES (40)").unwrap();
    assert_eq!(
        rows(&mut s, "SELECT v FROM t WHERE k = 40"),
        vec![int(&[7])]
    );
    let e = s.execute("SELECT drop_me FROM t").unwrap_err();
    assert_eq!(e.code, SqlState::UNDEFINED_COLUMN);
}
