//! `lock-violation` (update NDP §8.3.9, Fig. 25): single-row update
//! transactions admitted at a fixed rate on the host, and after a warm-up
//! one transaction that locks the whole table with SELECT … FOR UPDATE
//! and then updates every row — for ndpdb on the device under basic
//! logging, with an overflow log (extended), and with an overflow log
//! plus controlled lock violation; for PostgreSQL the same SQL.
//!
//! ```text
//!  admitted  ─┬─┬─┬─┬─┬─┬─┬─┬─┬─┬─┬─┬─┬─┬─┬─┬─┬─┬─┬─►  `rate` tx/s, READ COMMITTED
//!  bulk tx    │ FOR UPDATE │ UPDATE │ COMMIT │          (log movement in COMMIT)
//!  waiters          └── queue on the bulk tx's locks ──┘ go on at COMMIT's start
//!                                                        (lock violation) or end
//!  finish = from the bulk tx's start until it and every transaction
//!           admitted before its commit ended have ended
//! ```
//!
//! Transactions are admitted open-loop: a ticket per 1/`rate` s goes to a
//! pool of `workers` sessions; when all of them wait for locks, tickets
//! queue, and a transaction's latency counts from its admission.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use ndpdb_formats::Value;
use ndpdb_host::Result;

use crate::clients::thread_panic;
use crate::isolation::Level;
use crate::target::Backend;
use crate::ycsb::{random_field, TABLE};

/// The isolation level of the host transactions and the bulk one.
pub const ISOLATION: Level = Level::ReadCommitted;

pub struct LvOptions {
    pub records: u64,
    /// Host transactions admitted per second.
    pub rate: f64,
    /// Sessions that run them.
    pub workers: usize,
    /// Before the bulk transaction starts, and after it has ended.
    pub warmup: Duration,
    pub after: Duration,
    /// Width of the commit/abort histogram bins.
    pub bin: Duration,
}

/// How the bulk transaction runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// On the device, `ndp_logging = basic` (no media recovery).
    Basic,
    /// `ndp_logging = extended`: the overflow log moves at commit.
    Overflow,
    /// `extended` with `ndp_lock_violation = on`.
    LockViolation,
    /// PostgreSQL, on its host.
    Postgres,
}

impl Mode {
    pub fn label(self) -> &'static str {
        match self {
            Mode::Basic => "SLT (basic logging)",
            Mode::Overflow => "SLT + overflow log",
            Mode::LockViolation => "SLT + overflow log + lock violation",
            Mode::Postgres => "PostgreSQL",
        }
    }

    fn settings(self) -> &'static [&'static str] {
        match self {
            Mode::Basic => &["SET ndp = on", "SET ndp_logging = basic"],
            Mode::Overflow => &[
                "SET ndp = on",
                "SET ndp_logging = extended",
                "SET ndp_lock_violation = off",
            ],
            Mode::LockViolation => &[
                "SET ndp = on",
                "SET ndp_logging = extended",
                "SET ndp_lock_violation = on",
            ],
            Mode::Postgres => &[],
        }
    }
}

/// One host transaction: admitted and ended (ms since the run started).
#[derive(Clone, Copy, Debug)]
pub struct TxRecord {
    pub admitted: f64,
    pub ended: f64,
    pub committed: bool,
}

/// One run.
#[derive(Clone, Debug)]
pub struct LvRun {
    pub mode: Mode,
    /// ms since the run started: the bulk transaction's start, its FOR
    /// UPDATE and UPDATE done, its COMMIT issued and returned.
    pub start: f64,
    pub locked: f64,
    pub updated: f64,
    pub commit_end: f64,
    pub txs: Vec<TxRecord>,
    /// Engine counters of the bulk commit (ndpdb).
    pub lock_violations: i64,
    pub commit_dependencies: i64,
}

impl LvRun {
    /// From the bulk transaction's start until it and every transaction
    /// admitted before its commit ended have ended (ms).
    pub fn finish(&self) -> f64 {
        let last = self
            .txs
            .iter()
            .filter(|t| t.admitted < self.commit_end)
            .map(|t| t.ended)
            .fold(self.commit_end, f64::max);
        last - self.start
    }

