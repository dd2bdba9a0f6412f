//! `ndpdb bench lock-violation`: update NDP's lock-violation experiment
//! (Fig. 25) on each target, modes alternating within each round;
//! medians, `lock_violation.csv`, `lock_violation_runs.csv`,
//! `lock_violation.png` (commits/s) and `lock_violation_aborts.png`
//! (`ndpdb_bench::lock_violation`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use ndpdb_bench::lock_violation::{self, LvOptions, LvRun, Mode};
use ndpdb_bench::target::{endpoint, Backend, Target};
use ndpdb_bench::ycsb;
use ndpdb_host::{Config, Result};

use crate::args::DeviceArgs;
use crate::targets::{BenchStart, Summary};

#[derive(clap::Args, Clone, Debug)]
pub struct LockViolationArgs {
    #[arg(long, default_value_t = 200_000)]
    records: u64,
    /// Host transactions admitted per second.
    #[arg(long, default_value_t = 100.0)]
    rate: f64,
    /// Sessions running them (admission queues when all wait).
    #[arg(long, default_value_t = 48)]
    workers: usize,
    /// Rounds (each runs every mode and target once); medians reported.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Output folder; default a fresh one under bench-results/.
    #[arg(long)]
    out: Option<PathBuf>,
    #[arg(long, default_value_t = 64)]
    buffer_pool_mib: usize,
    /// Where to run, repeatable: ndpdb (embedded; basic, overflow log,
    /// overflow log + lock violation) and postgres[=CONNSTRING].
    #[arg(long, default_value = "ndpdb")]
    target: Vec<String>,
    #[command(flatten)]
    device: DeviceArgs,
}

const NDPDB_MODES: [Mode; 3] = [Mode::Basic, Mode::Overflow, Mode::LockViolation];

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or_default()
}

