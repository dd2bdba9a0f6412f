//! `mixed-update`: YCSB on the host while one bulk UPDATE of the table is
//! injected after a warm-up, once run on the host and once on the device
//! (update NDP §8, Fig. 1 and 18: host-only OLTP throughput drops during
//! the update, update NDP stays close to flat).
//!
//! ```text
//!  ops/s ─────────┐          ┌──────────      host-only: the update reads and
//!                 └──────────┘                 writes every page through the pool
//!  ops/s ─────────┬─┬────────────────────      update NDP: the device does it,
//!                 └─┘                          the host pays locks and ΔMaps
//!        warm-up  │ update │ after
//! ```

use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ndpdb_host::{Database, Result};
use ndpdb_sql::{Output, Session};

use crate::clients::{thread_panic, Clients, ISOLATION};
use crate::isolation::Level;
use crate::report::{get, StatsDelta};
use crate::target::Backend;
use crate::ycsb::{Workload, TABLE};

/// What runs at which isolation level, for a report's header: the YCSB
/// clients, the injected update and the sweep at [`ISOLATION`]; SELECT …
/// FOR UPDATE + UPDATE, the pipelines (`crate::pipeline`) and the abort
/// experiment in REPEATABLE READ transactions, as is the embedded load
/// (`Isolation::Snapshot`).
pub fn isolation_line() -> String {
    crate::isolation::line(&format!(
        "{ISOLATION} (YCSB clients, the bulk UPDATE, the selectivity sweep); {} (the embedded load, SELECT FOR UPDATE + UPDATE, the pipelines, the abort experiment)",
        Level::RepeatableRead
    ))
}

pub struct MixedOptions {
    pub records: u64,
    pub threads: usize,
    pub workload: Workload,
    /// Seconds per run.
    pub seconds: u64,
    /// Seconds of YCSB before the update starts.
    pub warmup: f64,
    /// Percentage of rows the update changes.
    pub selectivity: u32,
    pub sample: Duration,
}

/// The injected update: `selectivity` % of the rows get a new field9.
pub fn update_sql(selectivity: u32) -> String {
    let value = "u".repeat(100);
    if selectivity >= 100 {
        format!("UPDATE {TABLE} SET field9 = '{value}'")
    } else {
        format!("UPDATE {TABLE} SET field9 = '{value}' WHERE ycsb_key % 100 < {selectivity}")
    }
}

/// Phases of a run.
pub const BEFORE: u8 = 0;
pub const DURING: u8 = 1;
pub const AFTER: u8 = 2;

/// One run: throughput samples and the update's figures.
pub struct MixedRun {
    pub ndp: bool,
    /// What ran the update, e.g. "ndp on", "PostgreSQL".
    pub label: String,
    /// (ms since start, YCSB ops/s, phase).
    pub samples: Vec<(u64, f64, u8)>,
    pub update: Duration,
    pub rows: u64,
    /// Engine counters over the update's duration.
    pub engine: Vec<(String, i64)>,
    /// YCSB operations that failed (e.g. 40001), by SQLSTATE.
    pub errors: u64,
}

impl MixedRun {
    /// Mean YCSB throughput in a phase.
    pub fn mean(&self, phase: u8) -> f64 {
        crate::report::mean_where(&self.samples, phase)
    }

    pub fn counter(&self, name: &str) -> i64 {
        get(&self.engine, name)
    }
}

/// The row count of an `UPDATE n` / `DELETE n` command tag.
fn rows_changed(out: Option<Output>) -> u64 {
    match out {
        Some(Output::Command { tag }) => tag
            .rsplit(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0),
        _ => 0,
    }
}

/// The injected update's duration, rows and engine counters.
type UpdateOutcome = (Duration, u64, Vec<(String, i64)>);

