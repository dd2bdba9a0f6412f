//! TPC-C (the TPC-C specification, clauses 1–5) against embedded ndpdb,
//! an ndpdb server or PostgreSQL: the nine tables ([`schema`]), one
//! loader for every target ([`load`]), the five transactions with the
//! standard mix ([`txn`]), and consistency conditions 1–4 checked after
//! the run ([`check`]).
//!
//! ```text
//!  clients            C, each bound to a home warehouse (client k: k mod W + 1)
//!                     and a Stock-Level district (k div W mod 10 + 1);
//!                     no keying or think time
//!  mix                45 % New-Order, 43 % Payment, 4 % Order-Status,
//!                     4 % Delivery, 4 % Stock-Level
//!  a transaction      BEGIN, prepared statements, COMMIT; 40001 / 40P01:
//!                     rolled back and run again with the same inputs
//!                     (latency from the first attempt; retries counted)
//!  tpmC               committed New-Orders per minute
//! ```

pub mod check;
pub mod db;
pub mod load;
pub mod random;
pub mod schema;
pub mod txn;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::SeedableRng;

use ndpdb_formats::SqlState;
use ndpdb_host::{Config, Error, Result};

use crate::isolation::{self, Level};
use crate::report::{histogram, quantile_us};
use crate::target::{endpoint, Backend, Target};
use check::Condition;
use load::{LoadConfig, LoadReport};
use random::Constants;
use txn::{Client, Kind, Outcome};

/// Districts per warehouse.
pub const DISTRICTS: u32 = 10;

/// The size of a warehouse: items (and stock rows per warehouse) and
/// customers per district (also the orders per district). The standard
/// is 100,000 and 3,000; tests scale it down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scale {
    pub items: u32,
    pub customers: u32,
}

impl Scale {
    pub const STANDARD: Scale = Scale {
        items: 100_000,
        customers: 3_000,
    };

    /// The standard sizes divided by `factor` (at least 20 items and 10
    /// customers).
    pub fn scaled_down(factor: u32) -> Scale {
        let factor = factor.max(1);
        Scale {
            items: (100_000 / factor).max(20),
            customers: (3_000 / factor).max(10),
        }
    }

    /// Undelivered orders per district (900 of 3,000: the last 30 %).
    pub fn new_orders(self) -> u32 {
        self.customers * 900 / 3_000
    }

    /// Last names in use: the first 1,000 customers of a district get
    /// names 0–999 in order.
    pub fn last_names(self) -> u32 {
        self.customers.min(1_000)
    }
}

/// A run's settings.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub warehouses: u32,
    pub clients: usize,
    pub duration: Duration,
    /// Per client, stop after this many transactions even before the
    /// time is up (a deterministic run: one client, a seed, a count).
    pub transactions: Option<u64>,
    pub isolation: Level,
    pub seed: u64,
    pub scale: Scale,
    /// Connections loading at once.
    pub load_threads: usize,
}

impl RunConfig {
    pub fn constants(&self) -> Constants {
        Constants::new(&mut SmallRng::seed_from_u64(self.seed ^ 0xc0de))
    }
}

/// What the clients did with one transaction type.
#[derive(Clone, Debug)]
pub struct TypeStats {
    /// Latency of completed transactions (committed or rolled back on
    /// purpose), from the first attempt, µs.
    pub latency: Histogram<u64>,
    pub committed: u64,
    /// New-Orders rolled back on purpose (the unused item).
    pub rolled_back: u64,
    /// Attempts that failed with 40001 / 40P01 and were run again.
    pub retries: BTreeMap<String, u64>,
    /// Transactions that failed, by SQLSTATE.
    pub errors: BTreeMap<String, u64>,
    /// The first failure per SQLSTATE (errors and retries alike):
    /// statement and message.
    pub samples: BTreeMap<String, String>,
}

impl Default for TypeStats {
    fn default() -> Self {
        TypeStats {
            latency: histogram(),
            committed: 0,
            rolled_back: 0,
            retries: BTreeMap::new(),
            errors: BTreeMap::new(),
            samples: BTreeMap::new(),
        }
    }
}

