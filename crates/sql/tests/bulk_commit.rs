//! Large write sets are staged on pages of their own before a commit
//! takes its locks: what they commit reads back the same before and after
//! a crash, small commits keep filling the page a large one left open,
//! snapshots taken before a bulk commit keep their view, and an NDP scan
//! started right after one sees it (its pages flushed, not passed along).

use ndpdb_formats::Value;
use ndpdb_host::Config;
use ndpdb_sql::{Output, Session};

fn config() -> Config {
    Config {
        autovacuum: false,
        ..Config::default()
    }
}

fn ints(s: &mut Session, sql: &str) -> Vec<i64> {
    match s.execute(sql).unwrap().pop().unwrap() {
        Output::Rows { rows, .. } => rows
            .into_iter()
            .map(|r| match r[0] {
                Value::BigInt(n) => n,
                Value::Null => -1,
                ref v => panic!("{v:?}"),
            })
            .collect(),
        o => panic!("{o:?}"),
    }
}

/// (rows, sum of v, rows whose w is 'bulk') of `t`.
fn summary(s: &mut Session) -> Vec<i64> {
    let mut out = ints(s, "SELECT count(*) FROM t");
    out.extend(ints(s, "SELECT CAST(sum(v) AS BIGINT) FROM t"));
    out.extend(ints(s, "SELECT count(*) FROM t WHERE w = 'bulk'"));
    out
}

#[test]
fn bulk_commits_read_back_before_and_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let before_crash;
    {
        let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
        let mut s = Session::new(db.clone());
        s.execute("CREATE TABLE t (k BIGINT PRIMARY KEY, v BIGINT, w TEXT)")
            .unwrap();
        // 3,000 inserts in one transaction: staged.
        let mut sql = String::from("BEGIN;");
        for k in 0..3000 {
            sql.push_str(&format!("INSERT INTO t VALUES ({k}, {k}, 'row {k}');"));
        }
        sql.push_str("COMMIT");
        s.execute(&sql).unwrap();
        // Small commits go to the page the bulk one left open.
        for k in 3000..3010 {
            s.execute(&format!("INSERT INTO t VALUES ({k}, 1, 'single')"))
                .unwrap();
        }
        // A snapshot from before the bulk UPDATE keeps its view.
        let mut old = Session::new(db.clone());
        old.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            .unwrap();
        let old_view = summary(&mut old);
        s.execute("SET ndp = off").unwrap();
        s.execute("UPDATE t SET v = v + 1, w = 'bulk' WHERE k < 2500")
            .unwrap();
        s.execute("DELETE FROM t WHERE k % 3 = 0 AND k >= 2500 AND k < 3000")
            .unwrap();
        assert_eq!(summary(&mut old), old_view);
        old.execute("COMMIT").unwrap();
        let want = vec![
            3010 - (2500..3000).filter(|k| k % 3 == 0).count() as i64,
            (0..3000i64)
                .filter(|k| *k < 2500 || k % 3 != 0)
                .map(|k| if k < 2500 { k + 1 } else { k })
                .sum::<i64>()
                + 10,
            2500,
        ];
        assert_eq!(summary(&mut s), want);
        // A device scan right after the bulk commit sees all of it.
        s.execute("SET ndp = on").unwrap();
        assert_eq!(summary(&mut s), want);
        db.verify_pk_indexes().unwrap();
        before_crash = want;
        drop(s);
        drop(old);
        db.close_like_a_crash();
    }
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    let mut s = Session::new(db.clone());
    for ndp in ["off", "on"] {
        s.execute(&format!("SET ndp = {ndp}")).unwrap();
        assert_eq!(summary(&mut s), before_crash, "ndp = {ndp}");
    }
    db.verify_pk_indexes().unwrap();
    s.execute("VACUUM FULL t").unwrap();
    assert_eq!(summary(&mut s), before_crash);
    db.verify_no_leaked_pages().unwrap();
}
