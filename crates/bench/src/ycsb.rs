//! YCSB: the `usertable` (BIGINT key, ten 100-byte text fields), a loader
//! and the core workloads A (50 % reads / 50 % updates), B (95 / 5) and
//! C (read only), with Zipfian key choice. Every operation is one
//! autocommit statement through a prepared SQL statement, as a client
//! would issue it. Sessions run at the configured isolation level
//! ([`RunConfig::isolation`]; READ COMMITTED, PostgreSQL's default, where
//! a hot-key update waits and re-checks instead of failing). Under
//! REPEATABLE READ and SERIALIZABLE an update of a row another session
//! changed fails with 40001: the operation is run again with the same
//! key and value until it succeeds ([`crate::isolation::retryable`]),
//! its latency counting from the first attempt, and the retries are
//! reported beside the throughput.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use rand::distributions::Alphanumeric;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use ndpdb_formats::{Column, DataType, Schema, Value};
use ndpdb_host::{Database, Isolation, Result};

use crate::isolation::{self, Level};
use crate::report::{histogram, quantile_us, StatsDelta};
use crate::target::{copy_rows, copy_text, wire_error, write_back_dirty_pages, Backend, Conn};
use crate::zipf::Zipfian;

pub const TABLE: &str = "usertable";

/// What one client thread did.
struct ThreadResult {
    reads: Histogram<u64>,
    updates: Histogram<u64>,
    /// Failed operations by SQLSTATE.
    errors: BTreeMap<String, u64>,
    /// Attempts run again, by the SQLSTATE they failed with.
    retries: BTreeMap<String, u64>,
    /// Operations that needed at least one retry.
    retried_ops: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    A,
    B,
    C,
}

impl Workload {
    pub fn read_fraction(self) -> f64 {
        match self {
            Workload::A => 0.5,
            Workload::B => 0.95,
            Workload::C => 1.0,
        }
    }

