//! `ndpdb bench churn`: YCSB-A through rounds of full-table UPDATEs on
//! each target; store size, live data and throughput over time
//! (`ndpdb_bench::churn`), with the figures the storage-lifecycle
//! targets name: the file against the live data, its range over the last
//! ten rounds, and YCSB throughput while GC runs against without it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use ndpdb_bench::churn::{self, ChurnOptions, ChurnRun};
use ndpdb_bench::report::human_bytes;
use ndpdb_bench::target::{Backend, Target};
use ndpdb_bench::ycsb;
use ndpdb_host::{Database, Result};

use crate::args::{machine_line, DeviceArgs};
use crate::targets::{ycsb_wire, BenchStart, Summary};

#[derive(clap::Args, Clone, Debug)]
pub struct ChurnArgs {
    #[arg(long, default_value_t = 200_000)]
    records: u64,
    /// Full-table UPDATEs (ndpdb: alternately on the host and the device).
    #[arg(long, default_value_t = 30)]
    rounds: u32,
    /// YCSB-A client threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Sample period in milliseconds.
    #[arg(long, default_value_t = 500)]
    sample_ms: u64,
    /// Output folder; default a fresh one under bench-results/.
    #[arg(long)]
    out: Option<PathBuf>,
    #[arg(long, default_value_t = 64)]
    buffer_pool_mib: usize,
    /// Where to run, repeatable: ndpdb (embedded), ndpdb-server[=HOST:PORT],
    /// postgres[=CONNSTRING] (default $NDPDB_POSTGRES).
    #[arg(long, default_value = "ndpdb")]
    target: Vec<String>,
    #[command(flatten)]
    device: DeviceArgs,
}

/// (file bytes, live bytes, GC µs) of an ndpdb database.
fn ndpdb_sizer(db: &Database) -> churn::Sizer<'_> {
    Box::new(move || {
        Ok((
            db.stat("storage.file_bytes"),
            db.stat("storage.live_bytes"),
            db.stat("gc.micros"),
        ))
    })
}

pub fn run(a: ChurnArgs) -> Result<ExitCode> {
    let BenchStart {
        targets,
        out,
        config,
    } = BenchStart::new(
        "churn",
        &a.target,
        a.out.clone(),
        a.buffer_pool_mib,
        &a.device,
    )?;
    let mut summary = Summary::default();
    let mut say = |line: String| summary.say(line);
    say(format!(
        "settings: YCSB-A on {} client threads (zipf 0.99, read committed), {} rows × 10 fields × 100 B; {} full-table UPDATEs of field9 (ndpdb: even rounds on the host, odd rounds on the device), 1 s apart, then YCSB-A alone and beside VACUUM back to back, alternating in 5-s windows (10 s each in all), VACUUM at autovacuum's pace (vacuum_cost_delay 2 ms, vacuum_cost_limit 200); samples every {} ms; ndpdb autovacuum: naptime {} ms, threshold {} + {} × rows",
        a.threads,
        a.records,
        a.rounds,
        a.sample_ms,
        config.autovacuum_naptime.as_millis(),
        config.autovacuum_threshold,
        config.autovacuum_scale_factor
    ));
    say(ndpdb_bench::isolation::line(&format!(
        "{} (YCSB-A clients and the UPDATE rounds, on every target); {} (the embedded load)",
        ndpdb_bench::clients::ISOLATION,
        ndpdb_bench::isolation::Level::RepeatableRead
    )));
    let opts = ChurnOptions {
        records: a.records,
        threads: a.threads,
        rounds: a.rounds,
        sample: Duration::from_millis(a.sample_ms),
        pause: Duration::from_secs(1),
        tail: Duration::from_secs(10),
    };
    let mut runs: Vec<ChurnRun> = Vec::new();
    for t in &targets {
        let r = match t {
            Target::Ndpdb => {
                let dir = out.join("db");
                let db = ndpdb_embedded::open_with(&dir, config.clone())?;
                say(machine_line(&db));
                let took = ycsb::load(&db, a.records, 10, 100, true)?;
                db.checkpoint()?;
                say(format!(
                    "ndpdb: loaded {} rows in {:.1} s",
                    a.records,
                    took.as_secs_f64()
                ));
                let backend = Backend::Embedded(db.clone());
                let r = churn::run(&backend, &opts, "ndpdb", ndpdb_sizer(&db))?;
                gc_lines(&db, &mut say);
                r
            }
            t => {
                let (backend, took) =
                    ycsb_wire(t, &config, Some(out.join("server-db")), a.records)?;
                say(format!(
                    "{}: loaded {} rows through COPY in {:.1} s",
                    t.label(),
                    a.records,
                    took.as_secs_f64()
                ));
                let label = if backend.is_postgres() {
                    "PostgreSQL"
                } else {
                    "ndpdb server"
                };
                let r = match backend.database() {
                    Some(db) => {
                        let db = db.clone();
                        let r = churn::run(&backend, &opts, label, ndpdb_sizer(&db))?;
                        gc_lines(&db, &mut say);
                        r
                    }
                    None => {
                        let mut conn = backend.connect()?;
                        let sizer: churn::Sizer<'_> = Box::new(move || {
                            let size = conn
                                .query_i64(&format!("SELECT pg_table_size('{}')", ycsb::TABLE))?;
                            Ok((size, -1, 0))
                        });
                        churn::run(&backend, &opts, label, sizer)?
                    }
                };
                r
            }
        };
        describe(&r, &mut say);
        runs.push(r);
    }
    std::fs::write(out.join("churn.csv"), churn::csv(&runs))?;
    let mut rounds = String::from("target,round,placement,ms,file_bytes\n");
    for r in &runs {
        for (i, x) in r.rounds.iter().enumerate() {
            rounds.push_str(&format!(
                "{},{},{},{:.1},{}\n",
                r.label,
                i + 1,
                x.placement,
                x.took.as_secs_f64() * 1e3,
                x.file_bytes
            ));
        }
    }
    std::fs::write(out.join("rounds.csv"), rounds)?;
    match churn::plot(&out, &runs) {
        Ok(true) => say(format!(
            "plots: {0}/size.png, {0}/throughput.png",
            out.display()
        )),
        Ok(false) => say("plots skipped: no TrueType font found".into()),
        Err(e) => say(format!("plots failed: {e}")),
    }
    summary.write(&out.join("summary.txt"))?;
    for d in [out.join("db"), out.join("server-db")] {
        if d.exists() {
            std::fs::remove_dir_all(&d)?;
        }
    }
    println!("wrote {}", out.display());
    Ok(ExitCode::SUCCESS)
}