/// Runs YCSB for `opts.seconds` with the update injected after the
/// warm-up, on any target; `ndp` sets `ndp` on or off (ndpdb targets).
pub fn run(backend: &Backend, opts: &MixedOptions, ndp: bool) -> Result<MixedRun> {
    let phase = Arc::new(AtomicU8::new(BEFORE));
    let clients = Clients::start(backend, opts.threads, opts.records, opts.workload)?;
    let ops = clients.ops.clone();
    let updater = {
        let mut s = backend.connect()?;
        // PostgreSQL's default: conflicts are re-checked, not errors.
        ISOLATION.apply(&mut s)?;
        if !backend.is_postgres() {
            s.batch(if ndp { "SET ndp = on" } else { "SET ndp = off" })?;
        }
        let update = s.prepare(&update_sql(opts.selectivity))?;
        let (db, phase) = (backend.database().cloned(), phase.clone());
        let warmup = Duration::from_secs_f64(opts.warmup);
        let thread = opts.threads;
        crate::pin::pin_session(&mut s, thread)?;
        std::thread::spawn(move || -> Result<UpdateOutcome> {
            crate::pin::pin_host_thread(thread);
            std::thread::sleep(warmup);
            phase.store(DURING, Ordering::Relaxed);
            let delta = db.as_ref().map(StatsDelta::start);
            let t = Instant::now();
            let out = s.execute(&update, &[]);
            let took = t.elapsed();
            phase.store(AFTER, Ordering::Relaxed);
            let rows = out.map_err(|code| {
                ndpdb_host::Error::new(
                    ndpdb_formats::SqlState::from_code(&code),
                    format!("the bulk update failed with SQLSTATE {code}"),
                )
            })?;
            let engine = match (delta, &db) {
                (Some(d), Some(db)) => d.finish(db),
                _ => Vec::new(),
            };
            Ok((took, rows, engine))
        })
    };
    let start = Instant::now();
    let mut samples = Vec::new();
    let mut last = 0;
    let mut saw = BEFORE;
    while start.elapsed() < Duration::from_secs(opts.seconds) || !updater.is_finished() {
        std::thread::sleep(opts.sample);
        // A sample belongs to the update if the update ran in any of it.
        let p = phase.load(Ordering::Relaxed);
        let label = if saw == DURING || p == DURING || (saw == BEFORE && p == AFTER) {
            DURING
        } else {
            p
        };
        saw = p;
        let now = ops.load(Ordering::Relaxed);
        samples.push((
            start.elapsed().as_millis() as u64,
            (now - last) as f64 / opts.sample.as_secs_f64(),
            label,
        ));
        last = now;
    }
    let errors = clients.stop()?;
    let (update, rows, engine) = updater.join().map_err(|_| thread_panic())??;
    Ok(MixedRun {
        ndp,
        label: if backend.is_postgres() {
            "PostgreSQL".to_string()
        } else if ndp {
            "ndp on".to_string()
        } else {
            "ndp off".to_string()
        },
        samples,
        update,
        rows,
        engine,
        errors,
    })
}

/// The update alone (no YCSB) at each selectivity, ndp off and on:
/// `(selectivity, ndp, duration, rows)`.
pub fn sweep(
    db: &Database,
    selectivities: &[u32],
    mut log: impl FnMut(&str),
) -> Result<Vec<(u32, bool, Duration, u64)>> {
    let mut out = Vec::new();
    for &pct in selectivities {
        for ndp in [false, true] {
            let mut s = Session::new(db.clone());
            s.execute(&ISOLATION.set_sql())?;
            s.execute(if ndp { "SET ndp = on" } else { "SET ndp = off" })?;
            let t = Instant::now();
            let rows = rows_changed(s.execute(&update_sql(pct))?.pop());
            let took = t.elapsed();
            log(&format!(
                "selectivity {pct:>3} %  ndp {:<3}  {:>9.1} ms  {rows} rows",
                if ndp { "on" } else { "off" },
                took.as_secs_f64() * 1e3
            ));
            out.push((pct, ndp, took, rows));
        }
    }
    Ok(out)
}

/// SELECT … FOR UPDATE followed by the UPDATE of the same rows, against
/// the UPDATE alone, on the host and on the device (update NDP §7, NDP
/// pipelines, which run under REPEATABLE READ): `(ndp, update alone,
/// select-for-update + update)`.
pub fn for_update_overhead(
    db: &Database,
    selectivity: u32,
    mut log: impl FnMut(&str),
) -> Result<Vec<(bool, Duration, Duration)>> {
    let pred = format!("ycsb_key % 100 < {selectivity}");
    let mut out = Vec::new();
    for ndp in [false, true] {
        let mut s = Session::new(db.clone());
        s.execute(if ndp { "SET ndp = on" } else { "SET ndp = off" })?;
        let t = Instant::now();
        s.execute(&format!(
            "BEGIN ISOLATION LEVEL REPEATABLE READ; UPDATE {TABLE} SET field8 = 'a' WHERE {pred}; COMMIT"
        ))?;
        let alone = t.elapsed();
        let t = Instant::now();
        s.execute(&format!(
            "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT ycsb_key FROM {TABLE} WHERE {pred} FOR UPDATE; UPDATE {TABLE} SET field8 = 'b' WHERE {pred}; COMMIT"
        ))?;
        let both = t.elapsed();
        log(&format!(
            "ndp {:<3}: UPDATE of {selectivity} % {:>9.1} ms; SELECT FOR UPDATE + UPDATE {:>9.1} ms ({:.2}×)",
            if ndp { "on" } else { "off" },
            alone.as_secs_f64() * 1e3,
            both.as_secs_f64() * 1e3,
            both.as_secs_f64() / alone.as_secs_f64().max(1e-9)
        ));
        out.push((ndp, alone, both));
    }
    Ok(out)
}

