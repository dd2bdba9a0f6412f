//! The whole benchmark on embedded ndpdb at a tiny scale.

use std::time::Duration;

use ndpdb_host::Config;

use super::*;

fn tiny(isolation: Level) -> RunConfig {
    RunConfig {
        warehouses: 2,
        clients: 4,
        duration: Duration::from_secs(3),
        transactions: None,
        isolation,
        seed: 5,
        scale: Scale::scaled_down(100),
        load_threads: 2,
    }
}

fn run_embedded(cfg: &RunConfig) -> TargetResult {
    let (backend, _dir) = backend(&Target::Ndpdb, &Config::default()).unwrap();
    let result = run_target(&Target::Ndpdb, &backend, cfg, &mut |l| println!("{l}"));
    assert!(result.failure.is_none(), "{:?}", result.failure);
    result
}

fn assert_sound(result: &TargetResult) {
    let run = result.run.as_ref().unwrap();
    let new_order = run.get(Kind::NewOrder);
    assert!(new_order.committed > 0, "no New-Order committed");
    for k in [
        Kind::Payment,
        Kind::OrderStatus,
        Kind::Delivery,
        Kind::StockLevel,
    ] {
        assert!(run.get(k).completed() > 0, "no {} completed", k.name());
    }
    assert_eq!(run.errors(), 0, "errors: {:?}", run.error_codes());
    assert!(result.consistent(), "{:?}", result.conditions);
}

#[test]
fn tpcc_on_embedded_ndpdb_stays_consistent_at_read_committed() {
    assert_sound(&run_embedded(&tiny(Level::ReadCommitted)));
}

#[test]
fn tpcc_on_embedded_ndpdb_stays_consistent_at_serializable() {
    assert_sound(&run_embedded(&tiny(Level::Serializable)));
}

#[test]
fn scaled_down_sizes_keep_the_proportions() {
    let s = Scale::scaled_down(100);
    assert_eq!(
        (s.items, s.customers, s.new_orders(), s.last_names()),
        (1000, 30, 9, 30)
    );
    let t = Scale::STANDARD;
    assert_eq!((t.new_orders(), t.last_names()), (900, 1000));
    assert_eq!(
        load::expected_rows(1, t),
        100_000 + 1 + 100_000 + 10 * (1 + 3 * 3_000 + 30_000 + 900)
    );
}
