//! CH-benCHmark on embedded ndpdb at a tiny scale: every query answers,
//! the placement modes agree, and the TPC-C side stays consistent while
//! the analytical clients run beside it.

use std::time::Duration;

use ndpdb_host::Config;

use super::answers::Verdict;
use super::*;
use crate::tpcc::Scale;

fn tiny() -> ChConfig {
    ChConfig {
        tpcc: RunConfig {
            warehouses: 2,
            clients: 2,
            duration: Duration::ZERO,
            transactions: None,
            isolation: Level::ReadCommitted,
            seed: 3,
            scale: Scale::scaled_down(100),
            load_threads: 2,
        },
        olap_clients: 1,
        duration: Duration::from_secs(3),
        alone: Duration::from_secs(1),
        phases: true,
        modes: vec![NdpMode::Auto, NdpMode::Off],
        power_repeat: 1,
        olap_priority: crate::priority::Priority::Normal,
        olap_threads: Some(1),
        olap_cpus: Vec::new(),
    }
}

/// `cfg` run on a fresh embedded ndpdb.
fn run_embedded(cfg: &ChConfig) -> TargetResult {
    let (backend, _dir) = tpcc::backend(&Target::Ndpdb, &Config::default()).unwrap();
    run_target(
        &Target::Ndpdb,
        &backend,
        cfg,
        tpcc::db::now_micros(),
        &mut |l| println!("{l}"),
    )
}

#[test]
fn every_query_answers_alike_on_host_and_device_and_tpcc_stays_consistent() {
    let cfg = tiny();
    let r = run_embedded(&cfg);
    assert!(r.failure.is_none(), "{:?}", r.failure);
    assert_eq!(r.load.as_ref().map(|l| l.1), Some(10_067));
    let [auto, off] = &r.runs[..] else {
        panic!("two runs expected")
    };
    for q in &auto.power {
        assert!(q.answer.is_ok(), "{}: {:?}", q.name, q.answer);
    }
    // The device's answers are the host's.
    for (q, v) in auto
        .power
        .iter()
        .zip(answers::compare(&auto.power, Some(&off.power)))
    {
        assert!(
            matches!(v, Verdict::Identical | Verdict::SameRows),
            "{}: {v:?}",
            q.name
        );
    }
    // Some queries return rows on the loaded data (not all: Q11 and Q22
    // need transactions first, as in BenchBase).
    let with_rows = auto
        .power
        .iter()
        .filter(|q| q.answer.as_ref().is_ok_and(|r| !r.is_empty()))
        .count();
    assert!(with_rows >= 15, "only {with_rows} queries returned rows");
    for run in &r.runs {
        let mix = run.mix.as_ref().expect("mix ran");
        assert!(mix.oltp.get(tpcc::txn::Kind::NewOrder).committed > 0);
        assert_eq!(mix.oltp.errors(), 0, "{:?}", mix.oltp.error_codes());
        let done: u64 = mix.olap.iter().map(|q| q.latency.len()).sum();
        assert!(done > 0, "no analytical query completed beside TPC-C");
        for q in &mix.olap {
            assert!(q.errors.is_empty(), "{}: {:?}", q.name, q.errors);
            // Every completed run has its span inside the mix.
            assert_eq!(q.spans.len() as u64, q.latency.len(), "{}", q.name);
            let end = mix.samples.last().map_or(0.0, |s| s.at);
            assert!(q
                .spans
                .iter()
                .all(|&(a, b)| 0.0 <= a && a <= b && b <= end + 1.0));
        }
    }
    assert_eq!(r.conditions.len(), 8, "conditions 1–4 after each mix");
    assert!(r.conditions.iter().all(|c| c.passed), "{:?}", r.conditions);
}

#[test]
fn a_run_without_olap_clients_measures_tpcc_alone_over_the_same_seconds() {
    let cfg = ChConfig {
        olap_clients: 0,
        phases: false,
        modes: vec![NdpMode::Auto],
        ..tiny()
    };
    let r = run_embedded(&cfg);
    assert!(r.failure.is_none(), "{:?}", r.failure);
    let mix = r.runs[0].mix.as_ref().expect("mix ran");
    let (w0, w1) = mix.olap_window;
    assert!((0.9..2.5).contains(&w0), "window opens after --alone: {w0}");
    assert!(w1 - w0 >= 2.5, "window spans --duration: {w0}..{w1}");
    let p = report::phases(mix, &cfg);
    assert!(p.alone > 0.0 && p.beside > 0.0, "{p:?}");
    assert!(mix.olap.iter().all(|q| q.latency.is_empty()));
    assert_eq!(p.queries_per_hour, 0.0);
}

