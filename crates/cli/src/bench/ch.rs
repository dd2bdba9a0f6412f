//! `ndpdb bench ch`: CH-benCHmark on each target in turn — the TPC-C load
//! plus REGION/NATION/SUPPLIER, a power run of the 22 analytical queries,
//! then TPC-C clients with OLAP clients joining after a baseline — and the
//! targets side by side (`ndpdb_bench::ch`). Writes `ch-queries.csv`,
//! `ch-timeseries.csv`, `ch-oltp.png`, `ch-olap.png`, `ch-explain.txt` and
//! `summary.txt` to the output folder; exit status 1 when an answer differs
//! from PostgreSQL's, a consistency condition fails or a target could not
//! run.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use ndpdb_bench::ch::{self, report, ChConfig, NdpMode};
use ndpdb_bench::isolation::Level;
use ndpdb_bench::priority::Priority;
use ndpdb_bench::tpcc::{self, RunConfig, Scale};
use ndpdb_formats::SqlState;
use ndpdb_host::{Error, Result};

use crate::args::{machine_line, DeviceArgs};
use crate::targets::{BenchStart, Summary};

#[derive(clap::Args, Clone, Debug)]
pub struct ChArgs {
    /// Warehouses (each 100,000 stock rows, 30,000 customers and orders).
    #[arg(long, default_value_t = 1)]
    warehouses: u32,
    /// TPC-C client sessions, each bound to a home warehouse.
    #[arg(long, default_value_t = 4)]
    oltp_clients: usize,
    /// Analytical client sessions, each running Q1 … Q22 in a loop; 0 for
    /// a control run (TPC-C alone, "beside" then measures the same
    /// seconds with no analytics).
    #[arg(long, default_value_t = 1)]
    olap_clients: usize,
    /// Seconds the analytical clients run beside the TPC-C clients (per
    /// target and placement mode).
    #[arg(long, default_value_t = 60)]
    duration: u64,
    /// Seconds of TPC-C alone before the analytical clients start (the
    /// baseline); default a third of --duration, at most 60.
    #[arg(long)]
    alone: Option<u64>,
    /// The isolation experiment: TPC-C alone, with analytics, alone again;
    /// reports the drop and the time to recover.
    #[arg(long)]
    phases: bool,
    /// Where to run, repeatable: ndpdb (embedded), ndpdb-server[=HOST:PORT],
    /// postgres[=CONNSTRING] (default $NDPDB_POSTGRES, see
    /// scripts/postgres-baseline.sh).
    #[arg(long = "target", default_value = "ndpdb")]
    targets: Vec<String>,
    /// Placement modes of ndpdb's analytical sessions, each with its own
    /// power run and mix: auto (the placement decides per operator), off
    /// (host only), on.
    #[arg(long, value_delimiter = ',', default_value = "auto,off")]
    ndp: Vec<String>,
    /// Isolation level of every session on every target.
    #[arg(long, default_value = "read-committed", value_parser = crate::args::isolation_level())]
    isolation: Level,
    /// Runs of each query in the power run (the median counts).
    #[arg(long, default_value_t = 1)]
    power_repeat: usize,
    /// Nice value (0–19) of what serves the analytical sessions during the
    /// mix, on every target: the client thread of embedded ndpdb (and the
    /// device jobs it starts), the connection thread of an ndpdb server,
    /// PostgreSQL's backend process (by `pg_backend_pid()`; the server
    /// must run on this machine). TPC-C's sessions keep nice 0.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(i32).range(0..=19))]
    olap_nice: i32,
    /// Instead of a nice value: what serves the analytical sessions runs
    /// under Linux's SCHED_IDLE policy during the mix, on every target —
    /// only while no TPC-C session is ready to run, giving way at once
    /// when one wakes (a nice value only weighs CPU shares).
    #[arg(long, conflicts_with = "olap_nice")]
    olap_idle: bool,
    /// Threads each analytical statement may use during the mix, on every
    /// target: ndpdb's host scan workers and PEs per device job
    /// (`host_workers`, `ndp_pes`), PostgreSQL's backend with its
    /// parallel workers (`max_parallel_workers_per_gather` = N − 1). The
    /// power run keeps each target's default.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=64))]
    olap_threads: Option<u16>,
    /// CPUs the analytical sessions are confined to during the mix, on
    /// every target (comma separated, e.g. 1): the client thread of
    /// embedded ndpdb (its scan workers and device jobs inherit the set),
    /// the connection thread of an ndpdb server, PostgreSQL's backend (its
    /// parallel workers, started by the postmaster, are not; the server
    /// must run on this machine). TPC-C's sessions stay free unless
    /// --host-cpus.
    #[arg(long, value_delimiter = ',')]
    olap_cpus: Vec<usize>,
    /// Output folder; default a fresh one under bench-results/.
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
    #[command(flatten)]
    device: DeviceArgs,
}

