//! `ndpdb bench ycsb --target …`: one workload against several targets
//! (embedded ndpdb, an ndpdb server, PostgreSQL) in one run, with a
//! side-by-side table at the end (DESIGN.md §12).

use std::path::PathBuf;
use std::time::Duration;

use ndpdb_bench::isolation::Level;
use ndpdb_bench::report::quantile_us;
use ndpdb_bench::target::{endpoint, Backend, Target};
use ndpdb_bench::ycsb::{self, RunConfig, RunReport, Workload};
use ndpdb_formats::SqlState;
use ndpdb_host::{Config, Error, Result};

pub struct YcsbRun {
    pub records: u64,
    pub workload: String,
    pub threads: usize,
    pub seconds: u64,
    pub zipf: f64,
    pub db: Option<PathBuf>,
    pub targets: Vec<String>,
    /// Every session's isolation level, on every target.
    pub isolation: Level,
}

/// Opens embedded ndpdb in `dir` (or a fresh temporary one).
fn backend(config: &Config, dir: Option<PathBuf>) -> Result<(Backend, Option<tempfile::TempDir>)> {
    let tmp = tempfile::tempdir()?;
    let path = dir.unwrap_or_else(|| tmp.path().to_path_buf());
    Ok((
        Backend::Embedded(ndpdb_embedded::open_with(&path, config.clone())?),
        Some(tmp),
    ))
}

/// A wire target with `usertable` loaded through COPY (PostgreSQL then
/// gets VACUUM ANALYZE, as it plans with statistics and ndpdb has none);
/// returns it with the load time.
pub fn ycsb_wire(
    target: &Target,
    config: &Config,
    dir: Option<PathBuf>,
    records: u64,
) -> Result<(Backend, Duration)> {
    let backend = Backend::Wire(endpoint(target, config.clone(), dir)?);
    let mut conn = backend.connect()?;
    let took = ycsb::load_wire(&mut conn, records, 10, 100, true)?;
    if backend.is_postgres() {
        conn.batch(&format!("VACUUM ANALYZE {}", ycsb::TABLE))?;
    }
    Ok((backend, took))
}

/// Checks before anything is loaded that a session of every target
/// accepts `level`, so that a target refusing it fails the run at once
/// (ndpdb in this process on a throwaway database; the sessions of the
/// run check it again).
fn check_isolation(targets: &[Target], config: &Config, level: Level) -> Result<()> {
    for target in targets {
        let tmp;
        let backend = match target {
            Target::Ndpdb | Target::NdpdbServer(None) => {
                tmp = tempfile::tempdir()?;
                Backend::Embedded(ndpdb_embedded::open_with(tmp.path(), config.clone())?)
            }
            t => Backend::Wire(endpoint(t, config.clone(), None)?),
        };
        level.apply(&mut backend.connect()?).map_err(|mut e| {
            e.message = format!("{}: {}", target.label(), e.message);
            e
        })?;
    }
    Ok(())
}

/// The runs a target gets: ndp off and on for ndpdb, one for PostgreSQL.
pub fn ndp_modes(wire: Option<&Backend>) -> &'static [bool] {
    if wire.is_some_and(Backend::is_postgres) {
        &[false]
    } else {
        &[false, true]
    }
}

