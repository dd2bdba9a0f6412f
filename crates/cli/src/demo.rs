//! `ndpdb demo`: a YCSB table loaded into a fresh embedded database,
//! YCSB-A and -C on it, then the same analytic query with NDP off and on
//! (read NDP) and YCSB-A beside a bulk UPDATE on the host and on the
//! device (update NDP) — a few minutes' tour of what the engine does.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use ndpdb_bench::isolation::{self, Level};
use ndpdb_bench::report::{engine_lines, StatsDelta};
use ndpdb_bench::target::Backend;
use ndpdb_bench::ycsb::{self, RunConfig, Workload};
use ndpdb_formats::SqlState;
use ndpdb_host::{Config, Database, Error, Result};
use ndpdb_sql::Session;

use crate::args::{machine_line, DeviceArgs};

pub fn demo(records: u64, seconds: u64, threads: usize, device: &DeviceArgs) -> Result<ExitCode> {
    let started = Instant::now();
    let dir = tempfile::tempdir()?;
    println!("ndpdb demo — embedded engine in {}", dir.path().display());
    let db = ndpdb_embedded::open_with(dir.path(), device.apply(Config::default())?)?;
    println!("{}", machine_line(&db));
    println!(
        "settings: buffer pool {} MiB, delta buffer {} KiB, {records} rows × 10 fields × 100 B",
        db.config().buffer_pool_bytes >> 20,
        db.config().delta_buffer_bytes >> 10
    );
    println!(
        "{}",
        isolation::line(&format!(
            "{} (YCSB, the read-NDP query, the update-NDP phase); {} (the load)",
            Level::ReadCommitted,
            Level::RepeatableRead
        ))
    );
    let delta = StatsDelta::start(&db);
    let load = ycsb::load(&db, records, 10, 100, true)?;
    println!(
        "loaded {records} rows in {:.1} s ({:.0} rows/s)",
        load.as_secs_f64(),
        records as f64 / load.as_secs_f64()
    );
    for l in engine_lines(&delta.finish(&db)) {
        println!("  {l}");
    }
    for (name, w) in [("YCSB-A", Workload::A), ("YCSB-C", Workload::C)] {
        let cfg = RunConfig {
            workload: w,
            records,
            threads,
            duration: Duration::from_secs(seconds),
            theta: 0.99,
            field_count: 10,
            field_len: 100,
            seed: 7,
            isolation: Level::ReadCommitted,
        };
        let r = ycsb::run(&Backend::Embedded(db.clone()), &cfg)?;
        for l in ycsb::describe(&format!("{name} ({threads} threads, zipf 0.99)"), &r) {
            println!("{l}");
        }
    }
    read_ndp_phase(&db)?;
    update_ndp_phase(&db, records, threads)?;
    println!("demo finished in {:.1} s", started.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}

/// The same analytic query with ndp off and on, side by side.
fn read_ndp_phase(db: &Database) -> Result<()> {
    let sql = "SELECT count(*), sum(length(field0)), min(field9) FROM usertable WHERE field1 LIKE 'a%' OR field2 LIKE 'b%'";
    println!("read NDP: {sql}");
    let mut results = Vec::new();
    for mode in ["off", "on"] {
        let mut s = Session::new(db.clone());
        s.execute(&format!("SET ndp = {mode}"))?;
        let delta = StatsDelta::start(db);
        let t = Instant::now();
        let out = s.execute(sql)?.pop();
        let elapsed = t.elapsed();
        let d = delta.finish(db);
        let g = |n: &str| ndpdb_bench::report::get(&d, n);
        println!(
            "  ndp {mode:<3}: {:>8.1} ms   data plane to host {:>10}   host buffer misses {:>7}   control messages {:>3}",
            elapsed.as_secs_f64() * 1e3,
            ndpdb_bench::report::human_bytes(g("link.data.to_host.bytes")),
            g("buffer.misses"),
            g("link.control.to_device.messages"),
        );
        results.push(out);
    }
    let same = results.windows(2).all(|w| w[0] == w[1]);
    println!("  results identical: {}", if same { "yes" } else { "NO" });
    if !same {
        return Err(Error::new(
            SqlState::INTERNAL_ERROR,
            "NDP and host results differ",
        ));
    }
    Ok(())
}

/// YCSB-A on the host while a bulk UPDATE of a quarter of the rows runs,
/// first on the host, then on the device (update NDP).
fn update_ndp_phase(db: &Database, records: u64, threads: usize) -> Result<()> {
    let opts = ndpdb_bench::mixed::MixedOptions {
        records,
        threads,
        workload: Workload::A,
        seconds: 6,
        warmup: 1.5,
        selectivity: 25,
        sample: Duration::from_millis(250),
    };
    println!(
        "update NDP: YCSB-A on {threads} host threads; after {} s: {}",
        opts.warmup,
        ndpdb_bench::mixed::update_sql(opts.selectivity)
    );
    let mut took = Vec::new();
    for ndp in [false, true] {
        let r = ndpdb_bench::mixed::run(&Backend::Embedded(db.clone()), &opts, ndp)?;
        let before = r.mean(ndpdb_bench::mixed::BEFORE);
        let during = r.mean(ndpdb_bench::mixed::DURING);
        println!(
            "  ndp {:<3}: update {} rows in {:>8.1} ms   YCSB ops/s before {:>7.0}  during {:>7.0} ({:>5.1} %)  after {:>7.0}   data plane to host {:>10}, to device {:>10}",
            if ndp { "on" } else { "off" },
            r.rows,
            r.update.as_secs_f64() * 1e3,
            before,
            during,
            during * 100.0 / before.max(1.0),
            r.mean(ndpdb_bench::mixed::AFTER),
            ndpdb_bench::report::human_bytes(r.counter("link.data.to_host.bytes")),
            ndpdb_bench::report::human_bytes(r.counter("link.data.to_device.bytes")),
        );
        took.push(r.update.as_secs_f64());
    }
    if let [host, device] = took[..] {
        println!(
            "  update NDP {:.2}× the speed of the host-only update",
            host / device.max(1e-9)
        );
    }
    Ok(())
}
