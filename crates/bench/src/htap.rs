//! `htap-read`: YCSB-C on the host while an analytic query is injected
//! periodically, once with the query on the host and once offloaded —
//! host throughput over time (update-aware NDP §5: host-only OLTP drops
//! during analytics, NDP stays flat). Every session runs at READ
//! COMMITTED ([`ISOLATION`]).

use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::SeedableRng;

use ndpdb_formats::Value;
use ndpdb_host::Result;

use crate::isolation::Level;
use crate::target::Backend;
use crate::ycsb::TABLE;
use crate::zipf::Zipfian;

/// The isolation level of the YCSB-C clients and the analytic query.
pub const ISOLATION: Level = Level::ReadCommitted;

pub const ANALYTIC_QUERY: &str =
    "SELECT count(*), sum(length(field0)) FROM usertable WHERE field1 LIKE 'a%' OR field2 LIKE 'b%'";

pub struct HtapOptions {
    pub records: u64,
    pub threads: usize,
    pub seconds: u64,
    /// Seconds between analytic queries.
    pub every: f64,
    pub sample: Duration,
}

/// One run: throughput samples `(ms since start, ops/s, query running)`
/// and the analytic queries' durations.
pub struct HtapRun {
    pub ndp: bool,
    /// "ndp off", "ndp on" or "PostgreSQL".
    pub label: String,
    pub samples: Vec<(u64, f64, bool)>,
    pub queries: Vec<Duration>,
}

impl HtapRun {
    /// Mean throughput over the whole run.
    pub fn overall(&self) -> f64 {
        if self.samples.is_empty() {
            return 0.0;
        }
        self.samples.iter().map(|s| s.1).sum::<f64>() / self.samples.len() as f64
    }

    /// Share of the samples during which a query ran.
    pub fn busy_share(&self) -> f64 {
        if self.samples.is_empty() {
            return 0.0;
        }
        self.samples.iter().filter(|s| s.2).count() as f64 / self.samples.len() as f64
    }

    /// Mean throughput in samples with and without a query running.
    pub fn means(&self) -> (f64, f64) {
        (
            crate::report::mean_where(&self.samples, false),
            crate::report::mean_where(&self.samples, true),
        )
    }
}

/// One run on any target; `ndp` places the analytic query (ndpdb targets).
pub fn run(backend: &Backend, opts: &HtapOptions, ndp: bool) -> Result<HtapRun> {
    let ops = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let busy = Arc::new(AtomicBool::new(false));
    let zipf = Arc::new(Zipfian::new(opts.records, 0.99));
    let mut clients = Vec::new();
    for t in 0..opts.threads {
        let mut s = backend.connect()?;
        ISOLATION.apply(&mut s)?;
        crate::pin::pin_session(&mut s, t)?;
        let read = s.prepare(&format!("SELECT * FROM {TABLE} WHERE ycsb_key = $1"))?;
        let (ops, stop, zipf) = (ops.clone(), stop.clone(), zipf.clone());
        clients.push(std::thread::spawn(move || -> Result<()> {
            crate::pin::pin_host_thread(t);
            let mut rng = SmallRng::seed_from_u64(100 + t as u64);
            while !stop.load(Ordering::Relaxed) {
                let key = Value::BigInt(zipf.next_key(&mut rng) as i64);
                s.execute(&read, &[key]).map_err(read_failed)?;
                ops.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        }));
    }
    let analytic = {
        let mut s = backend.connect()?;
        ISOLATION.apply(&mut s)?;
        if !backend.is_postgres() {
            s.batch(if ndp { "SET ndp = on" } else { "SET ndp = off" })?;
        }
        let query = s.prepare(ANALYTIC_QUERY)?;
        let (stop, busy) = (stop.clone(), busy.clone());
        let every = Duration::from_secs_f64(opts.every);
        let analytic_thread = opts.threads;
        crate::pin::pin_session(&mut s, analytic_thread)?;
        std::thread::spawn(move || -> Result<Vec<Duration>> {
            crate::pin::pin_host_thread(analytic_thread);
            let mut times = Vec::new();
            let mut next = Instant::now() + every / 2;
            while !stop.load(Ordering::Relaxed) {
                if Instant::now() < next {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
                busy.store(true, Ordering::Relaxed);
                let t = Instant::now();
                s.execute(&query, &[]).map_err(read_failed)?;
                times.push(t.elapsed());
                busy.store(false, Ordering::Relaxed);
                next = Instant::now() + every;
            }
            Ok(times)
        })
    };
    let start = Instant::now();
    let mut samples = Vec::new();
    let mut last = 0;
    let mut was_busy = false;
    while start.elapsed() < Duration::from_secs(opts.seconds) {
        std::thread::sleep(opts.sample);
        was_busy |= busy.load(Ordering::Relaxed);
        let now = ops.load(Ordering::Relaxed);
        samples.push((
            start.elapsed().as_millis() as u64,
            (now - last) as f64 / opts.sample.as_secs_f64(),
            was_busy || busy.load(Ordering::Relaxed),
        ));
        was_busy = false;
        last = now;
    }
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().map_err(|_| thread_panic())??;
    }
    let queries = analytic.join().map_err(|_| thread_panic())??;
    Ok(HtapRun {
        ndp,
        label: if backend.is_postgres() {
            "PostgreSQL".into()
        } else if ndp {
            "ndp on".into()
        } else {
            "ndp off".into()
        },
        samples,
        queries,
    })
}

fn read_failed(code: String) -> ndpdb_host::Error {
    ndpdb_host::Error::new(
        ndpdb_formats::SqlState::from_code(&code),
        format!("a read failed with SQLSTATE {code}"),
    )
}

fn thread_panic() -> ndpdb_host::Error {
    ndpdb_host::Error::new(
        ndpdb_formats::SqlState::INTERNAL_ERROR,
        "benchmark thread panicked",
    )
}

/// Throughput over time, one line per run; `Ok(false)` without a font.
pub fn plot(path: &Path, runs: &[HtapRun], title: &str) -> std::result::Result<bool, String> {
    let series: Vec<crate::plot::Series> = runs
        .iter()
        .map(|r| crate::plot::Series {
            label: format!(
                "analytic query {}",
                match r.label.as_str() {
                    "ndp on" => "on the device (ndp on)",
                    "ndp off" => "on the host (ndp off)",
                    _ => "on PostgreSQL",
                }
            ),
            points: r
                .samples
                .iter()
                .map(|(ms, t, _)| (*ms as f64 / 1e3, *t))
                .collect(),
        })
        .collect();
    crate::plot::line_chart(path, title, "time (s)", "YCSB-C ops/s", &series)
}

pub fn csv(runs: &[HtapRun]) -> String {
    let mut out = String::from("run,ms,ops_per_s,query_running\n");
    for r in runs {
        for (ms, tput, busy) in &r.samples {
            let _ = writeln!(out, "{},{ms},{tput:.0},{}", r.label, *busy as u8);
        }
    }
    out
}