pub fn ycsb(run: &YcsbRun, config: Config) -> Result<()> {
    let w = Workload::parse(&run.workload).ok_or_else(|| {
        Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("unknown workload {}", run.workload),
        )
    })?;
    let targets: Vec<Target> = run
        .targets
        .iter()
        .map(|t| Target::parse(t))
        .collect::<Result<_>>()?;
    println!(
        "{}",
        ndpdb_bench::isolation::line(&format!(
            "{} (every session of every target; statements failing with 40001 or 40P01 retried{})",
            run.isolation,
            if targets.contains(&Target::Ndpdb) {
                "; the embedded load: repeatable read"
            } else {
                ""
            }
        ))
    );
    check_isolation(&targets, &config, run.isolation)?;
    let mut results: Vec<(Target, RunReport, Duration)> = Vec::new();
    for (i, target) in targets.iter().enumerate() {
        let (backend, _tmp, wire_load) = match target {
            Target::Ndpdb => {
                let (b, tmp) = backend(&config, run.db.clone())?;
                (b, tmp, None)
            }
            t => {
                let (b, took) = ycsb_wire(t, &config, run.db.clone(), run.records)?;
                (b, None, Some(took))
            }
        };
        if i == 0 {
            if let Some(db) = backend.database() {
                println!("{}", crate::args::machine_line(db));
            }
        }
        println!("--- {}", target.label());
        let load = match (&backend, wire_load) {
            (_, Some(took)) => took,
            (Backend::Embedded(db), None) => {
                if db.table(ycsb::TABLE).is_ok() {
                    Duration::ZERO
                } else {
                    ycsb::load(db, run.records, 10, 100, true)?
                }
            }
            (Backend::Wire(_), None) => Duration::ZERO,
        };
        println!("loaded in {:.1} s", load.as_secs_f64());
        let cfg = RunConfig {
            workload: w,
            records: run.records,
            threads: run.threads,
            duration: Duration::from_secs(run.seconds),
            theta: run.zipf,
            field_count: 10,
            field_len: 100,
            seed: 11,
            isolation: run.isolation,
        };
        let r = ycsb::run(&backend, &cfg)?;
        for l in ycsb::describe(&format!("YCSB-{}", run.workload.to_uppercase()), &r) {
            println!("{l}");
        }
        results.push((target.clone(), r, load));
    }
    if results.len() > 1 {
        println!();
        println!("| target | load s | ops/s | read p50 µs | read p99 µs | update p50 µs | update p99 µs | errors | retries |");
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (t, r, load) in &results {
            let q = quantile_us;
            println!(
                "| {} | {:.1} | {:.0} | {} | {} | {} | {} | {} | {} |",
                t.label(),
                load.as_secs_f64(),
                r.throughput(),
                q(&r.reads, 0.5),
                q(&r.reads, 0.99),
                q(&r.updates, 0.5),
                q(&r.updates, 0.99),
                r.errors,
                r.retries()
            );
        }
    }
    Ok(())
}

/// The isolation level of `bench diff`'s sessions.
const DIFF_ISOLATION: Level = Level::ReadCommitted;

/// `ndpdb bench diff`: loads the same tables into ndpdb and PostgreSQL,
/// compares generated queries; exit status 1 on any mismatch.
/// With `bench diff --gc`: until `stop`, rewrites a fifth of each table
/// with unchanged values (new versions, the same answers) and collects
/// the garbage, alternating plain and FULL VACUUMs; returns the rounds.
fn churn_in_background(
    mine: &ndpdb_bench::target::Endpoint,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Result<std::thread::JoinHandle<Result<u64>>> {
    let mut c = mine.connect()?;
    c.batch_execute(&DIFF_ISOLATION.set_sql())
        .map_err(ndpdb_bench::target::wire_error)?;
    Ok(std::thread::spawn(move || -> Result<u64> {
        let mut round = 0u64;
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            let k = round % 5;
            c.batch_execute(&format!(
                "UPDATE t1 SET a = a WHERE id % 5 = {k}; UPDATE t2 SET v = v WHERE id % 5 = {k}"
            ))
            .map_err(ndpdb_bench::target::wire_error)?;
            // On its own: VACUUM runs outside any transaction block.
            c.batch_execute(if round.is_multiple_of(2) {
                "VACUUM"
            } else {
                "VACUUM FULL"
            })
            .map_err(ndpdb_bench::target::wire_error)?;
            round += 1;
        }
        Ok(round)
    }))
}

