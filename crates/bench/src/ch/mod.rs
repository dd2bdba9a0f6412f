//! CH-benCHmark (Cole et al., DBTest 2011): TPC-C transactions and the 22
//! analytical queries on the same database at once, on embedded ndpdb, an
//! ndpdb server or PostgreSQL, with the same loader and the same clients.
//! (`ndpdb bench chbench` is a different, smaller benchmark: two queries
//! over ORDER-LINE alone.)
//!
//! ```text
//!  load        TPC-C (tpcc::load, one fixed load time for every target)
//!              + REGION, NATION, SUPPLIER (extra_tables, BenchBase's rows)
//!  power run   per placement mode: Q1 … Q22 once on the quiet database;
//!              times, answers (compared with PostgreSQL's), EXPLAIN
//!  mix         per placement mode, time ─────────────────────────────►
//!              OLTP  ████ alone ████|██████ beside OLAP ██████|█ alone █ (--phases)
//!              OLAP                 |Q1 … Q22 Q1 … per client |
//!              sampled every second: committed transactions, New-Orders,
//!              queries completed
//!  check       TPC-C consistency conditions 1–4 after each mix; the next
//!              mode's mix starts from a fresh load
//! ```
//!
//! Placement modes apply to ndpdb's OLAP sessions (`SET ndp = auto`:
//! the placement decides per operator, or `off`: everything on the
//! host); the OLTP sessions keep the default. PostgreSQL runs once.

pub mod answers;
pub mod conformance;
pub mod extra_tables;
pub mod olap;
pub mod queries;
pub mod report;

#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ndpdb_host::Result;

use crate::isolation::Level;
use crate::priority::Priority;
use crate::target::{Backend, Target};
use crate::tpcc::check::{self, Condition};
use crate::tpcc::load::{self as tpcc_load, LoadConfig, LoadReport};
use crate::tpcc::{self, Progress, RunConfig, RunReport};
use olap::{PowerQuery, QueryStats, Streams};

/// Where ndpdb's OLAP sessions run their operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NdpMode {
    /// The placement decides per operator (ndpdb's default).
    Auto,
    /// Everything on the host.
    Off,
    /// Every operator the device can run goes there.
    On,
}

impl NdpMode {
    pub fn parse(s: &str) -> Option<NdpMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Some(NdpMode::Auto),
            "off" => Some(NdpMode::Off),
            "on" => Some(NdpMode::On),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            NdpMode::Auto => "auto",
            NdpMode::Off => "off",
            NdpMode::On => "on",
        }
    }

    pub fn set_sql(self) -> &'static str {
        match self {
            NdpMode::Auto => "SET ndp = auto",
            NdpMode::Off => "SET ndp = off",
            NdpMode::On => "SET ndp = on",
        }
    }
}

/// A run's settings.
#[derive(Clone, Debug)]
pub struct ChConfig {
    /// Warehouses, OLTP clients, isolation, seed, scale, load threads
    /// (its `duration` is set per mix).
    pub tpcc: RunConfig,
    pub olap_clients: usize,
    /// How long the OLAP clients run beside the OLTP clients.
    pub duration: Duration,
    /// OLTP alone before the OLAP clients start (the baseline), and with
    /// `phases` again after they stop.
    pub alone: Duration,
    pub phases: bool,
    /// Placement modes of ndpdb's OLAP sessions, each with its own power
    /// run and mix (PostgreSQL runs once).
    pub modes: Vec<NdpMode>,
    /// Repetitions of each query in the power run (the median counts).
    pub power_repeat: usize,
    /// Priority of what serves the OLAP sessions during the mix, on
    /// every target (`priority.rs`).
    pub olap_priority: Priority,
    /// Threads each analytical statement may use during the mix, on every
    /// target (`olap::limit_threads`); `None`: each target's default.
    pub olap_threads: Option<usize>,
    /// CPUs the OLAP sessions are confined to during the mix, on every
    /// target (`pin::confine`); empty: not confined.
    pub olap_cpus: Vec<usize>,
}

/// One placement mode on one target: the power run and the mix.
pub struct ModeRun {
    /// "ndpdb ndp=auto", "PostgreSQL", …
    pub label: String,
    pub postgres: bool,
    pub power: Vec<PowerQuery>,
    /// EXPLAIN of each query (ndpdb), as the power run planned it.
    pub explain: Vec<(&'static str, String)>,
    pub mix: Option<Mix>,
    pub failure: Option<String>,
}

/// One mix: throughput over time, the OLTP report, the queries' stats.
pub struct Mix {
    pub samples: Vec<Sample>,
    pub oltp: RunReport,
    pub olap: Vec<QueryStats>,
    /// Seconds from the start when the OLAP clients started and stopped.
    pub olap_window: (f64, f64),
}

/// Counters at one moment of a mix (totals since its start).
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub at: f64,
    pub committed: u64,
    pub new_orders: u64,
    pub queries: u64,
    /// Per TPC-C transaction type: completed, summed latency (µs).
    pub kinds: [(u64, u64); tpcc::txn::Kind::ALL.len()],
}