    /// The bulk transaction alone: start to acknowledged commit (ms).
    pub fn bulk(&self) -> f64 {
        self.commit_end - self.start
    }

    /// Its COMMIT (ms).
    pub fn commit(&self) -> f64 {
        self.commit_end - self.updated
    }

    /// Host transactions that were waiting when the bulk COMMIT started,
    /// and how many of them committed.
    pub fn waiters(&self) -> (usize, usize) {
        let w: Vec<&TxRecord> = self
            .txs
            .iter()
            .filter(|t| t.admitted < self.updated && t.ended > self.updated)
            .collect();
        (w.len(), w.iter().filter(|t| t.committed).count())
    }

    /// (commits, aborts) per bin from the bulk transaction's start − 1 s.
    pub fn bins(&self, bin: Duration) -> Vec<(f64, u64, u64)> {
        let w = bin.as_secs_f64() * 1e3;
        let from = self.start - 1000.0;
        let end = self
            .txs
            .iter()
            .map(|t| t.ended)
            .fold(self.commit_end, f64::max);
        let n = ((end - from) / w).ceil().max(1.0) as usize;
        let mut out: Vec<(f64, u64, u64)> = (0..n)
            .map(|i| ((from + i as f64 * w - self.start) / 1e3, 0, 0))
            .collect();
        for t in &self.txs {
            if t.ended < from {
                continue;
            }
            let i = (((t.ended - from) / w) as usize).min(n - 1);
            if t.committed {
                out[i].1 += 1;
            } else {
                out[i].2 += 1;
            }
        }
        out
    }
}

/// Runs one round on `backend` (its table loaded) in `mode`.
pub fn run(backend: &Backend, opts: &LvOptions, mode: Mode) -> Result<LvRun> {
    let t0 = Instant::now();
    let ms = move || t0.elapsed().as_secs_f64() * 1e3;
    let (tickets, rx) = mpsc::channel::<f64>();
    let rx = Arc::new(Mutex::new(rx));
    let records: Arc<Mutex<Vec<TxRecord>>> = Arc::default();
    let mut workers = Vec::new();
    for w in 0..opts.workers {
        let mut s = backend.connect()?;
        ISOLATION.apply(&mut s)?;
        let update = s.prepare(&format!(
            "UPDATE {TABLE} SET field0 = $1 WHERE ycsb_key = $2"
        ))?;
        let (rx, records, keys) = (rx.clone(), records.clone(), opts.records);
        workers.push(std::thread::spawn(move || {
            let mut rng = SmallRng::seed_from_u64(700 + w as u64);
            loop {
                let admitted = match rx.lock().map(|r| r.recv()) {
                    Ok(Ok(a)) => a,
                    _ => return,
                };
                let key = Value::BigInt(rng.gen_range(0..keys) as i64);
                let v = Value::Text(random_field(&mut rng, 100));
                let committed = s.execute(&update, &[v, key]).is_ok();
                let ended = ms();
                if let Ok(mut r) = records.lock() {
                    r.push(TxRecord {
                        admitted,
                        ended,
                        committed,
                    });
                }
            }
        }));
    }
    let bulk = {
        let mut s = backend.connect()?;
        ISOLATION.apply(&mut s)?;
        for set in mode.settings() {
            s.batch(set)?;
        }
        let warmup = opts.warmup;
        let db = backend.database().cloned();
        std::thread::spawn(move || -> Result<[f64; 6]> {
            std::thread::sleep(warmup);
            let counters = |name: &str| db.as_ref().map_or(0, |d| d.stat(name));
            let (lv0, dep0) = (
                counters("ndp.lock_violations"),
                counters("ndp.commit_dependencies"),
            );
            let start = ms();
            s.batch("BEGIN")?;
            s.batch(&format!("SELECT ycsb_key FROM {TABLE} FOR UPDATE"))?;
            let locked = ms();
            s.batch(&format!("UPDATE {TABLE} SET field9 = 'bulk'"))?;
            let updated = ms();
            s.batch("COMMIT")?;
            let commit_end = ms();
            // Dependents count when they commit, after the bulk commit.
            std::thread::sleep(Duration::from_millis(200));
            Ok([
                start,
                locked,
                updated,
                commit_end,
                (counters("ndp.lock_violations") - lv0) as f64,
                (counters("ndp.commit_dependencies") - dep0) as f64,
            ])
        })
    };
    // Admission at a fixed rate until the bulk transaction is done and
    // `after` has passed.
    let period = Duration::from_secs_f64(1.0 / opts.rate.max(0.1));
    let mut next = Instant::now();
    let mut done_at: Option<Instant> = None;
    loop {
        let now = Instant::now();
        if now < next {
            std::thread::sleep(next - now);
        }
        next += period;
        if tickets.send(ms()).is_err() {
            break;
        }
        match done_at {
            Some(d) if d.elapsed() >= opts.after => break,
            Some(_) => {}
            None if bulk.is_finished() => done_at = Some(Instant::now()),
            None => {}
        }
    }
    drop(tickets);
    for w in workers {
        w.join().map_err(|_| thread_panic())?;
    }
    let [start, locked, updated, commit_end, lv, dep] =
        bulk.join().map_err(|_| thread_panic())??;
    let txs = std::mem::take(&mut *records.lock().map_err(|_| thread_panic())?);
    Ok(LvRun {
        mode,
        start,
        locked,
        updated,
        commit_end,
        txs,
        lock_violations: lv as i64,
        commit_dependencies: dep as i64,
    })
}