    pub fn parse(s: &str) -> Option<Workload> {
        match s.to_ascii_lowercase().as_str() {
            "a" => Some(Workload::A),
            "b" => Some(Workload::B),
            "c" => Some(Workload::C),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct RunConfig {
    pub workload: Workload,
    pub records: u64,
    pub threads: usize,
    pub duration: Duration,
    pub theta: f64,
    pub field_count: usize,
    pub field_len: usize,
    pub seed: u64,
    /// Every session's `default_transaction_isolation`.
    pub isolation: Level,
}

pub struct RunReport {
    pub elapsed: Duration,
    pub reads: Histogram<u64>,
    pub updates: Histogram<u64>,
    pub errors: u64,
    /// Errors by SQLSTATE.
    pub error_codes: BTreeMap<String, u64>,
    /// Attempts that failed with 40001 or 40P01 and were run again, by
    /// SQLSTATE.
    pub retry_codes: BTreeMap<String, u64>,
    /// Operations (counted in `ops`) that succeeded after a retry.
    pub retried_ops: u64,
    pub engine: Vec<(String, i64)>,
}

impl RunReport {
    pub fn ops(&self) -> u64 {
        self.reads.len() + self.updates.len()
    }

    pub fn throughput(&self) -> f64 {
        self.ops() as f64 / self.elapsed.as_secs_f64()
    }

    /// Attempts run again.
    pub fn retries(&self) -> u64 {
        self.retry_codes.values().sum()
    }
}

pub fn random_field(rng: &mut SmallRng, len: usize) -> String {
    rng.sample_iter(&Alphanumeric)
        .take(len)
        .map(char::from)
        .collect()
}

/// Creates `usertable` and loads `records` rows in batches of 1,000 rows
/// per transaction; returns the load time.
pub fn load(
    db: &Database,
    records: u64,
    field_count: usize,
    field_len: usize,
    progress: bool,
) -> Result<Duration> {
    let mut columns = vec![Column {
        name: "ycsb_key".into(),
        ty: DataType::BigInt,
        nullable: false,
    }];
    for i in 0..field_count {
        columns.push(Column {
            name: format!("field{i}"),
            ty: DataType::Text,
            nullable: true,
        });
    }
    db.create_table(TABLE, Schema::new(columns, vec![0]))?;
    let table = db.table(TABLE)?;
    let bar = progress_bar(records, progress);
    let start = Instant::now();
    let mut rng = SmallRng::seed_from_u64(42);
    let mut key = 0u64;
    while key < records {
        let mut tx = db.begin(Isolation::Snapshot)?;
        tx.begin_statement();
        let end = (key + 1000).min(records);
        for k in key..end {
            let mut row = Vec::with_capacity(field_count + 1);
            row.push(Value::BigInt(k as i64));
            for _ in 0..field_count {
                row.push(Value::Text(random_field(&mut rng, field_len)));
            }
            tx.insert(&table, row)?;
        }
        tx.commit()?;
        bar.inc(end - key);
        key = end;
    }
    bar.finish_and_clear();
    Ok(start.elapsed())
}

/// Creates `usertable` on a wire target (dropping an old one) and loads
/// the same rows as [`load`] through COPY FROM STDIN, 10,000 rows per
/// COPY; returns the load time.
pub fn load_wire(
    conn: &mut Conn,
    records: u64,
    field_count: usize,
    field_len: usize,
    progress: bool,
) -> Result<Duration> {
    let Conn::Wire(client) = conn else {
        return Err(ndpdb_host::Error::new(
            ndpdb_formats::SqlState::INTERNAL_ERROR,
            "load_wire needs a wire connection",
        ));
    };
    let fields: Vec<String> = (0..field_count).map(|i| format!("field{i} TEXT")).collect();
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {TABLE}; CREATE TABLE {TABLE} (ycsb_key BIGINT PRIMARY KEY, {})",
            fields.join(", ")
        ))
        .map_err(wire_error)?;
    let bar = progress_bar(records, progress);
    write_back_dirty_pages();
    let start = Instant::now();
    let mut rng = SmallRng::seed_from_u64(42);
    copy_rows(
        client,
        TABLE,
        records,
        10_000,
        |k, line| {
            line.push_str(&k.to_string());
            for _ in 0..field_count {
                line.push('\t');
                line.push_str(&copy_text(&random_field(&mut rng, field_len)));
            }
        },
        |n| bar.inc(n),
    )?;
    bar.finish_and_clear();
    Ok(start.elapsed())
}

fn progress_bar(records: u64, progress: bool) -> ProgressBar {
    if !progress {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(records);
    b.set_style(
        ProgressStyle::with_template("loading {bar:40} {pos}/{len} rows ({per_sec}, eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    b
}

/// Runs a workload for the configured time on `threads` sessions of the
/// target, each with its own connection and prepared statements, at
/// `cfg.isolation`. An operation that fails with 40001 or 40P01 is run
/// again until it succeeds; one still failing when the time is up is
/// dropped, as an operation cut off by the end.
pub fn run(backend: &Backend, cfg: &RunConfig) -> Result<RunReport> {
    let zipf = Arc::new(Zipfian::new(cfg.records, cfg.theta));
    let stop = Arc::new(AtomicBool::new(false));
    let delta = backend.database().map(StatsDelta::start);
    // Connect and prepare before the clock starts.
    let mut sessions = Vec::new();
    for _ in 0..cfg.threads {
        let mut conn = backend.connect()?;
        cfg.isolation.apply(&mut conn)?;
        crate::pin::pin_session(&mut conn, sessions.len())?;
        let read = conn.prepare(&format!("SELECT * FROM {TABLE} WHERE ycsb_key = $1"))?;
        let updates: Vec<_> = (0..cfg.field_count)
            .map(|f| {
                conn.prepare(&format!(
                    "UPDATE {TABLE} SET field{f} = $1 WHERE ycsb_key = $2"
                ))
            })
            .collect::<Result<_>>()?;
        sessions.push((conn, read, updates));
    }
    let start = Instant::now();
    let mut handles = Vec::new();
    for (t, (mut conn, read, updates)) in sessions.into_iter().enumerate() {
        let (zipf, stop, cfg) = (zipf.clone(), stop.clone(), cfg.clone());
        handles.push(std::thread::spawn(move || -> Result<ThreadResult> {
            crate::pin::pin_host_thread(t);
            let mut rng = SmallRng::seed_from_u64(cfg.seed.wrapping_add(t as u64 * 7919));
            let mut out = ThreadResult {
                reads: histogram(),
                updates: histogram(),
                errors: BTreeMap::new(),
                retries: BTreeMap::new(),
                retried_ops: 0,
            };
            while !stop.load(Ordering::Relaxed) {
                let key = Value::BigInt(zipf.next_key(&mut rng) as i64);
                let is_read = rng.gen::<f64>() < cfg.workload.read_fraction();
                let (stmt, params) = if is_read {
                    (&read, vec![key])
                } else {
                    let f = rng.gen_range(0..updates.len());
                    let v = Value::Text(random_field(&mut rng, cfg.field_len));
                    (&updates[f], vec![v, key])
                };
                let t0 = Instant::now();
                let mut retried = false;
                let r = loop {
                    match conn.execute(stmt, &params) {
                        Err(code) if isolation::retryable(&code) => {
                            if stop.load(Ordering::Relaxed) {
                                break None;
                            }
                            *out.retries.entry(code).or_insert(0) += 1;
                            retried = true;
                        }
                        r => break Some(r),
                    }
                };
                let us = (t0.elapsed().as_micros() as u64).max(1);
                match r {
                    None => continue,
                    Some(Ok(_)) if is_read => out.reads.saturating_record(us),
                    Some(Ok(_)) => out.updates.saturating_record(us),
                    Some(Err(code)) => *out.errors.entry(code).or_insert(0) += 1,
                }
                out.retried_ops += retried as u64;
            }
            Ok(out)
        }));
    }
    std::thread::sleep(cfg.duration);
    stop.store(true, Ordering::Relaxed);
    let (mut reads, mut updates) = (histogram(), histogram());
    let (mut error_codes, mut retry_codes) = (BTreeMap::new(), BTreeMap::new());
    let mut retried_ops = 0;
    for h in handles {
        let t = h.join().map_err(|_| {
            ndpdb_host::Error::new(
                ndpdb_formats::SqlState::INTERNAL_ERROR,
                "benchmark thread panicked",
            )
        })??;
        reads.add(&t.reads).ok();
        updates.add(&t.updates).ok();
        for (k, v) in t.errors {
            *error_codes.entry(k).or_insert(0) += v;
        }
        for (k, v) in t.retries {
            *retry_codes.entry(k).or_insert(0) += v;
        }
        retried_ops += t.retried_ops;
    }
    let errors = error_codes.values().sum();
    Ok(RunReport {
        elapsed: start.elapsed(),
        reads,
        updates,
        errors,
        error_codes,
        retry_codes,
        retried_ops,
        engine: match (delta, backend.database()) {
            (Some(d), Some(db)) => d.finish(db),
            _ => Vec::new(),
        },
    })
}

/// The report lines of one run.
pub fn describe(name: &str, r: &RunReport) -> Vec<String> {
    let q = quantile_us;
    let mut lines = vec![format!(
        "{name}: {:.0} ops/s ({} ops in {:.1} s, {} errors{}, {} retries{})",
        r.throughput(),
        r.ops(),
        r.elapsed.as_secs_f64(),
        r.errors,
        if r.error_codes.is_empty() {
            String::new()
        } else {
            format!(": {:?}", r.error_codes)
        },
        r.retries(),
        if r.retry_codes.is_empty() {
            String::new()
        } else {
            format!(" of {} ops: {:?}", r.retried_ops, r.retry_codes)
        }
    )];
    lines.push(format!(
        "  read   latency µs: p50 {}  p99 {}  ({} ops)",
        q(&r.reads, 0.5),
        q(&r.reads, 0.99),
        r.reads.len()
    ));
    lines.push(format!(
        "  update latency µs: p50 {}  p99 {}  ({} ops)",
        q(&r.updates, 0.5),
        q(&r.updates, 0.99),
        r.updates.len()
    ));
    // Engine counters exist for ndpdb in this process only.
    let engine = if r.engine.is_empty() {
        Vec::new()
    } else {
        crate::report::engine_lines(&r.engine)
    };
    for l in engine {
        lines.push(format!("  {l}"));
    }
    lines
}
