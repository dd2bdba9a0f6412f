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
    }
}

#[test]
fn every_query_answers_alike_on_host_and_device_and_tpcc_stays_consistent() {
    let cfg = tiny();
    let (backend, _dir) = tpcc::backend(&Target::Ndpdb, &Config::default()).unwrap();
    let r = run_target(
        &Target::Ndpdb,
        &backend,
        &cfg,
        tpcc::db::now_micros(),
        &mut |l| println!("{l}"),
    );
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
        }
    }
    assert_eq!(r.conditions.len(), 8, "conditions 1–4 after each mix");
    assert!(r.conditions.iter().all(|c| c.passed), "{:?}", r.conditions);
}
