//! `ndpdb bench mixed-update`: YCSB on the host with one bulk UPDATE
//! injected after a warm-up, with NDP off and on, on each target; then
//! the update-only selectivity sweep, the FOR UPDATE overhead, the
//! pipeline variants and the cost of aborting an NDP update. Writes
//! `mixed.csv`, `throughput.png`, `sweep.csv`, `sweep.png`,
//! `pipeline.csv` and `summary.txt`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use ndpdb_bench::mixed::MixedRun;
use ndpdb_bench::pipeline::PipelineRun;
use ndpdb_bench::target::{Backend, Target};
use ndpdb_bench::ycsb::{self, Workload};
use ndpdb_formats::SqlState;
use ndpdb_host::{Config, Database, Error, Result};

use crate::args::{default_out, machine_line, DeviceArgs};
use crate::targets::{ndp_modes, ycsb_wire};

#[derive(clap::Args)]
pub struct MixedUpdateArgs {
    #[arg(long, default_value_t = 200_000)]
    pub records: u64,
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// YCSB workload on the host: a (50/50) or c (read only).
    #[arg(long, default_value = "a")]
    pub workload: String,
    /// Seconds per run (at least until the update ends).
    #[arg(long, default_value_t = 20)]
    pub seconds: u64,
    /// Seconds of YCSB before the update.
    #[arg(long, default_value_t = 4.0)]
    pub warmup: f64,
    /// Percentage of rows the injected update changes.
    #[arg(long, default_value_t = 100)]
    pub selectivity: u32,
    /// Skip the update-only selectivity sweep (0/10/25/50/100 %).
    #[arg(long)]
    pub no_sweep: bool,
    /// Output folder; default a fresh one under bench-results/.
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long, default_value_t = 64)]
    pub buffer_pool_mib: usize,
    /// Where to run, repeatable: ndpdb (embedded; ndp off and on),
    /// ndpdb-server[=HOST:PORT] (through the wire; ndp off and on),
    /// postgres[=CONNSTRING] (host-only baseline; default $NDPDB_POSTGRES).
    #[arg(long, default_value = "ndpdb")]
    pub target: Vec<String>,
    #[command(flatten)]
    pub device: DeviceArgs,
}