pub fn diff(
    rows: u64,
    queries: usize,
    seed: u64,
    targets: &[String],
    ndp: &str,
    gc: bool,
    prepared: bool,
) -> Result<std::process::ExitCode> {
    let mut postgres = None;
    let mut server = Target::NdpdbServer(None);
    for t in targets {
        match Target::parse(t)? {
            Target::Postgres(c) => postgres = Some(Target::Postgres(c)),
            s @ Target::NdpdbServer(_) => server = s,
            Target::Ndpdb => {}
        }
    }
    let postgres = postgres.ok_or_else(|| {
        Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            "bench diff needs --target postgres[=CONNSTRING]",
        )
    })?;
    let mine = endpoint(&server, Config::default(), None)?;
    let theirs = endpoint(&postgres, Config::default(), None)?;
    let (mut a, mut b) = (mine.connect()?, theirs.connect()?);
    for c in [&mut a, &mut b] {
        c.batch_execute(&DIFF_ISOLATION.set_sql())
            .map_err(ndpdb_bench::target::wire_error)?;
    }
    println!(
        "{}",
        ndpdb_bench::isolation::line(&format!(
            "{DIFF_ISOLATION} (the queries on both{})",
            if gc { "; the rewrites beside them" } else { "" }
        ))
    );
    ndpdb_bench::diff::load(&mut a, rows, seed)?;
    ndpdb_bench::diff::load(&mut b, rows, seed)?;
    a.batch_execute(&format!("SET ndp = {ndp}"))
        .map_err(ndpdb_bench::target::wire_error)?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn = if gc {
        Some(churn_in_background(&mine, stop.clone())?)
    } else {
        None
    };
    let report = ndpdb_bench::diff::compare(&mut a, &mut b, queries, seed, prepared);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    if let Some(h) = churn {
        let rounds = h
            .join()
            .map_err(|_| Error::new(SqlState::INTERNAL_ERROR, "the GC churn thread panicked"))??;
        println!(
            "beside the queries: {rounds} rounds of rewriting a fifth of t1 and t2 with unchanged values and VACUUM (every other one FULL)"
        );
    }
    for m in report.mismatches.iter().take(20) {
        println!(
            "MISMATCH {}\n  ndpdb:      {}\n  PostgreSQL: {}",
            m.sql, m.ndpdb, m.postgres
        );
    }
    println!(
        "diff: {} queries{} on {rows} + {} rows (seed {seed}, ndp = {ndp}): {} match PostgreSQL ({} rows compared; {} with no rows, {} rejected by both), {} differ",
        report.queries,
        match prepared {
            true => format!(
                " (each prepared, run {} times)",
                ndpdb_bench::diff::PREPARED_RUNS
            ),
            false => String::new(),
        },
        rows * 2,
        report.matched,
        report.rows_compared,
        report.matched_empty,
        report.matched_errors,
        report.mismatches.len()
    );
    // The fixed part: CH-benCHmark's queries and catalog queries on a
    // small CH-benCHmark database beside the random tables.
    let mode = ndpdb_bench::ch::NdpMode::parse(ndp).unwrap_or(ndpdb_bench::ch::NdpMode::Auto);
    let mine = Backend::Wire(mine);
    let theirs = Backend::Wire(endpoint(&postgres, Config::default(), None)?);
    let checks = ndpdb_bench::ch::conformance::compare(&mine, &theirs, mode)?;
    let mut fixed_differ = 0;
    for c in &checks {
        if !c.verdict.matches() {
            fixed_differ += 1;
            println!(
                "MISMATCH {}: {}
  {}",
                c.name,
                c.verdict.label(),
                c.sql
            );
        } else if c.verdict != ndpdb_bench::ch::answers::Verdict::Identical {
            println!("{}: {}", c.name, c.verdict.label());
        }
    }
    println!(
        "diff: {} CH-benCHmark and catalog queries (ndp = {ndp}): {} match PostgreSQL, {fixed_differ} differ",
        checks.len(),
        checks.len() - fixed_differ
    );
    Ok(if report.mismatches.is_empty() && fixed_differ == 0 {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    })
}

/// `ndpdb bench statements`' options.
#[derive(clap::Args)]
pub struct StatementsRun {
    /// Runs of each statement on each target.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Where to run, repeatable for a side-by-side table:
    /// ndpdb-server[=HOST:PORT], postgres[=CONNSTRING].
    #[arg(long = "target", default_value = "ndpdb-server")]
    pub targets: Vec<String>,
}