/// Early vs late abort of a full-table NDP update under REPEATABLE READ
/// (update NDP §8.3.7, Fig. 23). Early: a host commit to the row at
/// `at_percent` of the table was flushed before the job started, so the
/// device finds the newer version there and stops all PEs. Late: the host
/// commits to a row near the table's end just after the job started and
/// is not flushed — the device cannot see it, finishes the whole job, and
/// the host's validation rejects it. Returns (early, late) durations.
pub fn abort_costs(db: &Database, records: u64, at_percent: u64) -> Result<(Duration, Duration)> {
    let key = |pct: u64| (records * pct / 100) as i64;
    let mut host = Session::new(db.clone());
    // Early.
    let mut n = Session::new(db.clone());
    n.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")?;
    n.execute(&format!("SELECT count(*) FROM {TABLE} WHERE ycsb_key = 0"))?;
    host.execute(&format!(
        "UPDATE {TABLE} SET field7 = 'early' WHERE ycsb_key = {}",
        key(at_percent)
    ))?;
    db.flush()?;
    n.execute("SET ndp = on")?;
    let t = Instant::now();
    let r = n.execute(&format!("UPDATE {TABLE} SET field7 = 'x'"));
    let early = t.elapsed();
    n.execute("ROLLBACK")?;
    expect_conflict(r)?;
    // Late.
    let db2 = db.clone();
    let job = std::thread::spawn(move || -> Result<(Duration, Result<Vec<Output>>)> {
        let mut n = Session::new(db2);
        n.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")?;
        n.execute("SET ndp = on")?;
        let t = Instant::now();
        let r = n.execute(&format!("UPDATE {TABLE} SET field7 = 'y'"));
        let took = t.elapsed();
        n.execute("ROLLBACK")?;
        Ok((took, r))
    });
    std::thread::sleep(Duration::from_millis(30));
    host.execute(&format!(
        "UPDATE {TABLE} SET field7 = 'late' WHERE ycsb_key = {}",
        key(99)
    ))?;
    let (late, r) = job.join().map_err(|_| thread_panic())??;
    expect_conflict(r)?;
    Ok((early, late))
}

fn expect_conflict(r: Result<Vec<Output>>) -> Result<()> {
    match r {
        Err(e) if e.code == ndpdb_formats::SqlState::SERIALIZATION_FAILURE => Ok(()),
        Err(e) => Err(e),
        Ok(_) => Err(ndpdb_host::Error::new(
            ndpdb_formats::SqlState::INTERNAL_ERROR,
            "the abort experiment's update did not conflict (timing): rerun it",
        )),
    }
}

pub fn csv(runs: &[MixedRun]) -> String {
    let mut out = String::from("run,ms,ops_per_s,phase\n");
    for r in runs {
        for (ms, tput, phase) in &r.samples {
            let p = ["before", "during", "after"][*phase as usize];
            let _ = writeln!(out, "{},{ms},{tput:.0},{p}", r.label);
        }
    }
    out
}

/// Throughput over time, one line per run; `Ok(false)` without a font.
pub fn plot(path: &Path, runs: &[MixedRun], title: &str) -> std::result::Result<bool, String> {
    let series: Vec<crate::plot::Series> = runs
        .iter()
        .map(|r| crate::plot::Series {
            label: format!(
                "bulk UPDATE {} ({:.1} s)",
                match r.label.as_str() {
                    "ndp on" => "on the device (ndp on)",
                    "ndp off" => "on the host (ndp off)",
                    _ => "on PostgreSQL",
                },
                r.update.as_secs_f64()
            ),
            points: r
                .samples
                .iter()
                .map(|(ms, t, _)| (*ms as f64 / 1e3, *t))
                .collect(),
        })
        .collect();
    crate::plot::line_chart(path, title, "time (s)", "YCSB ops/s", &series)
}