pub fn run(args: MixedUpdateArgs) -> Result<ExitCode> {
    let MixedUpdateArgs {
        records,
        threads,
        workload,
        seconds,
        warmup,
        selectivity,
        no_sweep,
        out,
        buffer_pool_mib,
        target,
        device,
    } = args;
    let targets: Vec<Target> = target
        .iter()
        .map(|t| Target::parse(t))
        .collect::<Result<_>>()?;
    let w = Workload::parse(&workload).ok_or_else(|| {
        Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("unknown workload {workload}"),
        )
    })?;
    let out = out.unwrap_or_else(|| default_out("mixed-update"));
    std::fs::create_dir_all(&out)?;
    let dir = out.join("db");
    let config = device.apply(Config {
        buffer_pool_bytes: buffer_pool_mib << 20,
        ..Config::default()
    })?;
    let mut summary = String::new();
    let mut say = |line: String| {
        println!("{line}");
        summary.push_str(&line);
        summary.push('\n');
    };
    let embedded = targets.contains(&Target::Ndpdb);
    if embedded {
        // On the device --device names (a device process, RADOS).
        let db = device.open(&dir, config.clone())?;
        say(machine_line(&db));
        if db.table(ycsb::TABLE).is_err() {
            let t = ycsb::load(&db, records, 10, 100, true)?;
            say(format!("loaded {records} rows in {:.1} s", t.as_secs_f64()));
        }
    }
    say(format!(
        "settings: YCSB-{} on {threads} client threads (zipf 0.99, read committed), {records} rows, buffer pool {buffer_pool_mib} MiB; after {warmup} s: {}",
        workload.to_uppercase(),
        ndpdb_bench::mixed::update_sql(selectivity)
    ));
    say(ndpdb_bench::mixed::isolation_line());
    let opts = ndpdb_bench::mixed::MixedOptions {
        records,
        threads,
        workload: w,
        seconds,
        warmup,
        selectivity,
        sample: Duration::from_millis(250),
    };
    let mut runs = Vec::new();
    let mut pipeline_runs = Vec::new();
    for t in &targets {
        // Embedded: a fresh buffer pool per run. Wire targets:
        // loaded once through COPY, then both runs.
        let wire = match t {
            Target::Ndpdb => None,
            t => {
                let (backend, took) = ycsb_wire(t, &config, Some(out.join("server-db")), records)?;
                say(format!(
                    "{}: loaded {records} rows through COPY in {:.1} s",
                    t.label(),
                    took.as_secs_f64()
                ));
                Some(backend)
            }
        };
        for &ndp in ndp_modes(wire.as_ref()) {
            let backend = match &wire {
                Some(b) => b,
                None => &Backend::Embedded(device.open(&dir, config.clone())?),
            };
            let r = ndpdb_bench::mixed::run(backend, &opts, ndp)?;
            report_run(t, ndp, &r, &mut say);
            runs.push(r);
        }
        if let (Target::Postgres(_), Some(backend), false) = (t, &wire, no_sweep) {
            pipeline_runs.extend(ndpdb_bench::pipeline::run(
                backend,
                &[ndpdb_bench::pipeline::Variant::Postgres],
                10,
                3,
                |l| say(l.to_string()),
            )?);
        }
    }
    let find = |label: &str| {
        runs.iter()
            .find(|r| r.label == label)
            .map(|r| r.update.as_secs_f64())
    };
    if let (Some(on), Some(pg)) = (find("ndp on"), find("PostgreSQL")) {
        say(format!(
            "update NDP {:.2}× faster than PostgreSQL (host-only)",
            pg / on.max(1e-9)
        ));
    }
    if let (Some(off), Some(on)) = (find("ndp off"), find("ndp on")) {
        say(format!(
            "update NDP {:.2}× faster than host-only",
            off / on.max(1e-9)
        ));
    }
    std::fs::write(out.join("mixed.csv"), ndpdb_bench::mixed::csv(&runs))?;
    match ndpdb_bench::mixed::plot(
        &out.join("throughput.png"),
        &runs,
        &format!(
            "YCSB-{} while a bulk UPDATE of {selectivity} % of the rows runs",
            workload.to_uppercase()
        ),
    ) {
        Ok(true) => say(format!("plot: {}/throughput.png", out.display())),
        Ok(false) => say("plot skipped: no TrueType font found".into()),
        Err(e) => say(format!("plot failed: {e}")),
    }
    if !no_sweep && embedded {
        let db = device.open(&dir, config.clone())?;
        sweep(&db, records, &out, &mut pipeline_runs, &mut say)?;
    }
    pipeline_summary(&pipeline_runs, &out, &mut say)?;
    std::fs::write(out.join("summary.txt"), summary)?;
    for d in [dir, out.join("server-db")] {
        if d.exists() {
            std::fs::remove_dir_all(&d)?;
        }
    }
    println!("wrote {}", out.display());
    Ok(ExitCode::SUCCESS)
}

/// One run's line (and, for update NDP on the embedded engine, the
/// time spent on locks).
fn report_run(t: &Target, ndp: bool, r: &MixedRun, say: &mut impl FnMut(String)) {
    let before = r.mean(ndpdb_bench::mixed::BEFORE);
    let name = match t {
        Target::Ndpdb => format!("ndp {:<3}", if ndp { "on" } else { "off" }),
        Target::NdpdbServer(_) => {
            format!("server, ndp {}", if ndp { "on" } else { "off" })
        }
        Target::Postgres(_) => "PostgreSQL".to_string(),
    };
    let engine = if r.engine.is_empty() {
        String::new()
    } else {
        format!(
            "; link to host {}, to device {}, control {} msgs; buffer misses {}; SLT CAS {}",
            ndpdb_bench::report::human_bytes(r.counter("link.data.to_host.bytes")),
            ndpdb_bench::report::human_bytes(r.counter("link.data.to_device.bytes")),
            r.counter("link.control.to_device.messages"),
            r.counter("buffer.misses"),
            r.counter("slt.cas_attempts"),
        )
    };
    say(format!(
        "{name}: update {} rows in {:>8.1} ms; YCSB ops/s before {:>8.0}, during {:>8.0} ({:.1} %), after {:>8.0}{engine}; YCSB errors {}",
        r.rows,
        r.update.as_secs_f64() * 1e3,
        before,
        r.mean(ndpdb_bench::mixed::DURING),
        r.mean(ndpdb_bench::mixed::DURING) * 100.0 / before.max(1.0),
        r.mean(ndpdb_bench::mixed::AFTER),
        r.errors
    ));
    if ndp && *t == Target::Ndpdb {
        let us = r.update.as_secs_f64() * 1e6;
        say(format!(
            "  locking: PEs spent {:.1} ms taking SLT locks ({:.1} % of the update, summed over PEs); the host released them in {:.1} ms ({:.1} %)",
            r.counter("ndp.device_lock_micros") as f64 / 1e3,
            r.counter("ndp.device_lock_micros") as f64 * 100.0 / us.max(1.0),
            r.counter("ndp.host_release_micros") as f64 / 1e3,
            r.counter("ndp.host_release_micros") as f64 * 100.0 / us.max(1.0),
        ));
    }
}