fn gc_lines(db: &Database, say: &mut impl FnMut(String)) {
    say(format!(
        "  GC: {} runs ({} failed), {} versions reclaimed, {} moved, {} tuples removed, {} pages freed; store {} pages free, {} released, {} mapped",
        db.stat("gc.runs"),
        db.stat("gc.failures"),
        db.stat("gc.versions_reclaimed"),
        db.stat("gc.versions_relocated"),
        db.stat("gc.tuples_removed"),
        db.stat("gc.pages_freed"),
        db.stat("storage.free_pages"),
        db.stat("storage.released_pages"),
        db.stat("storage.mapped_pages"),
    ));
}

fn describe(r: &ChurnRun, say: &mut impl FnMut(String)) {
    let Some(last) = r.final_sample() else {
        return;
    };
    for placement in ["host", "device", "PostgreSQL"] {
        let t: Vec<f64> = r
            .rounds
            .iter()
            .filter(|x| x.placement == placement)
            .map(|x| x.took.as_secs_f64())
            .collect();
        if !t.is_empty() {
            say(format!(
                "  {}: {} UPDATE{} on the {placement}, mean {:.2} s",
                r.label,
                t.len(),
                if t.len() == 1 { "" } else { "s" },
                t.iter().sum::<f64>() / t.len() as f64
            ));
        }
    }
    let live = if last.live_bytes > 0 {
        format!(
            "; live data {} (file {:.2}× it)",
            human_bytes(last.live_bytes),
            last.file_bytes as f64 / last.live_bytes as f64
        )
    } else {
        String::new()
    };
    say(format!(
        "  {}: store file {} at the end, {:.2}× its size after the load ({}){live}",
        r.label,
        human_bytes(last.file_bytes),
        last.file_bytes as f64 / r.loaded_bytes.max(1) as f64,
        human_bytes(r.loaded_bytes),
    ));
    let (hi, lo) = r.file_range_last_rounds(10);
    if lo > 0 {
        let mid = (hi + lo) as f64 / 2.0;
        say(format!(
            "  {}: over the last 10 rounds the file stayed within {} … {} (± {:.1} %)",
            r.label,
            human_bytes(lo),
            human_bytes(hi),
            (hi - lo) as f64 / 2.0 * 100.0 / mid
        ));
    }
    let (with, without, n, m) = r.throughput_with_and_without_gc();
    if n > 0 && m > 0 {
        say(format!(
            "  {}: YCSB-A after the rounds: median {:.0} ops/s with VACUUM running back to back ({} VACUUMs, {n} samples), {:.0} ops/s alone ({m} samples): {:.1} %",
            r.label,
            with,
            r.vacuums,
            without,
            with * 100.0 / without.max(1.0)
        ));
    }
    let all: Vec<f64> = r.samples.iter().map(|s| s.ops_per_s).collect();
    say(format!(
        "  {}: YCSB-A mean {:.0} ops/s over the run; {} failed operations",
        r.label,
        all.iter().sum::<f64>() / all.len().max(1) as f64,
        r.errors
    ));
}