/// One target: its load, its runs per mode, the consistency check.
pub struct TargetResult {
    pub label: &'static str,
    pub postgres: bool,
    pub load: Option<(LoadReport, u64)>,
    pub runs: Vec<ModeRun>,
    /// TPC-C's consistency conditions 1–4 after each mix, in order.
    pub conditions: Vec<Condition>,
    pub failure: Option<String>,
}

/// The load every target gets: the same rows (one load time for all).
pub fn load_config(cfg: &ChConfig, now_micros: i64) -> LoadConfig {
    LoadConfig {
        warehouses: cfg.tpcc.warehouses,
        scale: cfg.tpcc.scale,
        c_last_load: cfg.tpcc.constants().c_last_load,
        seed: cfg.tpcc.seed,
        now_micros,
        threads: cfg.tpcc.load_threads,
    }
}

/// The EXPLAIN of each query (Q15 with its view in place).
fn explain_all(backend: &Backend, mode: NdpMode) -> Vec<(&'static str, String)> {
    let Ok(mut conn) = olap::connect(backend, mode, Level::ReadCommitted) else {
        return Vec::new();
    };
    olap::queries(0)
        .iter()
        .map(|q| {
            if let Some(sql) = &q.before {
                let _ = conn.batch(sql);
            }
            let plan = match conn.query_rows(&format!("EXPLAIN {}", q.sql)) {
                Ok(rows) => rows
                    .into_iter()
                    .filter_map(|r| r.into_iter().next().flatten())
                    .collect::<Vec<_>>()
                    .join("\n"),
                Err(e) => format!("{} {}", e.code, e.message),
            };
            if let Some(sql) = &q.after {
                let _ = conn.batch(sql);
            }
            (q.name, plan)
        })
        .collect()
}

/// Runs the OLTP clients for `alone + duration (+ alone)` and the OLAP
/// clients in the middle, sampling the counters every second.
pub fn mix(backend: &Backend, cfg: &ChConfig, mode: NdpMode) -> Result<Mix> {
    let after = if cfg.phases {
        cfg.alone
    } else {
        Duration::ZERO
    };
    let total = cfg.alone + cfg.duration + after;
    let mut run_cfg = cfg.tpcc.clone();
    run_cfg.duration = total;
    let progress = Arc::new(Progress::default());
    let completed = Arc::new(AtomicU64::new(0));
    let consts = cfg.tpcc.constants();
    std::thread::scope(|scope| {
        let oltp = {
            let progress = progress.clone();
            scope.spawn(move || tpcc::run_observed(backend, &run_cfg, consts, Some(progress)))
        };
        let start = Instant::now();
        let sample = |start: Instant| Sample {
            at: start.elapsed().as_secs_f64(),
            committed: progress.committed.load(Ordering::Relaxed),
            new_orders: progress.new_orders.load(Ordering::Relaxed),
            queries: completed.load(Ordering::Relaxed),
            kinds: std::array::from_fn(|k| {
                (
                    progress.completed[k].load(Ordering::Relaxed),
                    progress.latency_micros[k].load(Ordering::Relaxed),
                )
            }),
        };
        let mut samples = vec![sample(start)];
        let mut streams: Option<Streams> = None;
        let mut olap = Vec::new();
        let mut window = (0.0, 0.0);
        let mut started = false;
        let mut tick = 1u64;
        let mut failure = None;
        while !oltp.is_finished() {
            let next = Duration::from_secs(tick);
            if let Some(wait) = next.checked_sub(start.elapsed()) {
                std::thread::sleep(wait.min(Duration::from_millis(200)));
                if start.elapsed() < next {
                    continue;
                }
            }
            tick += 1;
            let now = start.elapsed();
            // With no OLAP clients the window still marks the same
            // seconds: TPC-C alone at the age of the database the
            // analytics would meet (a control run).
            if !started && now >= cfg.alone {
                started = true;
                window.0 = now.as_secs_f64();
                if cfg.olap_clients > 0 {
                    let settings = olap::StreamSettings {
                        mode,
                        level: cfg.tpcc.isolation,
                        priority: cfg.olap_priority,
                        threads: cfg.olap_threads,
                        cpus: cfg.olap_cpus.clone(),
                    };
                    match Streams::start(
                        backend,
                        cfg.olap_clients,
                        &settings,
                        start,
                        completed.clone(),
                    ) {
                        Ok(s) => streams = Some(s),
                        Err(e) => failure = Some(e),
                    }
                }
            }
            if now >= cfg.alone + cfg.duration && window.1 == 0.0 {
                // A running query may take a while to notice the cancel:
                // the sampling goes on meanwhile.
                window.1 = start.elapsed().as_secs_f64();
                if let Some(s) = &streams {
                    s.signal();
                }
            }
            samples.push(sample(start));
        }
        // The OLTP clients are done: the last sample is now, not after the
        // OLAP clients noticed the stop.
        let last = sample(start);
        if samples.last().is_none_or(|s| last.at > s.at + 0.05) {
            samples.push(last);
        }
        if started && window.1 == 0.0 {
            window.1 = start.elapsed().as_secs_f64();
        }
        if let Some(s) = streams.take() {
            olap = s.stop();
        }
        let oltp = oltp.join().map_err(|_| {
            ndpdb_host::Error::new(
                ndpdb_formats::SqlState::INTERNAL_ERROR,
                "the OLTP clients panicked",
            )
        })??;
        if let Some(e) = failure {
            return Err(e);
        }
        Ok(Mix {
            samples,
            oltp,
            olap,
            olap_window: window,
        })
    })
}
/// A bar over the 22 queries on a terminal; hidden otherwise (each query
/// then prints a line).
fn query_bar(label: &str) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(queries::QUERIES.len() as u64);
    b.set_style(
        indicatif::ProgressStyle::with_template("{msg} {bar:40} {pos}/{len} queries")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    b.set_message(format!("{label} power run"));
    b
}

