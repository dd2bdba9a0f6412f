//! `ndpdb bench htap-read`: YCSB-C on the host with an analytic query
//! every few seconds, the query on the host and then on the device, on
//! each target; throughput over time in `htap-read.csv` and
//! `throughput.png`, the lines printed in `summary.txt`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use ndpdb_bench::isolation::{self, Level};
use ndpdb_bench::target::{Backend, Target};
use ndpdb_bench::ycsb;
use ndpdb_host::{Config, Result};

use crate::args::{default_out, machine_line, DeviceArgs};
use crate::targets::{ndp_modes, ycsb_wire};

#[derive(clap::Args)]
pub struct HtapReadArgs {
    #[arg(long, default_value_t = 200_000)]
    pub records: u64,
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Seconds per run (one with ndp off, one with ndp on).
    #[arg(long, default_value_t = 20)]
    pub seconds: u64,
    /// Seconds between analytic queries.
    #[arg(long, default_value_t = 4.0)]
    pub every: f64,
    /// Output folder; default a fresh one under bench-results/.
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long, default_value_t = 64)]
    pub buffer_pool_mib: usize,
    /// Where to run, repeatable: ndpdb (embedded; query on the host,
    /// then on the device), ndpdb-server[=HOST:PORT], postgres[=CONNSTRING]
    /// (default $NDPDB_POSTGRES).
    #[arg(long, default_value = "ndpdb")]
    pub target: Vec<String>,
    #[command(flatten)]
    pub device: DeviceArgs,
}

pub fn run(args: HtapReadArgs) -> Result<ExitCode> {
    let HtapReadArgs {
        records,
        threads,
        seconds,
        every,
        out,
        buffer_pool_mib,
        target,
        device,
    } = args;
    let targets: Vec<Target> = target
        .iter()
        .map(|t| Target::parse(t))
        .collect::<Result<_>>()?;
    let out = out.unwrap_or_else(|| default_out("htap-read"));
    std::fs::create_dir_all(&out)?;
    let dir = out.join("db");
    let config = device.apply(Config {
        buffer_pool_bytes: buffer_pool_mib << 20,
        ..Config::default()
    })?;
    if targets.contains(&Target::Ndpdb) {
        let db = ndpdb_embedded::open_with(&dir, config.clone())?;
        println!("{}", machine_line(&db));
        if db.table(ycsb::TABLE).is_err() {
            ycsb::load(&db, records, 10, 100, true)?;
        }
    }
    let opts = ndpdb_bench::htap::HtapOptions {
        records,
        threads,
        seconds,
        every,
        sample: Duration::from_millis(250),
    };
    let mut summary = format!(
        "htap-read: {records} rows, {threads} YCSB-C threads, analytic query every {every} s, {seconds} s per run, buffer pool {buffer_pool_mib} MiB, link {}\nquery: {}\n",
        config.link,
        ndpdb_bench::htap::ANALYTIC_QUERY
    );
    let iso = isolation::line(&format!(
        "{} (YCSB-C clients and the analytic query, on every target); {} (the embedded load)",
        ndpdb_bench::htap::ISOLATION,
        Level::RepeatableRead
    ));
    println!("{iso}");
    summary.push_str(&iso);
    summary.push('\n');
    let mut runs = Vec::new();
    for t in &targets {
        let wire = match t {
            Target::Ndpdb => None,
            t => Some(ycsb_wire(t, &config, Some(out.join("server-db")), records)?.0),
        };
        for &ndp in ndp_modes(wire.as_ref()) {
            let backend = match &wire {
                Some(b) => b,
                // A fresh buffer pool per embedded run.
                None => &Backend::Embedded(ndpdb_embedded::open_with(&dir, config.clone())?),
            };
            let r = ndpdb_bench::htap::run(backend, &opts, ndp)?;
            let (idle, busy) = r.means();
            let q: Vec<String> = r
                .queries
                .iter()
                .map(|d| format!("{:.0}", d.as_secs_f64() * 1e3))
                .collect();
            let line = format!(
                "{}{}: YCSB-C mean {:.0} ops/s over the run; {idle:.0} ops/s without a query, {busy:.0} ops/s while one runs ({:.1} %, {:.0} % of the time); queries took [{}] ms",
                if matches!(t, Target::NdpdbServer(_)) { "server, " } else { "" },
                r.label,
                r.overall(),
                if idle > 0.0 { 100.0 * busy / idle } else { 0.0 },
                100.0 * r.busy_share(),
                q.join(", ")
            );
            println!("{line}");
            summary.push_str(&line);
            summary.push('\n');
            runs.push(r);
        }
    }
    std::fs::write(out.join("htap-read.csv"), ndpdb_bench::htap::csv(&runs))?;
    let title = format!(
        "YCSB-C with an analytic query every {every} s (link {})",
        config.link.name
    );
    match ndpdb_bench::htap::plot(&out.join("throughput.png"), &runs, &title) {
        Ok(true) => println!("plot: {}", out.join("throughput.png").display()),
        Ok(false) => println!("plot skipped: no TrueType font found (CSV written)"),
        Err(e) => println!("plot failed: {e} (CSV written)"),
    }
    std::fs::write(out.join("summary.txt"), summary)?;
    for d in [dir, out.join("server-db")] {
        if d.exists() {
            std::fs::remove_dir_all(&d)?;
        }
    }
    println!("wrote {}", out.display());
    Ok(ExitCode::SUCCESS)
}
