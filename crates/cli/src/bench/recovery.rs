//! `ndpdb bench recovery`: the papers' recovery experiment (update NDP
//! Fig. 24) on each target, rounds alternating between them; medians,
//! ratios against PostgreSQL, `recovery.csv` and `recovery.png`
//! (`ndpdb_bench::recovery`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use ndpdb_bench::recovery::{self, PgCtl, RecoveryRun};
use ndpdb_bench::report::human_bytes;
use ndpdb_bench::target::{endpoint, Backend, Target};
use ndpdb_formats::SqlState;
use ndpdb_host::{Error, NdpLogging, Result};

use crate::args::DeviceArgs;
use crate::targets::{BenchStart, Summary};

#[derive(clap::Args, Clone, Debug)]
pub struct RecoveryArgs {
    #[arg(long, default_value_t = 200_000)]
    records: u64,
    /// Runs per target and mode (alternating); medians are reported.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Output folder; default a fresh one under bench-results/.
    #[arg(long)]
    out: Option<PathBuf>,
    #[arg(long, default_value_t = 64)]
    buffer_pool_mib: usize,
    /// Where to run, repeatable: ndpdb (embedded; the update under each of
    /// ndp_logging off, basic and extended) and postgres[=CONNSTRING]
    /// (default $NDPDB_POSTGRES; crashed and restarted through
    /// $NDPDB_POSTGRES_CTL, both set by scripts/postgres-baseline.sh).
    #[arg(long, default_value = "ndpdb")]
    target: Vec<String>,
    #[command(flatten)]
    device: DeviceArgs,
}

const MODES: [NdpLogging; 3] = [NdpLogging::Off, NdpLogging::Basic, NdpLogging::Extended];

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

pub fn run(a: RecoveryArgs) -> Result<ExitCode> {
    let BenchStart {
        targets,
        out,
        config,
    } = BenchStart::new(
        "recovery",
        &a.target,
        a.out.clone(),
        a.buffer_pool_mib,
        &a.device,
    )?;
    let mut summary = Summary::default();
    let mut say = |line: String| summary.say(line);
    say(format!(
        "settings: {} YCSB rows × 10 fields × 100 B, loaded and checkpointed; one full-table UPDATE of field1 (ndpdb: on the device, ndp_logging off / basic / extended), a crash (ndpdb: no flush, no checkpoint; PostgreSQL: pg_ctl stop -m immediate), then the time to open (PostgreSQL: pg_ctl start -w); {} rounds, targets alternating",
        a.records, a.rounds
    ));
    say(recovery::isolation_line());
    let postgres = targets
        .iter()
        .find(|t| matches!(t, Target::Postgres(_)))
        .map(|t| -> Result<(Backend, PgCtl)> {
            let ctl = PgCtl::from_env().ok_or_else(|| {
                Error::new(
                    SqlState::INVALID_PARAMETER_VALUE,
                    "the postgres target needs $NDPDB_POSTGRES_CTL (run under scripts/postgres-baseline.sh)",
                )
            })?;
            Ok((Backend::Wire(endpoint(t, config.clone(), None)?), ctl))
        })
        .transpose()?;
    let with_ndpdb = targets.iter().any(|t| matches!(t, Target::Ndpdb));
    let mut runs: Vec<RecoveryRun> = Vec::new();
    for round in 1..=a.rounds {
        if with_ndpdb {
            for mode in MODES {
                let r = recovery::ndpdb(&out.join("db"), &config, a.records, mode)?;
                say(line(round, &r));
                runs.push(r);
            }
        }
        if let Some((backend, ctl)) = &postgres {
            let r = recovery::postgres(backend, ctl, a.records)?;
            say(line(round, &r));
            runs.push(r);
        }
    }
    let mut labels: Vec<String> = Vec::new();
    for r in &runs {
        if !labels.contains(&r.label) {
            labels.push(r.label.clone());
        }
    }
    let med = |label: &str, f: fn(&RecoveryRun) -> Duration| {
        median(runs.iter().filter(|r| r.label == label).map(f).collect())
    };
    let pg_recover = labels
        .iter()
        .any(|l| l == "PostgreSQL")
        .then(|| med("PostgreSQL", |r| r.recover));
    say("medians:".into());
    for l in &labels {
        let (update, recover) = (med(l, |r| r.update), med(l, |r| r.recover));
        let log = runs
            .iter()
            .find(|r| &r.label == l)
            .map_or(0, |r| r.log_bytes);
        let vs = match pg_recover {
            Some(pg) if l != "PostgreSQL" && !pg.is_zero() => format!(
                ", recovery {:.3}× PostgreSQL's",
                recover.as_secs_f64() / pg.as_secs_f64()
            ),
            _ => String::new(),
        };
        say(format!(
            "  {l:<18} update {:>7.2} s  recover {:>7.3} s  log {:>10}{vs}",
            update.as_secs_f64(),
            recover.as_secs_f64(),
            human_bytes(log)
        ));
    }
    std::fs::write(out.join("recovery.csv"), recovery::csv(&runs))?;
    let values: Vec<Vec<f64>> = labels
        .iter()
        .map(|l| {
            vec![
                med(l, |r| r.update).as_secs_f64(),
                med(l, |r| r.recover).as_secs_f64(),
            ]
        })
        .collect();
    let png = out.join("recovery.png");
    match ndpdb_bench::plot::bar_chart(
        &png,
        &format!("Full-table UPDATE of {} rows, then a crash", a.records),
        "seconds (median)",
        &labels,
        &["update", "recovery"],
        &values,
    ) {
        Ok(true) => say(format!("plot: {}", png.display())),
        Ok(false) => say("plot skipped: no TrueType font found".into()),
        Err(e) => say(format!("plot failed: {e}")),
    }
    summary.write(&out.join("summary.txt"))?;
    println!("wrote {}", out.display());
    Ok(ExitCode::SUCCESS)
}

fn line(round: u32, r: &RecoveryRun) -> String {
    format!(
        "round {round}: {:<18} load {:>6.1} s  update {:>7.2} s  recover {:>7.3} s  log {} (overflow {})",
        r.label,
        r.load.as_secs_f64(),
        r.update.as_secs_f64(),
        r.recover.as_secs_f64(),
        human_bytes(r.log_bytes),
        human_bytes(r.overflow_bytes)
    )
}
