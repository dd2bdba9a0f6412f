//! NDP scans with the device store in RADOS run inside the OSDs (class
//! `ndp`, `scan_v1`): the answers are those of a host scan, no page
//! crosses to the host, and a version chain that continues in another
//! object is finished on the device engine. Against the cluster
//! `CEPH_CONF` names (`scripts/test` starts one); skipped without one.
//!
//! One test per binary: it reads the process-wide librados counters.

mod common;

use ndpdb_embedded::rados::RadosStore;
use ndpdb_formats::Value;
use ndpdb_host::Config;
use ndpdb_sql::{Output, Session};

fn rows(out: Vec<Output>) -> Vec<Vec<Value>> {
    match out.into_iter().last() {
        Some(Output::Rows { rows, .. }) => rows,
        other => panic!("{other:?}"),
    }
}

/// The number after `label` on the EXPLAIN ANALYZE line that has it.
fn figure(plan: &[Vec<Value>], label: &str) -> u64 {
    let line = plan
        .iter()
        .filter_map(|r| match &r[0] {
            Value::Text(t) => Some(t.clone()),
            _ => None,
        })
        .find(|t| t.contains(label))
        .unwrap_or_else(|| panic!("no {label:?} in {plan:?}"));
    let before = &line[..line.find(label).unwrap()];
    before
        .split(|c: char| !c.is_ascii_digit())
        .rfind(|w| !w.is_empty())
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn ndp_scans_run_in_the_osds_and_return_results_not_pages() {
    let Some(conf) = common::ceph_conf() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_rados(dir.path(), Config::default(), &conf, "ndpdb").unwrap();
    let mut s = Session::new(db.clone());
    s.execute("CREATE TABLE t (k INT PRIMARY KEY, g INT NOT NULL, v BIGINT NOT NULL, s TEXT)")
        .unwrap();
    // Wide rows: the table spans several 4 MiB objects.
    s.execute(
        "INSERT INTO t SELECT i, i % 5, i, 'row ' || i || ' of a table whose pages are spread over several RADOS objects' \
         FROM generate_series(1, 60000) AS i",
    )
    .unwrap();
    db.checkpoint().unwrap();

    // The table's pages are objects of the pool.
    let store = RadosStore::of(dir.path(), "ndpdb").unwrap();
    let cluster = ndpdb_rados::Cluster::connect(&conf).unwrap();
    let pool = cluster.pool("ndpdb").unwrap();
    let head = format!("{}.pages.", store.prefix);
    let objects: Vec<String> = pool
        .objects()
        .unwrap()
        .into_iter()
        .filter(|o| o.starts_with(&head))
        .collect();
    assert!(objects.len() >= 2, "{objects:?}");
    let table_bytes: u64 = objects
        .iter()
        .map(|o| pool.stat(o).unwrap().unwrap_or(0))
        .sum();

    let queries = [
        "SELECT count(*), sum(v), min(s), max(s) FROM t",
        "SELECT g, count(*), sum(v), avg(v) FROM t GROUP BY g ORDER BY g",
        "SELECT k, s FROM t WHERE v % 997 = 7 ORDER BY k",
        "SELECT count(DISTINCT g), sum(DISTINCT g) FROM t WHERE k > 100",
    ];
    for q in queries {
        s.execute("SET ndp = off").unwrap();
        let host = rows(s.execute(q).unwrap());
        s.execute("SET ndp = on").unwrap();
        let before = ndpdb_rados::counters();
        let device = rows(s.execute(q).unwrap());
        let moved = ndpdb_rados::counters().since(&before);
        assert_eq!(device, host, "{q}");
        assert_eq!(moved.read_bytes, 0, "{q}: pages read to the host");
        assert!(
            moved.reply_bytes * 1000 <= table_bytes,
            "{q}: {} B returned for a table of {table_bytes} B",
            moved.reply_bytes
        );
        let plan = rows(s.execute(&format!("EXPLAIN ANALYZE {q}")).unwrap());
        let called = figure(&plan, "RADOS objects scanned in their OSDs");
        assert_eq!(called, objects.len() as u64, "{q}: {plan:?}");
    }

    // A snapshot from before an update of every row: the heads are the
    // new versions, which it does not see; their older versions lie in
    // other objects, so the OSDs hand those chains back.
    let sum = "SELECT count(*), sum(v) FROM t";
    let mut old = Session::new(db.clone());
    old.execute("SET ndp = on").unwrap();
    old.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        .unwrap();
    let then = rows(old.execute(sum).unwrap());
    s.execute("SET ndp = off").unwrap();
    s.execute("UPDATE t SET v = v + 1").unwrap();
    db.checkpoint().unwrap();
    let plan = rows(old.execute(&format!("EXPLAIN ANALYZE {sum}")).unwrap());
    let deferred = figure(&plan, "version chains finished on the device");
    assert!(deferred > 0, "{plan:?}");
    assert_eq!(rows(old.execute(sum).unwrap()), then);
    old.execute("COMMIT").unwrap();
    s.execute("SET ndp = on").unwrap();
    let now = rows(s.execute(sum).unwrap());
    assert_eq!(now[0][0], Value::BigInt(60000));
    let (Value::Numeric(a), Value::Numeric(b)) = (&then[0][1], &now[0][1]) else {
        panic!("{then:?} {now:?}");
    };
    assert_eq!(
        b.to_string().parse::<i64>().unwrap() - a.to_string().parse::<i64>().unwrap(),
        60000
    );

    // An update's read runs in the OSDs too (`versions_v1`): the objects
    // return the qualifying versions, the device engine locks and
    // changes them.
    let plan = rows(
        s.execute("EXPLAIN ANALYZE UPDATE t SET v = v + 1000000 WHERE k % 100 = 0")
            .unwrap(),
    );
    assert!(
        figure(&plan, "RADOS objects scanned in their OSDs") > 0,
        "{plan:?}"
    );
    s.execute("SET ndp = off").unwrap();
    let changed = rows(
        s.execute("SELECT count(*), min(k % 100), max(k % 100) FROM t WHERE v > 1000000")
            .unwrap(),
    );
    assert_eq!(
        changed,
        vec![vec![Value::BigInt(600), Value::Int(0), Value::Int(0)]]
    );
    s.execute("SET ndp = on").unwrap();
    s.execute("DELETE FROM t WHERE k % 100 = 1").unwrap();
    s.execute("SET ndp = off").unwrap();
    assert_eq!(
        rows(s.execute("SELECT count(*) FROM t").unwrap()),
        vec![vec![Value::BigInt(59400)]]
    );
}