#[test]
fn an_olap_thread_cap_limits_the_sessions_scan_workers_and_pes() {
    let (backend, _dir) = tpcc::backend(&Target::Ndpdb, &Config::default()).unwrap();
    let mut conn = backend.connect().unwrap();
    let show = |conn: &mut crate::target::Conn, name: &str| {
        conn.query_rows(&format!("SHOW {name}")).unwrap()[0][0].clone()
    };
    assert_ne!(show(&mut conn, "host_workers").as_deref(), Some("1"));
    olap::limit_threads(&mut conn, false, 1).unwrap();
    assert_eq!(show(&mut conn, "host_workers").as_deref(), Some("1"));
    assert_eq!(show(&mut conn, "ndp_pes").as_deref(), Some("1"));
    olap::limit_threads(&mut conn, false, 3).unwrap();
    assert_eq!(show(&mut conn, "host_workers").as_deref(), Some("3"));
    assert_eq!(show(&mut conn, "ndp_pes").as_deref(), Some("3"));
}

/// The seconds of a mix are laid over each query's runs by their middle:
/// a query gets the OLTP rate of the seconds it was running in.
#[test]
fn oltp_throughput_is_attributed_to_the_query_running_in_each_second() {
    use super::olap::QueryStats;
    // 100 tx/s, except from 3 to 6 s (40 tx/s).
    let mut committed = 0;
    let samples: Vec<Sample> = (0..=10)
        .map(|s| {
            if s > 0 {
                committed += if (4..=6).contains(&s) { 40 } else { 100 };
            }
            Sample {
                at: s as f64,
                committed,
                new_orders: 0,
                queries: 0,
                kinds: [(0, 0); 5],
            }
        })
        .collect();
    let mut olap: Vec<QueryStats> = olap::queries(0)
        .iter()
        .map(|q| QueryStats {
            name: q.name,
            latency: crate::report::histogram(),
            errors: Default::default(),
            spans: Vec::new(),
        })
        .collect();
    // Q1 ran from 2.1 to 5.0 s (middles 2.5, 3.5, 4.5), Q2 twice from
    // 5.2 to 8.0 s (middles 5.5, 6.5, 7.5).
    olap[0].spans.push((2.1, 5.0));
    olap[1].spans.extend([(5.2, 6.9), (6.9, 8.0)]);
    let m = Mix {
        samples,
        oltp: tpcc::RunReport {
            elapsed: Duration::from_secs(10),
            types: Vec::new(),
        },
        olap,
        olap_window: (2.0, 9.0),
    };
    let by = report::oltp_by_query(&m);
    let (q1, s1) = by[0].unwrap();
    assert_eq!(s1, 3.0);
    assert!((q1 - 60.0).abs() < 1e-9, "{q1}"); // (40 + 40 + 100) / 3 s
    let (q2, s2) = by[1].unwrap();
    assert_eq!(s2, 3.0);
    assert!((q2 - 80.0).abs() < 1e-9, "{q2}"); // (40 + 100 + 100) / 3 s
    assert!(by[2..].iter().all(Option::is_none));
}

/// Each transaction type's mean latency between two moments comes from
/// the counters at those moments; a type with none completed has none.
#[test]
fn transaction_latency_per_type_is_the_mean_between_two_moments() {
    let at = |s: f64, new_orders: (u64, u64)| Sample {
        at: s,
        committed: 0,
        new_orders: 0,
        queries: 0,
        // 5 Payments in 5 ms in the first second, none after.
        kinds: [
            new_orders,
            if s > 0.0 { (5, 5_000) } else { (0, 0) },
            (0, 0),
            (0, 0),
            (0, 0),
        ],
    };
    let m = Mix {
        // 10 New-Orders in 20 ms by second 1, 30 more in 90 ms by 2.
        samples: vec![
            at(0.0, (0, 0)),
            at(1.0, (10, 20_000)),
            at(2.0, (40, 110_000)),
        ],
        oltp: tpcc::RunReport {
            elapsed: Duration::from_secs(2),
            types: Vec::new(),
        },
        olap: Vec::new(),
        olap_window: (1.0, 2.0),
    };
    let first = report::kind_latency_ms(&m, 0.0, 1.0);
    assert_eq!(first[0], Some(2.0));
    assert_eq!(first[1], Some(1.0));
    assert_eq!(first[2], None);
    let second = report::kind_latency_ms(&m, 1.0, 2.0);
    assert_eq!(second[0], Some(3.0));
    assert_eq!(second[1], None, "no Payment completed in that second");
}