pub fn run(a: ChArgs) -> Result<ExitCode> {
    crate::args::check_cpus(a.olap_cpus.iter())?;
    let modes = a
        .ndp
        .iter()
        .map(|m| {
            NdpMode::parse(m).ok_or_else(|| {
                Error::new(
                    SqlState::INVALID_PARAMETER_VALUE,
                    format!("--ndp: unknown mode \"{m}\" (auto, off, on)"),
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let BenchStart {
        targets,
        out,
        config,
    } = BenchStart::new(
        "ch",
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
    let alone = a.alone.unwrap_or((a.duration / 3).min(60));
    let cfg = ChConfig {
        tpcc: RunConfig {
            warehouses: a.warehouses.max(1),
            clients: a.oltp_clients.max(1),
            duration: Duration::ZERO,
            transactions: None,
            isolation: a.isolation,
            seed: a.seed,
            scale,
            load_threads: a.load_threads,
        },
        olap_clients: a.olap_clients,
        duration: Duration::from_secs(a.duration),
        alone: Duration::from_secs(alone),
        phases: a.phases,
        modes,
        power_repeat: a.power_repeat.max(1),
        olap_priority: match (a.olap_idle, a.olap_nice) {
            (true, _) => Priority::Idle,
            (false, 0) => Priority::Normal,
            (false, n) => Priority::Nice(n),
        },
        olap_threads: a.olap_threads.map(usize::from),
        olap_cpus: a.olap_cpus.clone(),
    };
    let mut summary = Summary::default();
    summary.say(format!(
        "settings: CH-benCHmark, {} warehouse(s) ({} items, {} customers per district) + 10,000 suppliers, {} TPC-C clients, {} OLAP client(s){}{}; per run {alone} s TPC-C alone, {} s beside the OLAP clients{}; ndpdb placement modes {}; seed {}; buffer pool {} MiB",
        cfg.tpcc.warehouses,
        scale.items,
        scale.customers,
        cfg.tpcc.clients,
        cfg.olap_clients,
        match cfg.olap_priority.describe() {
            p if p.is_empty() => p,
            p => format!("{p} on every target"),
        },
        match cfg.olap_threads {
            Some(n) => format!(", each on at most {n} thread(s) during the mix"),
            None => String::new(),
        },
        a.duration,
        if a.phases {
            format!(", {alone} s alone again")
        } else {
            String::new()
        },
        a.ndp.join(","),
        cfg.tpcc.seed,
        a.buffer_pool_mib
    ));
    summary.say(tpcc::isolation_line(cfg.tpcc.isolation));
    if !a.olap_cpus.is_empty() {
        summary.say(format!(
            "analytical sessions confined to CPU(s) {:?} during the mix on every target (embedded ndpdb: the client thread and what it starts; a server: the backend or connection thread)",
            a.olap_cpus
        ));
    }
    if !a.device.host_cpus.is_empty() {
        summary.say(format!(
            "TPC-C sessions pinned to CPU(s) {:?} on every target (embedded ndpdb: the client threads; a server: the backend or connection thread of each){}",
            a.device.host_cpus,
            if a.olap_cpus.is_empty() { "; the analytical sessions are not pinned" } else { "" }
        ));
    }
    // One load time for every target: the same rows everywhere, so the
    // answers compare.
    let now = tpcc::db::now_micros();
    let mut results = Vec::new();
    let mut machine_said = false;
    for target in &targets {
        summary.say(format!("--- {}", target.label()));
        let (backend, _dir) = match tpcc::backend(target, &config) {
            Ok(b) => b,
            Err(e) => {
                summary.say(format!("cannot open: {} {}", e.code, e.message));
                results.push(ch::TargetResult {
                    label: target.label(),
                    postgres: matches!(target, ndpdb_bench::target::Target::Postgres(_)),
                    load: None,
                    runs: Vec::new(),
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
        let r = ch::run_target(target, &backend, &cfg, now, &mut |l| summary.say(l));
        results.push(r);
    }
    summary.say(String::new());
    for l in report::side_by_side(&results, &cfg) {
        summary.say(l);
    }
    std::fs::write(out.join("ch-queries.csv"), report::queries_csv(&results))?;
    std::fs::write(
        out.join("ch-timeseries.csv"),
        report::timeseries_csv(&results),
    )?;
    std::fs::write(out.join("ch-explain.txt"), report::explain_text(&results))?;
    match report::plots(&out, &results) {
        Ok(true) => {}
        Ok(false) => summary.say("no TrueType font found: plots skipped".into()),
        Err(e) => summary.say(format!("plots failed: {e}")),
    }
    summary.write(&out.join("summary.txt"))?;
    println!("wrote {}", out.display());
    let ok = report::differences(&results) == 0
        && results.iter().all(|r| {
            r.failure.is_none()
                && r.runs.iter().all(|m| m.failure.is_none())
                && r.conditions.len() == 4 * r.runs.len()
                && r.conditions.iter().all(|c| c.passed)
        });
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