/// `ndpdb bench statements`: per statement, each target's median time
/// and outcome (the answer or its SQLSTATE).
pub fn statements(run: &StatementsRun) -> Result<std::process::ExitCode> {
    use ndpdb_bench::statements;
    let mut targets = Vec::new();
    let mut endpoints = Vec::new();
    for t in &run.targets {
        let target = Target::parse(t)?;
        if target == Target::Ndpdb {
            return Err(Error::new(
                SqlState::INVALID_PARAMETER_VALUE,
                "bench statements needs wire targets (ndpdb-server, postgres)",
            ));
        }
        endpoints.push(endpoint(&target, Config::default(), None)?);
        targets.push(target);
    }
    println!(
        "settings: {} runs per statement and target, simple protocol, a fresh connection per run, targets alternating",
        run.runs
    );
    for (k, t) in targets.iter().enumerate() {
        println!("target {}: {}", k + 1, t.label());
    }
    let results = statements::run(&endpoints, run.runs.max(1), &mut |l| eprintln!("{l}"))?;
    let mut header = format!("{:<34}", "statement");
    for t in &targets {
        header.push_str(&format!(" | {:>26}", t.label()));
    }
    println!("{header}");
    for (shape, per_target) in &results {
        let mut line = format!("{:<34}", shape.name);
        for timings in per_target {
            let times: Vec<Duration> = timings.iter().map(|t| t.elapsed).collect();
            let mut outcomes: Vec<&str> = timings.iter().map(|t| t.outcome.as_str()).collect();
            outcomes.dedup();
            line.push_str(&format!(
                " | {:>12.1} ms {:>11}",
                statements::median(&times).as_secs_f64() * 1e3,
                outcomes.join("/")
            ));
        }
        println!("{line}");
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// `ndpdb bench hostile`'s options.
#[derive(clap::Args)]
pub struct HostileRun {
    #[arg(long, default_value_t = 100_000)]
    pub records: u64,
    /// Well-formed YCSB-C clients.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Connections sending malformed traffic at once.
    #[arg(long, default_value_t = 64)]
    pub attackers: usize,
    /// Seconds per run (quiet, then hostile).
    #[arg(long, default_value_t = 60)]
    pub seconds: u64,
    /// Seed of the attackers' scripts.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Keys in one large `IN` list statement timed first (1,250,000 keys
    /// make about 10 MB; 0 skips it).
    #[arg(long, default_value_t = 1_250_000)]
    pub in_list: usize,
    /// Where to run, repeatable for a side-by-side table:
    /// ndpdb-server[=HOST:PORT], postgres[=CONNSTRING].
    #[arg(long = "target", default_value = "ndpdb-server")]
    pub targets: Vec<String>,
}

/// `ndpdb bench hostile`: per wire target, YCSB-C alone and beside the
/// attackers; exit status 1 if a well-formed client saw a failed statement
/// or rows went missing.
pub fn hostile(run: &HostileRun) -> Result<std::process::ExitCode> {
    use ndpdb_bench::hostile;
    let mut results = Vec::new();
    for t in &run.targets {
        let target = Target::parse(t)?;
        if target == Target::Ndpdb {
            return Err(Error::new(
                SqlState::INVALID_PARAMETER_VALUE,
                "bench hostile needs wire targets (ndpdb-server, postgres)",
            ));
        }
        let (backend, load) = ycsb_wire(&target, &Config::default(), None, run.records)?;
        println!("--- {}", target.label());
        println!("loaded in {:.1} s", load.as_secs_f64());
        let cfg = RunConfig {
            workload: Workload::C,
            records: run.records,
            threads: run.threads,
            duration: Duration::from_secs(run.seconds),
            theta: 0.99,
            field_count: 10,
            field_len: 100,
            seed: 11,
            isolation: Level::ReadCommitted,
        };
        let large = match &backend {
            ndpdb_bench::target::Backend::Wire(e) if run.in_list > 0 => {
                let l = hostile::large_statement(e, run.in_list)?;
                println!(
                    "large statement: IN list of {} keys ({:.1} MB) in {:.0} ms, count {}",
                    l.items,
                    l.bytes as f64 / 1e6,
                    l.elapsed.as_secs_f64() * 1e3,
                    l.count
                );
                Some(l)
            }
            _ => None,
        };
        let r = hostile::run(&backend, &cfg, run.attackers, run.seed)?;
        for l in ycsb::describe("YCSB-C quiet", &r.quiet) {
            println!("{l}");
        }
        for l in ycsb::describe("YCSB-C hostile", &r.hostile) {
            println!("{l}");
        }
        let a = &r.attack;
        println!(
            "attack: {} scripts, {} connections ({} refused), {:.1} MB sent, {:.1} MB read, {} closed by the server mid-write, {} left open after the client's end",
            a.scripts,
            a.connections,
            a.refused,
            a.bytes_sent as f64 / 1e6,
            a.bytes_read as f64 / 1e6,
            a.closed_early,
            a.left_open
        );
        println!("rows afterwards: {} of {}", r.rows_after, run.records);
        results.push((target, r, large));
    }
    println!();
    println!("| target | IN list ms | quiet ops/s | hostile ops/s | hostile / quiet | quiet read p99 µs | hostile read p99 µs | failed statements | attack connections | left open | rows afterwards |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut ok = true;
    let counts: Vec<i64> = results
        .iter()
        .filter_map(|(_, _, l)| l.as_ref().map(|l| l.count))
        .collect();
    if counts.windows(2).any(|w| w[0] != w[1]) {
        println!("the IN-list counts differ between targets: {counts:?}");
        ok = false;
    }
    for (t, r, large) in &results {
        let failed = r.quiet.errors + r.hostile.errors;
        ok &= failed == 0 && r.rows_after == run.records as i64 && r.attack.left_open == 0;
        println!(
            "| {} | {} | {:.0} | {:.0} | {:.2} | {} | {} | {} | {} | {} | {} |",
            t.label(),
            large.as_ref().map_or("-".to_string(), |l| format!(
                "{:.0}",
                l.elapsed.as_secs_f64() * 1e3
            )),
            r.quiet.throughput(),
            r.hostile.throughput(),
            r.hostile.throughput() / r.quiet.throughput().max(1e-9),
            quantile_us(&r.quiet.reads, 0.99),
            quantile_us(&r.hostile.reads, 0.99),
            failed,
            r.attack.connections,
            r.attack.left_open,
            r.rows_after
        );
    }
    Ok(if ok {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    })
}

/// What a benchmark with `--target`, `--out` and engine settings starts
/// from: the parsed targets, its output folder (created) and the config.
pub struct BenchStart {
    pub targets: Vec<Target>,
    pub out: PathBuf,
    pub config: Config,
}

impl BenchStart {
    pub fn new(
        name: &str,
        targets: &[String],
        out: Option<PathBuf>,
        buffer_pool_mib: usize,
        device: &crate::args::DeviceArgs,
    ) -> Result<BenchStart> {
        let targets = targets
            .iter()
            .map(|t| Target::parse(t))
            .collect::<Result<_>>()?;
        let out = out.unwrap_or_else(|| crate::args::default_out(name));
        std::fs::create_dir_all(&out)?;
        let config = device.apply(Config {
            buffer_pool_bytes: buffer_pool_mib << 20,
            ..Config::default()
        })?;
        Ok(BenchStart {
            targets,
            out,
            config,
        })
    }
}

/// Lines a benchmark prints and keeps for its `summary.txt`.
#[derive(Default)]
pub struct Summary(String);

impl Summary {
    pub fn say(&mut self, line: String) {
        println!("{line}");
        self.0.push_str(&line);
        self.0.push('\n');
    }

    pub fn write(&self, path: &std::path::Path) -> Result<()> {
        std::fs::write(path, &self.0)?;
        Ok(())
    }
}
