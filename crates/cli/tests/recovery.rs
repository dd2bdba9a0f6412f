//! Crash recovery: a child process runs a write workload (`ndpdb
//! crash-worker`) and is killed with SIGKILL at random moments. After each
//! kill the database is reopened and checked against a model built from
//! what the child acknowledged (host and update-NDP transactions): every
//! acknowledged commit is present, the
//! one transaction that may have been in its commit when killed is either
//! wholly present or wholly absent, rolled-back work never appears, and
//! the primary-key indexes agree with the VID maps. The child collects
//! garbage all the time (kills land in GC runs and checkpoints too) and
//! checks that an old snapshot never loses a version; after each reopen
//! a VACUUM FULL must leave no page that nothing needs.
//!
//! Committing update-NDP transactions let a waiting READ COMMITTED
//! transaction violate their locks (its commit depends on theirs). The
//! second half of the rounds kills the child while such a transaction
//! commits — inside its lock-violation window — and checks that no
//! dependent of a transaction that did not commit is present.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ndpdb_formats::Value;
use ndpdb_sql::{Output, Session};
use rand::{Rng, SeedableRng};

#[derive(Default)]
struct Model {
    counters: BTreeMap<i32, i64>,
    /// Acknowledged log ids still expected (the last three of each run).
    log: Vec<i64>,
    /// Committed transactions (acknowledged, or found after a kill).
    committed: std::collections::BTreeSet<i64>,
    /// Dependents (by the transaction they depend on) that committed.
    deps: Vec<i64>,
}

/// Rounds that kill at random moments, then rounds that kill while an
/// update-NDP transaction commits with lock violation.
const RANDOM_ROUNDS: u64 = 20;
const WINDOW_ROUNDS: u64 = 20;

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    match s.execute(sql).unwrap().pop().unwrap() {
        Output::Rows { rows, .. } => rows,
        o => panic!("{o:?}"),
    }
}

#[test]
fn sigkill_at_random_moments_loses_no_acknowledged_commit() {
    sigkill_rounds(None, RANDOM_ROUNDS, WINDOW_ROUNDS);
}

/// The same with the device store in Ceph RADOS (`CEPH_CONF`; skipped
/// without a cluster): the host's WAL in DIR and the pages and maps in
/// the pool come back together after every kill.
#[test]
fn sigkill_with_the_store_in_rados_loses_no_acknowledged_commit() {
    let Some(conf) = common::ceph_conf() else {
        return;
    };
    sigkill_rounds(Some(conf.as_path()), 6, 6);
}