impl TypeStats {
    fn merge(&mut self, o: &TypeStats) {
        self.latency.add(&o.latency).ok();
        self.committed += o.committed;
        self.rolled_back += o.rolled_back;
        for (k, v) in &o.retries {
            *self.retries.entry(k.clone()).or_insert(0) += v;
        }
        for (k, v) in &o.errors {
            *self.errors.entry(k.clone()).or_insert(0) += v;
        }
        for (k, v) in &o.samples {
            self.samples.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }

    pub fn completed(&self) -> u64 {
        self.committed + self.rolled_back
    }

    pub fn retry_count(&self) -> u64 {
        self.retries.values().sum()
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// A run's figures.
#[derive(Clone, Debug)]
pub struct RunReport {
    pub elapsed: Duration,
    /// Per transaction type, in [`Kind::ALL`] order.
    pub types: Vec<(Kind, TypeStats)>,
}

impl RunReport {
    pub fn get(&self, k: Kind) -> &TypeStats {
        &self.types[k as usize].1
    }

    /// Committed New-Orders per minute.
    pub fn tpmc(&self) -> f64 {
        self.get(Kind::NewOrder).committed as f64 / (self.elapsed.as_secs_f64() / 60.0)
    }

    /// Completed transactions of every type per second.
    pub fn tps(&self) -> f64 {
        self.types.iter().map(|(_, s)| s.completed()).sum::<u64>() as f64
            / self.elapsed.as_secs_f64()
    }

    pub fn retries(&self) -> u64 {
        self.types.iter().map(|(_, s)| s.retry_count()).sum()
    }

    pub fn errors(&self) -> u64 {
        self.types.iter().map(|(_, s)| s.error_count()).sum()
    }

    /// Errors by SQLSTATE over every type.
    pub fn error_codes(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for (_, s) in &self.types {
            for (k, v) in &s.errors {
                *out.entry(k.clone()).or_insert(0) += v;
            }
        }
        out
    }

    pub fn retry_codes(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for (_, s) in &self.types {
            for (k, v) in &s.retries {
                *out.entry(k.clone()).or_insert(0) += v;
            }
        }
        out
    }
}

fn thread_panic() -> Error {
    Error::new(SqlState::INTERNAL_ERROR, "TPC-C client thread panicked")
}

/// Runs the mix for `cfg.duration` (or until each client has run
/// `cfg.transactions`) on `cfg.clients` sessions of a loaded target. Sessions connect, set the isolation level and prepare every
/// statement before the clock starts; a statement refused at prepare
/// fails the run with the list of refused statements.
pub fn run(backend: &Backend, cfg: &RunConfig, consts: Constants) -> Result<RunReport> {
    run_observed(backend, cfg, consts, None)
}

/// Transactions the clients have finished so far, readable while the mix
/// runs (for throughput over time).
#[derive(Debug, Default)]
pub struct Progress {
    /// Committed transactions of every type.
    pub committed: AtomicU64,
    /// Committed New-Orders (what tpmC counts).
    pub new_orders: AtomicU64,
    /// Per transaction type (`Kind::ALL` order): transactions completed
    /// (committed or rolled back on purpose) and their summed latency, µs.
    pub completed: [AtomicU64; Kind::ALL.len()],
    pub latency_micros: [AtomicU64; Kind::ALL.len()],
}

/// [`run`], counting each commit in `progress` as it happens.
pub fn run_observed(
    backend: &Backend,
    cfg: &RunConfig,
    consts: Constants,
    progress: Option<Arc<Progress>>,
) -> Result<RunReport> {
    let workload = txn::Workload {
        warehouses: cfg.warehouses,
        scale: cfg.scale,
        consts,
    };
    let mut clients = Vec::new();
    for k in 0..cfg.clients {
        let mut conn = backend.connect()?;
        cfg.isolation.apply(&mut conn)?;
        crate::pin::pin_session(&mut conn, k)?;
        let home = (k as u32 % cfg.warehouses) as i32 + 1;
        let district = (k as u32 / cfg.warehouses % DISTRICTS) as i32 + 1;
        let client = Client::new(conn, home, district, workload)
            .map_err(|e| Error::new(SqlState::FEATURE_NOT_SUPPORTED, e))?;
        clients.push(client);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let phase = crate::report::Phase::start("TPC-C mix", cfg.duration);
    let start = Instant::now();
    let mut handles = Vec::new();
    for (k, mut client) in clients.into_iter().enumerate() {
        let stop = stop.clone();
        let seed = cfg.seed.wrapping_add(k as u64 * 7919);
        let limit = cfg.transactions.unwrap_or(u64::MAX);
        let progress = progress.clone();
        handles.push(std::thread::spawn(move || -> Vec<TypeStats> {
            crate::pin::pin_host_thread(k);
            let mut rng = SmallRng::seed_from_u64(seed);
            let mut stats: Vec<TypeStats> =
                Kind::ALL.iter().map(|_| TypeStats::default()).collect();
            let mut started = 0u64;
            'outer: while !stop.load(Ordering::Relaxed) && started < limit {
                started += 1;
                let kind = Kind::from_mix(random::uniform(&mut rng, 1, 100));
                let input = client.input(kind, &mut rng);
                let s = &mut stats[kind as usize];
                let t0 = Instant::now();
                loop {
                    match client.run(&input) {
                        Ok(outcome) => {
                            let micros = (t0.elapsed().as_micros() as u64).max(1);
                            s.latency.saturating_record(micros);
                            if let Some(p) = &progress {
                                p.completed[kind as usize].fetch_add(1, Ordering::Relaxed);
                                p.latency_micros[kind as usize]
                                    .fetch_add(micros, Ordering::Relaxed);
                            }
                            match outcome {
                                Outcome::Committed => {
                                    s.committed += 1;
                                    if let Some(p) = &progress {
                                        p.committed.fetch_add(1, Ordering::Relaxed);
                                        if kind == Kind::NewOrder {
                                            p.new_orders.fetch_add(1, Ordering::Relaxed);
                                        }
                                    }
                                }
                                Outcome::RolledBack => s.rolled_back += 1,
                            }
                            break;
                        }
                        Err(f) => {
                            client.rollback();
                            let code = f.code().to_string();
                            let retry = isolation::retryable(&code);
                            // Cut off by the end of the run: not counted.
                            if retry && stop.load(Ordering::Relaxed) {
                                break;
                            }
                            s.samples
                                .entry(code.clone())
                                .or_insert_with(|| format!("{}: {}", f.statement, f.error.message));
                            if retry {
                                *s.retries.entry(code).or_insert(0) += 1;
                                continue;
                            }
                            *s.errors.entry(code.clone()).or_insert(0) += 1;
                            // A lost connection ends the client.
                            if code.starts_with("08") {
                                break 'outer;
                            }
                            break;
                        }
                    }
                }
            }
            stats
        }));
    }
    while start.elapsed() < cfg.duration && !handles.iter().all(|h| h.is_finished()) {
        std::thread::sleep(Duration::from_millis(10).min(cfg.duration));
    }
    stop.store(true, Ordering::Relaxed);
    drop(phase);
    let mut types: Vec<(Kind, TypeStats)> = Kind::ALL
        .iter()
        .map(|k| (*k, TypeStats::default()))
        .collect();
    for h in handles {
        let stats = h.join().map_err(|_| thread_panic())?;
        for (i, s) in stats.iter().enumerate() {
            types[i].1.merge(s);
        }
    }
    Ok(RunReport {
        elapsed: start.elapsed(),
        types,
    })
}

/// One target's result: load, run and consistency, or why it stopped.
pub struct TargetResult {
    pub label: &'static str,
    pub postgres: bool,
    pub load: Option<LoadReport>,
    pub run: Option<RunReport>,
    pub conditions: Vec<Condition>,
    /// The error that ended the target early.
    pub failure: Option<String>,
}

impl TargetResult {
    /// Every consistency condition checked and passed.
    pub fn consistent(&self) -> bool {
        self.conditions.len() == 4 && self.conditions.iter().all(|c| c.passed)
    }
}

/// Opens a target: embedded ndpdb on a fresh temporary database (kept
/// alive by the returned directory), or a wire endpoint (an ndpdb server
/// started in this process on a fresh database without an address).
pub fn backend(target: &Target, config: &Config) -> Result<(Backend, Option<tempfile::TempDir>)> {
    Ok(match target {
        Target::Ndpdb => {
            let tmp = tempfile::tempdir()?;
            let db = ndpdb_embedded::open_with(tmp.path(), config.clone())?;
            (Backend::Embedded(db), Some(tmp))
        }
        t => (Backend::Wire(endpoint(t, config.clone(), None)?), None),
    })
}

/// Loads, runs and checks one target; `say` gets the report lines as
/// they are ready.
pub fn run_target(
    target: &Target,
    backend: &Backend,
    cfg: &RunConfig,
    say: &mut dyn FnMut(String),
) -> TargetResult {
    let mut result = TargetResult {
        label: target.label(),
        postgres: backend.is_postgres(),
        load: None,
        run: None,
        conditions: Vec::new(),
        failure: None,
    };
    let consts = cfg.constants();
    let load_cfg = LoadConfig {
        warehouses: cfg.warehouses,
        scale: cfg.scale,
        c_last_load: consts.c_last_load,
        seed: cfg.seed,
        now_micros: db::now_micros(),
        threads: cfg.load_threads,
    };
    match load::load(backend, &load_cfg) {
        Ok(l) => {
            say(format!(
                "loaded {} rows in {:.1} s (data {:.1} s, secondary indexes{} {:.1} s)",
                l.rows,
                l.total().as_secs_f64(),
                l.data.as_secs_f64(),
                if result.postgres {
                    " and VACUUM ANALYZE"
                } else {
                    ""
                },
                l.indexes.as_secs_f64()
            ));
            result.load = Some(l);
        }
        Err(e) => {
            let msg = format!("load failed: {} {}", e.code, e.message);
            say(msg.clone());
            result.failure = Some(msg);
            return result;
        }
    }
    match run(backend, cfg, consts) {
        Ok(r) => {
            for l in describe(&r) {
                say(l);
            }
            result.run = Some(r);
        }
        Err(e) => {
            let msg = format!("run failed: {} {}", e.code, e.message);
            say(msg.clone());
            result.failure = Some(msg);
        }
    }
    match backend.connect() {
        Ok(mut conn) => {
            result.conditions = check::check(&mut conn, cfg.warehouses);
            for c in &result.conditions {
                say(format!(
                    "consistency condition {} ({}): {} — {}",
                    c.number,
                    c.title(),
                    if c.passed { "pass" } else { "FAIL" },
                    c.detail
                ));
            }
        }
        Err(e) => say(format!(
            "consistency check: cannot connect: {} {}",
            e.code, e.message
        )),
    }
    result
}

fn codes(m: &BTreeMap<String, u64>) -> String {
    if m.is_empty() {
        return "0".into();
    }
    let total: u64 = m.values().sum();
    let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k} × {v}")).collect();
    format!("{total} ({})", parts.join(", "))
}

/// The report lines of one run.
pub fn describe(r: &RunReport) -> Vec<String> {
    let mut lines = vec![format!(
        "tpmC {:.0} ({} New-Orders committed in {:.1} s), {:.1} transactions/s, retries {}, errors {}",
        r.tpmc(),
        r.get(Kind::NewOrder).committed,
        r.elapsed.as_secs_f64(),
        r.tps(),
        codes(&r.retry_codes()),
        codes(&r.error_codes())
    )];
    lines.push(format!(
        "  {:<13} {:>9} {:>8} {:>10} {:>10} {:>8} {:>7}",
        "transaction", "committed", "rolled", "p50 µs", "p99 µs", "retries", "errors"
    ));
    for (k, s) in &r.types {
        lines.push(format!(
            "  {:<13} {:>9} {:>8} {:>10} {:>10} {:>8} {:>7}",
            k.name(),
            s.committed,
            s.rolled_back,
            quantile_us(&s.latency, 0.5),
            quantile_us(&s.latency, 0.99),
            s.retry_count(),
            s.error_count()
        ));
    }
    for (k, s) in &r.types {
        for (code, sample) in &s.samples {
            let (what, n) = match s.errors.get(code) {
                Some(n) => ("error", *n),
                None => ("retried", s.retries.get(code).copied().unwrap_or(0)),
            };
            lines.push(format!(
                "  {} {what} {code} × {n}, first: {sample}",
                k.name()
            ));
        }
    }
    lines
}

/// The targets side by side: one column per target, always with a
/// PostgreSQL column ("not run" without `--target postgres`).
pub fn side_by_side(results: &[TargetResult]) -> Vec<String> {
    let mut cols: Vec<Option<&TargetResult>> = results.iter().map(Some).collect();
    if !results.iter().any(|r| r.postgres) {
        cols.push(None);
    }
    let header: Vec<String> = cols
        .iter()
        .map(|c| c.map_or("PostgreSQL".to_string(), |r| r.label.to_string()))
        .collect();
    let mut lines = vec![
        format!("| | {} |", header.join(" | ")),
        format!("|---|{}", "---:|".repeat(cols.len())),
    ];
    let mut row = |name: &str, f: &dyn Fn(&TargetResult) -> String| {
        let cells: Vec<String> = cols
            .iter()
            .map(|c| match c {
                None => "not run".to_string(),
                Some(r) => f(r),
            })
            .collect();
        lines.push(format!("| {name} | {} |", cells.join(" | ")));
    };
    let run = |r: &TargetResult, f: &dyn Fn(&RunReport) -> String| {
        r.run.as_ref().map_or("-".to_string(), f)
    };
    row("load s", &|r| {
        r.load
            .as_ref()
            .map_or("-".into(), |l| format!("{:.1}", l.total().as_secs_f64()))
    });
    row("tpmC", &|r| run(r, &|x| format!("{:.0}", x.tpmc())));
    row("transactions/s", &|r| {
        run(r, &|x| format!("{:.1}", x.tps()))
    });
    for k in Kind::ALL {
        row(&format!("{} committed", k.name()), &|r| {
            run(r, &|x| x.get(k).committed.to_string())
        });
    }
    row("New-Order rolled back (1 %)", &|r| {
        run(r, &|x| x.get(Kind::NewOrder).rolled_back.to_string())
    });
    for k in Kind::ALL {
        row(&format!("{} p50 / p99 µs", k.name()), &|r| {
            run(r, &|x| {
                let h = &x.get(k).latency;
                format!("{} / {}", quantile_us(h, 0.5), quantile_us(h, 0.99))
            })
        });
    }
    row("retries", &|r| run(r, &|x| codes(&x.retry_codes())));
    row("errors", &|r| run(r, &|x| codes(&x.error_codes())));
    for (i, title) in check::TITLES.iter().enumerate() {
        row(&format!("condition {} ({title})", i + 1), &|r| {
            r.conditions.get(i).map_or("-".into(), |c| {
                if c.passed { "pass" } else { "FAIL" }.into()
            })
        });
    }
    lines
}

/// The per-type table as CSV: one row per target and transaction type.
pub fn csv(results: &[TargetResult]) -> String {
    let mut out = String::from(
        "target,transaction,committed,rolled_back,p50_us,p99_us,retries,errors,retry_codes,error_codes,tpmc,tps,seconds\n",
    );
    for r in results {
        let Some(run) = &r.run else {
            continue;
        };
        for (k, s) in &run.types {
            let join = |m: &BTreeMap<String, u64>| {
                m.iter()
                    .map(|(c, n)| format!("{c}:{n}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            out.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{},{:.1},{:.2},{:.2}\n",
                r.label,
                k.name(),
                s.committed,
                s.rolled_back,
                quantile_us(&s.latency, 0.5),
                quantile_us(&s.latency, 0.99),
                s.retry_count(),
                s.error_count(),
                join(&s.retries),
                join(&s.errors),
                run.tpmc(),
                run.tps(),
                run.elapsed.as_secs_f64()
            ));
        }
    }
    out
}

/// The report's isolation line.
pub fn isolation_line(level: Level) -> String {
    isolation::line(&format!(
        "{level} (every client session of every target; transactions failing with 40001 or 40P01 \
         rolled back and run again); {} (the loads, one transaction per batch; the consistency checks)",
        Level::ReadCommitted
    ))
}