/// `lock_violation.csv`: the commits and aborts per bin of every run.
pub fn csv(runs: &[(u32, LvRun)], bin: Duration) -> String {
    let mut out = String::from("round,run,seconds_from_bulk_start,commits,aborts\n");
    for (round, r) in runs {
        for (s, c, a) in r.bins(bin) {
            let _ = writeln!(out, "{round},{},{s:.3},{c},{a}", r.mode.label());
        }
    }
    out
}

/// `lock_violation_runs.csv`: one line per run.
pub fn runs_csv(runs: &[(u32, LvRun)]) -> String {
    let mut out = String::from(
        "round,run,for_update_ms,update_ms,commit_ms,bulk_ms,finish_ms,waiters,waiters_committed,host_commits,host_aborts,lock_violations,commit_dependencies\n",
    );
    for (round, r) in runs {
        let (w, wc) = r.waiters();
        let commits = r.txs.iter().filter(|t| t.committed).count();
        let _ = writeln!(
            out,
            "{round},{},{:.1},{:.1},{:.1},{:.1},{:.1},{w},{wc},{commits},{},{},{}",
            r.mode.label(),
            r.locked - r.start,
            r.updated - r.locked,
            r.commit(),
            r.bulk(),
            r.finish(),
            r.txs.len() - commits,
            r.lock_violations,
            r.commit_dependencies
        );
    }
    out
}

/// Commits per second over time, one line per run (and aborts per
/// second, dashed in the same colour, as a second chart).
pub fn plot(
    path: &Path,
    runs: &[&LvRun],
    bin: Duration,
    title: &str,
    aborts: bool,
) -> std::result::Result<bool, String> {
    let per_s = 1.0 / bin.as_secs_f64();
    let series: Vec<crate::plot::Series> = runs
        .iter()
        .map(|r| crate::plot::Series {
            label: format!(
                "{} (bulk tx {:.1} s, finish {:.1} s)",
                r.mode.label(),
                r.bulk() / 1e3,
                r.finish() / 1e3
            ),
            points: r
                .bins(bin)
                .into_iter()
                .map(|(s, c, a)| (s + 1.0, if aborts { a } else { c } as f64 * per_s))
                .collect(),
        })
        .collect();
    crate::plot::line_chart(
        path,
        title,
        "seconds (the bulk transaction starts at 1)",
        if aborts {
            "host aborts/s"
        } else {
            "host commits/s"
        },
        &series,
    )
}