/// The update-only selectivity sweep, the FOR UPDATE overhead, the
/// embedded pipeline variants and the cost of aborting an NDP update, on
/// the embedded database; writes `sweep.csv` and `sweep.png`.
fn sweep(
    db: &Database,
    records: u64,
    out: &Path,
    pipeline_runs: &mut Vec<PipelineRun>,
    say: &mut impl FnMut(String),
) -> Result<()> {
    let sweep = ndpdb_bench::mixed::sweep(db, &[0, 10, 25, 50, 100], |l| say(l.to_string()))?;
    let mut csv = String::from("selectivity,ndp,ms,rows\n");
    for (pct, ndp, t, rows) in &sweep {
        csv.push_str(&format!(
            "{pct},{},{:.3},{rows}\n",
            if *ndp { "on" } else { "off" },
            t.as_secs_f64() * 1e3
        ));
    }
    std::fs::write(out.join("sweep.csv"), csv)?;
    let cats: Vec<String> = [0, 10, 25, 50, 100]
        .iter()
        .map(|p| format!("{p} %"))
        .collect();
    let values: Vec<Vec<f64>> = [0u32, 10, 25, 50, 100]
        .iter()
        .map(|p| {
            [false, true]
                .iter()
                .map(|n| {
                    sweep
                        .iter()
                        .find(|s| s.0 == *p && s.1 == *n)
                        .map_or(0.0, |s| s.2.as_secs_f64() * 1e3)
                })
                .collect()
        })
        .collect();
    ndpdb_bench::mixed::for_update_overhead(db, 10, |l| say(l.to_string()))?;
    {
        use ndpdb_bench::pipeline::Variant;
        pipeline_runs.extend(ndpdb_bench::pipeline::run(
            &Backend::Embedded(db.clone()),
            &[
                Variant::DevicePipeline,
                Variant::HostDelete,
                Variant::HostOnly,
            ],
            10,
            3,
            |l| say(l.to_string()),
        )?);
    }
    match ndpdb_bench::mixed::abort_costs(db, records, 10) {
        Ok((early, late)) => say(format!(
            "abort of a full-table NDP update (REPEATABLE READ): conflict found by the device at 10 % of the table {:.1} ms; found by host validation after the job {:.1} ms",
            early.as_secs_f64() * 1e3,
            late.as_secs_f64() * 1e3
        )),
        Err(e) => say(format!("abort experiment skipped: {}", e.message)),
    }
    let _ = ndpdb_bench::plot::bar_chart(
        &out.join("sweep.png"),
        "Bulk UPDATE by selectivity: host-only vs update NDP",
        "time (ms)",
        &cats,
        &["ndp off", "ndp on"],
        &values,
    );
    Ok(())
}

/// The pipeline variants' medians, against PostgreSQL's when it ran;
/// writes `pipeline.csv`.
fn pipeline_summary(
    pipeline_runs: &[PipelineRun],
    out: &Path,
    say: &mut impl FnMut(String),
) -> Result<()> {
    if pipeline_runs.is_empty() {
        return Ok(());
    }
    let pg = pipeline_runs
        .iter()
        .find(|r| r.variant == ndpdb_bench::pipeline::Variant::Postgres)
        .map(|r| r.median().as_secs_f64());
    for r in pipeline_runs {
        let ms = r.median().as_secs_f64();
        say(format!(
            "pipeline (FOR UPDATE + UPDATE + DELETE of 10 %, rolled back), median of {}: {:<48} {:>9.1} ms{}",
            r.runs.len(),
            r.variant.label(),
            ms * 1e3,
            pg.map(|p| format!(" ({:.2}× PostgreSQL's time)", ms / p.max(1e-9)))
                .unwrap_or_default()
        ));
    }
    std::fs::write(
        out.join("pipeline.csv"),
        ndpdb_bench::pipeline::csv(pipeline_runs),
    )?;
    Ok(())
}