pub fn run(a: LockViolationArgs) -> Result<ExitCode> {
    let BenchStart {
        targets,
        out,
        config,
    } = BenchStart::new(
        "lock-violation",
        &a.target,
        a.out.clone(),
        a.buffer_pool_mib,
        &a.device,
    )?;
    let opts = LvOptions {
        records: a.records,
        rate: a.rate,
        workers: a.workers,
        warmup: Duration::from_secs(2),
        after: Duration::from_secs(2),
        bin: Duration::from_millis(250),
    };
    let mut summary = Summary::default();
    let mut say = |line: String| summary.say(line);
    say(format!(
        "settings: {} YCSB rows × 10 fields × 100 B; single-row UPDATEs (READ COMMITTED, uniform keys) admitted at {} tx/s to {} sessions; after 2 s one transaction runs SELECT ycsb_key FROM usertable FOR UPDATE, then UPDATE usertable SET field9 (ndpdb: on the device; basic logging / overflow log / overflow log + lock violation), then COMMIT; 2 s after it; {} rounds, modes and targets alternating",
        a.records, a.rate, a.workers, a.rounds
    ));
    say(ndpdb_bench::isolation::line(&format!(
        "{} (the host transactions and the bulk one, on every target); {} (the ndpdb load)",
        lock_violation::ISOLATION,
        ndpdb_bench::isolation::Level::RepeatableRead
    )));
    let postgres = targets
        .iter()
        .find(|t| matches!(t, Target::Postgres(_)))
        .map(|t| endpoint(t, config.clone(), None).map(Backend::Wire))
        .transpose()?;
    let with_ndpdb = targets.iter().any(|t| matches!(t, Target::Ndpdb));
    let mut runs: Vec<(u32, LvRun)> = Vec::new();
    for round in 1..=a.rounds {
        if with_ndpdb {
            for mode in NDPDB_MODES {
                let r = ndpdb_round(&out.join("db"), &config, &opts, mode)?;
                say(line(round, &r));
                runs.push((round, r));
            }
        }
        if let Some(backend) = &postgres {
            let mut conn = backend.connect()?;
            conn.batch(&format!("DROP TABLE IF EXISTS {}", ycsb::TABLE))?;
            ycsb::load_wire(&mut conn, a.records, 10, 100, true)?;
            conn.batch(&format!("VACUUM ANALYZE {}", ycsb::TABLE))?;
            conn.batch("CHECKPOINT")?;
            let r = lock_violation::run(backend, &opts, Mode::Postgres)?;
            conn.batch(&format!("DROP TABLE {}", ycsb::TABLE))?;
            say(line(round, &r));
            runs.push((round, r));
        }
    }
    let mut modes: Vec<Mode> = Vec::new();
    for (_, r) in &runs {
        if !modes.contains(&r.mode) {
            modes.push(r.mode);
        }
    }
    let med = |m: Mode, f: fn(&LvRun) -> f64| {
        median(
            runs.iter()
                .filter(|(_, r)| r.mode == m)
                .map(|(_, r)| f(r))
                .collect(),
        )
    };
    say("medians:".into());
    let basic = med(Mode::Basic, LvRun::finish);
    for &m in &modes {
        let finish = med(m, LvRun::finish);
        let vs = if modes.contains(&Mode::Basic) && basic > 0.0 {
            format!("  finish {:.2}× basic", finish / basic)
        } else {
            String::new()
        };
        say(format!(
            "  {:<36} bulk tx {:>8.0} ms  its COMMIT {:>7.0} ms  finish {:>8.0} ms{vs}  waiters at COMMIT {:>4.0} ({:>4.0} committed)",
            m.label(),
            med(m, LvRun::bulk),
            med(m, LvRun::commit),
            finish,
            med(m, |r| r.waiters().0 as f64),
            med(m, |r| r.waiters().1 as f64),
        ));
    }
    std::fs::write(
        out.join("lock_violation.csv"),
        lock_violation::csv(&runs, opts.bin),
    )?;
    std::fs::write(
        out.join("lock_violation_runs.csv"),
        lock_violation::runs_csv(&runs),
    )?;
    // The plots show the round whose runs are closest to the medians: the
    // last complete one.
    let last = runs.iter().map(|(r, _)| *r).max().unwrap_or(1);
    let shown: Vec<&LvRun> = runs
        .iter()
        .filter(|(r, _)| *r == last)
        .map(|(_, r)| r)
        .collect();
    for (file, aborts) in [
        ("lock_violation.png", false),
        ("lock_violation_aborts.png", true),
    ] {
        let png = out.join(file);
        let title = format!(
            "{} tx/s on {} rows beside a bulk FOR UPDATE + UPDATE (round {last})",
            a.rate, a.records
        );
        match lock_violation::plot(&png, &shown, opts.bin, &title, aborts) {
            Ok(true) => say(format!("plot: {}", png.display())),
            Ok(false) => say("plot skipped: no TrueType font found".into()),
            Err(e) => say(format!("plot failed: {e}")),
        }
    }
    summary.write(&out.join("summary.txt"))?;
    println!("wrote {}", out.display());
    Ok(ExitCode::SUCCESS)
}

/// ndpdb in a fresh database in `dir`: load, checkpoint, run `mode`.
fn ndpdb_round(
    dir: &std::path::Path,
    config: &Config,
    opts: &LvOptions,
    mode: Mode,
) -> Result<LvRun> {
    let _ = std::fs::remove_dir_all(dir);
    let config = Config {
        autovacuum: false,
        ..config.clone()
    };
    let db = ndpdb_embedded::open_with(dir, config)?;
    ycsb::load(&db, opts.records, 10, 100, true)?;
    db.checkpoint()?;
    let r = lock_violation::run(&Backend::Embedded(db.clone()), opts, mode);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
    r
}

fn line(round: u32, r: &LvRun) -> String {
    let (w, wc) = r.waiters();
    format!(
        "round {round}: {:<36} FOR UPDATE {:>6.0} ms  UPDATE {:>6.0} ms  COMMIT {:>6.0} ms  finish {:>6.0} ms  waiters {w} ({wc} committed)  host {} tx, {} aborted  lock violations {} dependents {}",
        r.mode.label(),
        r.locked - r.start,
        r.updated - r.locked,
        r.commit(),
        r.finish(),
        r.txs.len(),
        r.txs.iter().filter(|t| !t.committed).count(),
        r.lock_violations,
        r.commit_dependencies
    )
}
