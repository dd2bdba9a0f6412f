//! YCSB: the `usertable` (BIGINT key, ten 100-byte text fields), a loader
//! and the core workloads A (50 % reads / 50 % updates), B (95 / 5) and
//! C (read only), with Zipfian key choice. Every operation is one
//! autocommit statement through a prepared SQL statement, as a client
//! would issue it; sessions run at READ COMMITTED (PostgreSQL's default,
//! so a hot-key update waits and re-checks instead of failing).

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

use crate::report::{histogram, quantile_us, StatsDelta};
use crate::target::{copy_rows, copy_text, wire_error, write_back_dirty_pages, Backend, Conn};
use crate::zipf::Zipfian;

pub const TABLE: &str = "usertable";

/// Read and update latencies and errors by SQLSTATE of one client thread.
type ThreadResult = (Histogram<u64>, Histogram<u64>, BTreeMap<String, u64>);

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
}

pub struct RunReport {
    pub elapsed: Duration,
    pub reads: Histogram<u64>,
    pub updates: Histogram<u64>,
    pub errors: u64,
    /// Errors by SQLSTATE.
    pub error_codes: BTreeMap<String, u64>,
    pub engine: Vec<(String, i64)>,
}

impl RunReport {
    pub fn ops(&self) -> u64 {
        self.reads.len() + self.updates.len()
    }

    pub fn throughput(&self) -> f64 {
        self.ops() as f64 / self.elapsed.as_secs_f64()
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
/// target, each with its own connection and prepared statements.
pub fn run(backend: &Backend, cfg: &RunConfig) -> Result<RunReport> {
    let zipf = Arc::new(Zipfian::new(cfg.records, cfg.theta));
    let stop = Arc::new(AtomicBool::new(false));
    let delta = backend.database().map(StatsDelta::start);
    // Connect and prepare before the clock starts.
    let mut sessions = Vec::new();
    for _ in 0..cfg.threads {
        let mut conn = backend.connect()?;
        conn.batch("SET default_transaction_isolation = 'read committed'")?;
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
            let (mut rh, mut uh) = (histogram(), histogram());
            let mut errors = BTreeMap::new();
            while !stop.load(Ordering::Relaxed) {
                let key = Value::BigInt(zipf.next_key(&mut rng) as i64);
                let is_read = rng.gen::<f64>() < cfg.workload.read_fraction();
                let t0 = Instant::now();
                let r = if is_read {
                    conn.execute(&read, &[key])
                } else {
                    let f = rng.gen_range(0..updates.len());
                    let v = Value::Text(random_field(&mut rng, cfg.field_len));
                    conn.execute(&updates[f], &[v, key])
                };
                let us = (t0.elapsed().as_micros() as u64).max(1);
                match r {
                    Ok(_) if is_read => rh.saturating_record(us),
                    Ok(_) => uh.saturating_record(us),
                    Err(code) => *errors.entry(code).or_insert(0) += 1,
                }
            }
            Ok((rh, uh, errors))
        }));
    }
    std::thread::sleep(cfg.duration);
    stop.store(true, Ordering::Relaxed);
    let (mut reads, mut updates) = (histogram(), histogram());
    let mut error_codes = BTreeMap::new();
    for h in handles {
        let (r, u, e) = h.join().map_err(|_| {
            ndpdb_host::Error::new(
                ndpdb_formats::SqlState::INTERNAL_ERROR,
                "benchmark thread panicked",
            )
        })??;
        reads.add(&r).ok();
        updates.add(&u).ok();
        for (k, v) in e {
            *error_codes.entry(k).or_insert(0) += v;
        }
    }
    let errors = error_codes.values().sum();
    Ok(RunReport {
        elapsed: start.elapsed(),
        reads,
        updates,
        errors,
        error_codes,
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
        "{name}: {:.0} ops/s ({} ops in {:.1} s, {} errors{})",
        r.throughput(),
        r.ops(),
        r.elapsed.as_secs_f64(),
        r.errors,
        if r.error_codes.is_empty() {
            String::new()
        } else {
            format!(": {:?}", r.error_codes)
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
