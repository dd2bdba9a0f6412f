//! Faults of the RADOS device store (`--device rados`), against the
//! cluster `CEPH_CONF` names (`scripts/test` starts one with
//! `scripts/ceph-test-cluster.sh`: 3 OSDs, pool `ndpdb` with 3 replicas,
//! min_size 2). Skipped without one.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use ndpdb_host::Config;
use ndpdb_sql::Session;

/// Kills `osd.N` of the cluster whose config is `conf` with SIGKILL.
fn kill_osd(conf: &Path, n: u32) {
    let pidfile = conf.parent().unwrap().join(format!("run/osd.{n}.pid"));
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: a plain signal to a process of our own cluster.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
}

/// Starts `osd.N` again and waits until the cluster is healthy, so the
/// tests that follow find it whole.
fn start_osd(conf: &Path, n: u32) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ceph-test-cluster.sh");
    let status = std::process::Command::new("bash")
        .arg(script)
        .arg("start-osd")
        .arg(conf.parent().unwrap())
        .arg(n.to_string())
        .status()
        .unwrap();
    assert!(status.success(), "osd.{n} did not come back");
}

/// One of three OSDs dies (SIGKILL) while NDP queries and NDP updates
/// run on the table's pages: every statement still answers, every
/// answer is right, and a reopen finds every committed update.
#[test]
fn an_osd_killed_under_ndp_queries_and_updates_loses_nothing() {
    let Some(conf) = common::ceph_conf() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_rados(dir.path(), Config::default(), &conf, "ndpdb").unwrap();
    let mut s = Session::new(db.clone());
    s.execute("CREATE TABLE acct (k INT PRIMARY KEY, v BIGINT NOT NULL)")
        .unwrap();
    s.execute("INSERT INTO acct SELECT g, 1 FROM generate_series(0, 19999) g")
        .unwrap();
    db.checkpoint().unwrap();
    s.execute("SET ndp = on").unwrap();

    let mut expected = 20_000i64;
    let start = Instant::now();
    let mut killed = false;
    let mut slowest = Duration::ZERO;
    let mut round = 0;
    while start.elapsed() < Duration::from_secs(20) || round < 10 {
        if !killed && start.elapsed() > Duration::from_secs(2) {
            kill_osd(&conf, 1);
            killed = true;
        }
        let t = Instant::now();
        let sum = common::int(&s.execute("SELECT sum(v)::bigint FROM acct").unwrap());
        assert_eq!(sum, expected, "round {round}");
        s.execute(&format!(
            "UPDATE acct SET v = v + 1 WHERE k % 10 = {}",
            round % 10
        ))
        .unwrap();
        expected += 2_000;
        if round % 4 == 3 {
            db.checkpoint().unwrap();
        }
        slowest = slowest.max(t.elapsed());
        round += 1;
    }
    assert!(killed);
    eprintln!("{round} rounds; the slowest took {slowest:?}");
    drop(s);
    drop(db);
    start_osd(&conf, 1);

    let db = ndpdb_embedded::open_rados(dir.path(), Config::default(), &conf, "ndpdb").unwrap();
    let mut s = Session::new(db.clone());
    for ndp in ["off", "on"] {
        s.execute(&format!("SET ndp = {ndp}")).unwrap();
        assert_eq!(
            common::int(&s.execute("SELECT sum(v)::bigint FROM acct").unwrap()),
            expected
        );
    }
}
