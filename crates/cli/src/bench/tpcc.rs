//! `ndpdb bench tpcc`: TPC-C on each target in turn — load, the mix for
//! a fixed time, consistency conditions 1–4 — and the targets side by
//! side (`ndpdb_bench::tpcc`). Writes `tpcc.csv` (per target and
//! transaction type) and `summary.txt` to the output folder; exit status
//! 1 when a consistency condition fails or a target could not run.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use ndpdb_bench::isolation::Level;
use ndpdb_bench::tpcc::{self, RunConfig, Scale};
use ndpdb_host::Result;

use crate::args::{isolation_level, machine_line, DeviceArgs};
use crate::targets::{BenchStart, Summary};

#[derive(clap::Args, Clone, Debug)]
pub struct TpccArgs {
    /// Warehouses (each 100,000 stock rows, 30,000 customers and orders).
    #[arg(long, default_value_t = 1)]
    warehouses: u32,
    /// Client sessions, each bound to a home warehouse (round robin).
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// Seconds of the mix per target.
    #[arg(long, default_value_t = 60)]
    duration: u64,
    /// Where to run, repeatable for a side-by-side table: ndpdb
    /// (embedded), ndpdb-server[=HOST:PORT] (without an address: a server
    /// in this process on a fresh database), postgres[=CONNSTRING]
    /// (default $NDPDB_POSTGRES, see scripts/postgres-baseline.sh).
    #[arg(long = "target", default_value = "ndpdb")]
    targets: Vec<String>,
    /// Isolation level of every client session on every target;
    /// transactions failing with 40001 or 40P01 are retried and counted.
    #[arg(long, default_value = "read-committed", value_parser = isolation_level())]
    isolation: Level,
    /// Output folder (tpcc.csv, summary.txt); default a fresh one under
    /// bench-results/.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Seed of the data and of the clients' inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Connections loading at once.
    #[arg(long, default_value_t = 2)]
    load_threads: usize,
    /// Buffer-pool budget in MiB (ndpdb targets).
    #[arg(long, default_value_t = 64)]
    buffer_pool_mib: usize,
    /// Divide the items and the customers per district by this (tests).
    #[arg(long, default_value_t = 1, hide = true)]
    scale_down: u32,
    /// Per client, stop after this many transactions (comparisons of
    /// targets with one client).
    #[arg(long, hide = true)]
    transactions: Option<u64>,
    #[command(flatten)]
    device: DeviceArgs,
}

pub fn run(a: TpccArgs) -> Result<ExitCode> {
    let BenchStart {
        targets,
        out,
        config,
    } = BenchStart::new(
        "tpcc",
        &a.targets,
        a.out.clone(),
        a.buffer_pool_mib,
        &a.device,
    )?;
    let scale = if a.scale_down > 1 {
        Scale::scaled_down(a.scale_down)
    } else {
        Scale::STANDARD
    };
    let cfg = RunConfig {
        warehouses: a.warehouses.max(1),
        clients: a.clients.max(1),
        duration: Duration::from_secs(a.duration),
        transactions: a.transactions,
        isolation: a.isolation,
        seed: a.seed,
        scale,
        load_threads: a.load_threads,
    };
    let mut summary = Summary::default();
    summary.say(format!(
        "settings: TPC-C, {} warehouse(s), {} clients (home warehouse round robin), {} s of the standard mix per target, no keying or think time; {} items, {} customers per district; seed {}; buffer pool {} MiB",
        cfg.warehouses,
        cfg.clients,
        a.duration,
        scale.items,
        scale.customers,
        cfg.seed,
        a.buffer_pool_mib
    ));
    summary.say(tpcc::isolation_line(cfg.isolation));
    let mut results = Vec::new();
    let mut machine_said = false;
    for target in &targets {
        summary.say(format!("--- {}", target.label()));
        let (backend, _dir) = match tpcc::backend(target, &config) {
            Ok(b) => b,
            Err(e) => {
                summary.say(format!("cannot open: {} {}", e.code, e.message));
                results.push(tpcc::TargetResult {
                    label: target.label(),
                    postgres: matches!(target, ndpdb_bench::target::Target::Postgres(_)),
                    load: None,
                    run: None,
                    conditions: Vec::new(),
                    failure: Some(e.message),
                });
                continue;
            }
        };
        if let (false, Some(db)) = (machine_said, backend.database()) {
            summary.say(machine_line(db));
            machine_said = true;
        }
        let r = tpcc::run_target(target, &backend, &cfg, &mut |l| summary.say(l));
        results.push(r);
    }
    summary.say(String::new());
    for l in tpcc::side_by_side(&results) {
        summary.say(l);
    }
    std::fs::write(out.join("tpcc.csv"), tpcc::csv(&results))?;
    summary.write(&out.join("summary.txt"))?;
    println!("wrote {}", out.display());
    let ok = results
        .iter()
        .all(|r| r.failure.is_none() && r.consistent());
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