/// Kills the worker `random_rounds` times at random moments, then
/// `window_rounds` times inside a lock-violation window, checking the
/// database against the model after each; `rados`: the cluster config
/// of a device store in RADOS.
fn sigkill_rounds(rados: Option<&std::path::Path>, random_rounds: u64, window_rounds: u64) {
    let open = |dir: &std::path::Path| match rados {
        None => ndpdb_embedded::open(dir).unwrap(),
        Some(conf) => {
            ndpdb_embedded::open_rados(dir, ndpdb_host::Config::default(), conf, "ndpdb").unwrap()
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let exe = env!("CARGO_BIN_EXE_ndpdb");
    let mut rng = rand::rngs::StdRng::seed_from_u64(0xC0FFEE);
    let mut model = Model::default();
    let mut acknowledged_total = 0u64;
    let mut ndp_total = 0u64;
    let mut gc_runs = 0i64;
    let mut vacuums = 0u64;
    let mut window_kills = 0u64;
    for round in 0..random_rounds + window_rounds {
        let mut worker = Command::new(exe);
        worker
            .args(["crash-worker", "--db"])
            .arg(dir.path())
            .args(["--seed", &round.to_string()]);
        if let Some(conf) = rados {
            worker.arg("--ceph-conf").arg(conf);
        }
        let mut child = worker
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let window = round >= random_rounds;
        let kill_after = Duration::from_millis(if window {
            60_000
        } else {
            rng.gen_range(20..400)
        });
        // Window rounds: the reader kills the child a moment after an
        // update-NDP transaction (one with a dependent) starts to commit,
        // past a few of them first.
        let pid = child.id() as libc::pid_t;
        let skip = rng.gen_range(1..4);
        let delay = Duration::from_micros(rng.gen_range(0..3000));
        let reader = std::thread::spawn(move || {
            let mut lines = Vec::new();
            let mut seen = 0;
            for l in BufReader::new(stdout).lines() {
                match l {
                    Ok(l) => {
                        let ndp_commit =
                            l.starts_with("begin ") && l.split(' ').nth(2) == Some("1000");
                        lines.push(l);
                        if window && ndp_commit {
                            seen += 1;
                            if seen > skip {
                                std::thread::sleep(delay);
                                // SAFETY: kill(2) on our own child's pid.
                                unsafe { libc::kill(pid, libc::SIGKILL) };
                            }
                        }
                    }
                    Err(_) => break,
                }
            }
            lines
        });
        let start = Instant::now();
        while start.elapsed() < kill_after {
            match child.try_wait() {
                Ok(Some(status)) if window => {
                    assert!(!status.success(), "worker exited: {status}");
                    break;
                }
                Ok(Some(status)) => panic!("worker exited early: {status}"),
                _ => {}
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = child.kill(); // SIGKILL
        child.wait().unwrap();
        let lines = reader.join().unwrap();

        // Replay the child's report into the model.
        let mut pending: Option<(i64, i64, Vec<i32>)> = None;
        let mut pending_dep: Option<(i64, i32)> = None;
        for l in &lines {
            let parts: Vec<&str> = l.split_whitespace().collect();
            match parts.as_slice() {
                ["dbegin", i, k] => {
                    pending_dep = Some((i.parse().unwrap(), k.parse().unwrap()));
                }
                ["dok", i] => {
                    let (pi, k) = pending_dep.take().expect("dok without dbegin");
                    assert_eq!(pi, i.parse::<i64>().unwrap());
                    *model.counters.entry(k).or_insert(0) += 1;
                    model.deps.push(pi);
                    acknowledged_total += 1;
                }
                ["begin", i, inc, k @ ..] => {
                    pending = Some((
                        i.parse().unwrap(),
                        inc.parse().unwrap(),
                        k.iter().map(|x| x.parse().unwrap()).collect(),
                    ));
                }
                ["ok", i] => {
                    let (pi, inc, keys) = pending.take().expect("ok without begin");
                    assert_eq!(pi, i.parse::<i64>().unwrap());
                    apply(&mut model, pi, inc, &keys);
                    acknowledged_total += 1;
                    ndp_total += u64::from(inc > 1);
                }
                ["violation", ..] => panic!("round {round}: {l}"),
                ["vacuum"] => vacuums += 1,
                _ => panic!("unexpected worker output {l:?}"),
            }
        }

        let db = open(dir.path());
        db.verify_pk_indexes().unwrap();
        let mut s = Session::new(db.clone());
        // Killed before its tables were created (a busy machine): nothing
        // may have been acknowledged then.
        if let Err(e) = s.execute("SELECT 1 FROM counters LIMIT 1") {
            assert_eq!(e.code.code(), "42P01", "{e:?}");
            assert!(
                model.counters.is_empty() && model.log.is_empty() && pending.is_none(),
                "round {round}: tables missing after acknowledged commits"
            );
            continue;
        }
        // Did the transaction in flight at the kill commit? Its log row tells.
        if let Some((i, inc, keys)) = &pending {
            let present = !rows(&mut s, &format!("SELECT id FROM log WHERE id = {i}")).is_empty();
            if present {
                apply(&mut model, *i, *inc, keys);
            }
            // Killed between its commit and the dependent's: inside the
            // window if the dependent had its lock already.
            let dependent_ran = pending_dep.as_ref().is_some_and(|(d, _)| d == i);
            if *inc > 1 && dependent_ran && !lines.iter().any(|l| l == &format!("ok {i}")) {
                window_kills += 1;
            }
        }
        // And its dependent? Its deps row tells; it may commit only after
        // the transaction it depends on.
        if let Some((i, k)) = pending_dep {
            let present = !rows(&mut s, &format!("SELECT id FROM deps WHERE id = {i}")).is_empty();
            if present {
                *model.counters.entry(k).or_insert(0) += 1;
                model.deps.push(i);
            }
        }
        for r in rows(&mut s, "SELECT id FROM deps ORDER BY id") {
            let i = r[0].as_i64().unwrap();
            assert!(
                model.committed.contains(&i),
                "round {round}: the dependent of transaction {i} committed, and {i} did not"
            );
        }
        let mut deps = model.deps.clone();
        deps.sort_unstable();
        let got_deps: Vec<i64> = rows(&mut s, "SELECT id FROM deps ORDER BY id")
            .into_iter()
            .map(|r| r[0].as_i64().unwrap())
            .collect();
        assert_eq!(got_deps, deps, "round {round}: dependents differ");
        let got: BTreeMap<i32, i64> = rows(&mut s, "SELECT k, v FROM counters ORDER BY k")
            .into_iter()
            .map(|r| (r[0].as_i64().unwrap() as i32, r[1].as_i64().unwrap()))
            .collect();
        assert_eq!(
            got, model.counters,
            "round {round}: counters differ from acknowledged commits"
        );
        let log: Vec<i64> = rows(&mut s, "SELECT id FROM log ORDER BY id")
            .into_iter()
            .map(|r| r[0].as_i64().unwrap())
            .collect();
        assert_eq!(log, model.log, "round {round}: log rows differ");
        // Nothing freed before the kill is lost, and GC leaves no page
        // behind that nothing needs.
        s.execute("VACUUM FULL").unwrap();
        db.verify_no_leaked_pages().unwrap();
        gc_runs += db.stat("gc.runs");
    }
    let rounds = random_rounds + window_rounds;
    assert!(
        gc_runs >= (rounds / 2) as i64,
        "too few GC runs after reopening ({gc_runs})"
    );
    assert!(
        window_kills >= window_rounds / 4,
        "too few kills inside a lock-violation window ({window_kills} of {window_rounds})"
    );
    eprintln!("kills inside a lock-violation window: {window_kills} of {window_rounds}");
    assert!(
        vacuums >= rounds / 2,
        "too few VACUUMs in the killed workers ({vacuums})"
    );
    assert!(
        acknowledged_total > 20,
        "the worker committed too little to test anything"
    );
    assert!(
        ndp_total >= 3,
        "too few acknowledged update-NDP transactions ({ndp_total})"
    );
}

/// Transaction i: +inc on each key, insert log i, delete log i-3.
fn apply(model: &mut Model, i: i64, inc: i64, keys: &[i32]) {
    model.committed.insert(i);
    for k in keys {
        *model.counters.entry(*k).or_insert(0) += inc;
    }
    model.log.push(i);
    model.log.retain(|&x| x != i - 3);
}