/// Loads one target, then per mode the power run and the mix, then the
/// consistency check; `say` gets the report lines as they are ready.
pub fn run_target(
    target: &Target,
    backend: &Backend,
    cfg: &ChConfig,
    now_micros: i64,
    say: &mut dyn FnMut(String),
) -> TargetResult {
    let postgres = backend.is_postgres();
    let mut result = TargetResult {
        label: target.label(),
        postgres,
        load: None,
        runs: Vec::new(),
        conditions: Vec::new(),
        failure: None,
    };
    let load = || {
        tpcc_load::load(backend, &load_config(cfg, now_micros)).and_then(|l| {
            let mut conn = backend.connect()?;
            Ok((l, extra_tables::load(&mut conn, postgres)?))
        })
    };
    match load() {
        Ok((l, extra)) => {
            say(format!(
                "loaded {} TPC-C rows and {extra} REGION/NATION/SUPPLIER rows in {:.1} s",
                l.rows,
                l.total().as_secs_f64()
            ));
            result.load = Some((l, extra));
        }
        Err(e) => {
            let msg = format!("load failed: {} {}", e.code, e.message);
            say(msg.clone());
            result.failure = Some(msg);
            return result;
        }
    }
    let modes: Vec<NdpMode> = if postgres {
        vec![NdpMode::Off]
    } else {
        cfg.modes.clone()
    };
    let label = |mode: NdpMode| {
        if postgres {
            target.label().to_string()
        } else {
            format!("{} ndp={}", target.label(), mode.name())
        }
    };
    // Every power run before any mix: the answers are then all over the
    // loaded data.
    for &mode in &modes {
        let bar = query_bar(&label(mode));
        let power = olap::power(
            backend,
            mode,
            cfg.tpcc.isolation,
            cfg.power_repeat,
            &mut |q| {
                if bar.is_hidden() {
                    eprintln!(
                        "{} power run: {} {:.1} ms",
                        label(mode),
                        q.name,
                        q.time.as_secs_f64() * 1e3
                    );
                }
                bar.inc(1);
                if let Err(e) = &q.answer {
                    say(format!("  {} {}: {e}", label(mode), q.name));
                }
            },
        );
        bar.finish_and_clear();
        let explain = if postgres {
            Vec::new()
        } else {
            explain_all(backend, mode)
        };
        let (power, failure) = match power {
            Ok(p) => (p, None),
            Err(e) => (Vec::new(), Some(format!("{} {}", e.code, e.message))),
        };
        say(report::power_line(&label(mode), &power));
        result.runs.push(ModeRun {
            label: label(mode),
            postgres,
            power,
            explain,
            mix: None,
            failure,
        });
    }
    for (k, &mode) in modes.iter().enumerate() {
        // Every mix starts from the loaded database, not from the rows an
        // earlier mode's mix left.
        if k > 0 {
            if let Err(e) = load() {
                let msg = format!("reload failed: {} {}", e.code, e.message);
                say(format!("  {}: {msg}", label(mode)));
                result.runs[k].failure = Some(msg);
                continue;
            }
            say(format!(
                "  reloaded the database for the {} mix",
                label(mode)
            ));
        }
        match mix(backend, cfg, mode) {
            Ok(m) => {
                for l in report::mix_lines(&m, cfg) {
                    say(format!("  {}: {l}", label(mode)));
                }
                result.runs[k].mix = Some(m);
            }
            Err(e) => {
                let msg = format!("mix failed: {} {}", e.code, e.message);
                say(format!("  {}: {msg}", label(mode)));
                result.runs[k].failure = Some(msg);
            }
        }
        match backend.connect() {
            Ok(mut conn) => {
                for c in check::check(&mut conn, cfg.tpcc.warehouses) {
                    say(format!(
                        "  {}: consistency condition {} ({}): {} — {}",
                        label(mode),
                        c.number,
                        c.title(),
                        if c.passed { "pass" } else { "FAIL" },
                        c.detail
                    ));
                    result.conditions.push(c);
                }
            }
            Err(e) => say(format!(
                "consistency check: cannot connect: {} {}",
                e.code, e.message
            )),
        }
    }
    result
}
