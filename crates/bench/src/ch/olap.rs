//! The analytical side of CH-benCHmark: the 22 queries as one stream per
//! OLAP client, and the power run — each query once on a quiet system,
//! timed, with its answer kept for the comparison with PostgreSQL.
//!
//! ```text
//!  OLAP client k   SET ndp = <mode> (ndpdb), the run's isolation level;
//!                  in the mix, the --olap-threads cap (limit_threads);
//!                  Q(1+s) … Q22, Q1 … in a loop, s = 22·k / clients,
//!                  one autocommit statement each
//!  Q15             CREATE VIEW revenue<k> …; the query; DROP VIEW
//!                  (BenchBase's Q15.run; client k owns view revenue<k>)
//!  stop            the running statement is cancelled and not counted
//! ```

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use ndpdb_host::Result;

use super::queries::{Q15_CREATE_VIEW, Q15_DROP_VIEW, QUERIES};
use super::NdpMode;
use crate::isolation::Level;
use crate::priority::Priority;
use crate::report::histogram;
use crate::target::{Backend, Canceler, Conn};

/// Rows of an answer, as PostgreSQL's text (NULL as `None`).
pub type Rows = Vec<Vec<Option<String>>>;

/// One analytical query as a client runs it.
#[derive(Clone, Debug)]
pub struct Query {
    pub name: &'static str,
    /// Run before the query (Q15's CREATE VIEW).
    pub before: Option<String>,
    pub sql: String,
    /// Run after the query, even when it failed (Q15's DROP VIEW).
    pub after: Option<String>,
}

/// The 22 queries as client `client` runs them: Q15 reads the client's
/// own view (`revenue0` for client 0, BenchBase's text).
pub fn queries(client: usize) -> Vec<Query> {
    let view = format!("revenue{client}");
    QUERIES
        .iter()
        .map(|&(name, sql)| {
            if name == "Q15" {
                Query {
                    name,
                    before: Some(Q15_CREATE_VIEW.replace("revenue0", &view)),
                    sql: sql.replace("revenue0", &view),
                    after: Some(Q15_DROP_VIEW.replace("revenue0", &view)),
                }
            } else {
                Query {
                    name,
                    before: None,
                    sql: sql.to_string(),
                    after: None,
                }
            }
        })
        .collect()
}

/// A failed statement as "SQLSTATE message".
fn failure(e: ndpdb_host::Error) -> String {
    format!("{} {}", e.code, e.message)
}

/// Runs one query (with Q15's view around it): its time and its rows.
pub fn run_query(conn: &mut Conn, q: &Query) -> (Duration, std::result::Result<Rows, String>) {
    let t = Instant::now();
    let mut result = match &q.before {
        Some(sql) => conn.batch(sql).map(|_| Vec::new()).map_err(failure),
        None => Ok(Vec::new()),
    };
    if result.is_ok() {
        result = conn.query_rows(&q.sql).map_err(failure);
    }
    if let Some(sql) = &q.after {
        if let Err(e) = conn.batch(sql) {
            if result.is_ok() {
                result = Err(failure(e));
            }
        }
    }
    (t.elapsed(), result)
}

/// Opens an OLAP session: the placement mode (ndpdb) and the isolation
/// level.
pub fn connect(backend: &Backend, mode: NdpMode, level: Level) -> Result<Conn> {
    let mut conn = backend.connect()?;
    if !backend.is_postgres() {
        conn.batch(mode.set_sql())?;
    }
    level.apply(&mut conn)?;
    Ok(conn)
}

/// Caps the threads one analytical statement runs on at `n`: on ndpdb
/// the host scan's workers and the PEs of each device job
/// (`host_workers`, `ndp_pes`), on PostgreSQL the backend and its
/// parallel workers (`max_parallel_workers_per_gather = n - 1`).
pub fn limit_threads(conn: &mut Conn, postgres: bool, n: usize) -> Result<()> {
    let n = n.max(1);
    if postgres {
        conn.batch(&format!("SET max_parallel_workers_per_gather = {}", n - 1))
    } else {
        conn.batch(&format!("SET host_workers = {n}"))?;
        conn.batch(&format!("SET ndp_pes = {n}"))
    }
}

/// One query of the power run.
#[derive(Clone, Debug)]
pub struct PowerQuery {
    pub name: &'static str,
    /// Median over the repetitions.
    pub time: Duration,
    /// The answer of the first repetition.
    pub answer: std::result::Result<Rows, String>,
}

/// The power run: every query `repeat` times in a row on a quiet target,
/// the median time and the first answer of each. `on_query` sees each
/// query as it finishes.
pub fn power(
    backend: &Backend,
    mode: NdpMode,
    level: Level,
    repeat: usize,
    on_query: &mut dyn FnMut(&PowerQuery),
) -> Result<Vec<PowerQuery>> {
    let mut conn = connect(backend, mode, level)?;
    let mut out = Vec::new();
    for q in queries(0) {
        let mut times = Vec::new();
        let mut answer = None;
        for _ in 0..repeat.max(1) {
            let (t, rows) = run_query(&mut conn, &q);
            times.push(t);
            let failed = rows.is_err();
            answer.get_or_insert(rows);
            if failed {
                break;
            }
        }
        times.sort();
        let p = PowerQuery {
            name: q.name,
            time: times[times.len() / 2],
            answer: answer.unwrap_or_else(|| Ok(Vec::new())),
        };
        on_query(&p);
        out.push(p);
    }
    Ok(out)
}

/// What the OLAP clients of a mix did with one query.
#[derive(Clone, Debug)]
pub struct QueryStats {
    pub name: &'static str,
    /// Completed runs, µs.
    pub latency: Histogram<u64>,
    /// Failures by SQLSTATE: how many, and the first "SQLSTATE message".
    pub errors: BTreeMap<String, (u64, String)>,
    /// When each completed run started and ended, seconds since the
    /// mix's start (what `report::oltp_by_query` lays over the samples).
    pub spans: Vec<(f64, f64)>,
}

impl QueryStats {
    fn new(name: &'static str) -> QueryStats {
        QueryStats {
            name,
            latency: histogram(),
            errors: BTreeMap::new(),
            spans: Vec::new(),
        }
    }
}

/// How the OLAP clients of a mix connect and run.
#[derive(Clone, Debug)]
pub struct StreamSettings {
    pub mode: NdpMode,
    pub level: Level,
    pub priority: Priority,
    /// The `--olap-threads` cap (`limit_threads`), if any.
    pub threads: Option<usize>,
    /// The `--olap-cpus` set (`pin::confine`); empty: not confined.
    pub cpus: Vec<usize>,
}

/// The OLAP clients of a running mix.
pub struct Streams {
    stop: Arc<AtomicBool>,
    cancelers: Vec<Canceler>,
    handles: Vec<std::thread::JoinHandle<Vec<QueryStats>>>,
    /// Queries completed so far, all clients.
    pub completed: Arc<AtomicU64>,
}

impl Streams {
    /// Connects `clients` OLAP sessions and starts their streams; the
    /// runs' spans are counted from `epoch`.
    pub fn start(
        backend: &Backend,
        clients: usize,
        settings: &StreamSettings,
        epoch: Instant,
        completed: Arc<AtomicU64>,
    ) -> Result<Streams> {
        let StreamSettings {
            mode,
            level,
            priority,
            threads,
            ref cpus,
        } = *settings;
        let stop = Arc::new(AtomicBool::new(false));
        let mut cancelers = Vec::new();
        let mut handles = Vec::new();
        for k in 0..clients {
            let mut conn = connect(backend, mode, level)?;
            if let Some(n) = threads {
                limit_threads(&mut conn, backend.is_postgres(), n)?;
            }
            if !matches!(conn, Conn::Embedded(_)) {
                crate::priority::serve_at(&mut conn, priority)?;
                crate::pin::confine(&mut conn, cpus)?;
            }
            cancelers.push(conn.canceler());
            let (stop, completed) = (stop.clone(), completed.clone());
            let start = QUERIES.len() * k / clients.max(1);
            let cpus = cpus.clone();
            handles.push(std::thread::spawn(move || {
                let qs = queries(k);
                let mut stats: Vec<QueryStats> =
                    qs.iter().map(|q| QueryStats::new(q.name)).collect();
                if matches!(conn, Conn::Embedded(_)) {
                    // Lowering one's own priority cannot fail.
                    let _ = crate::priority::serve_at(&mut conn, priority);
                    // An embedded session's statements run on this thread.
                    if let Err(e) = crate::pin::confine(&mut conn, &cpus) {
                        stats[0]
                            .errors
                            .insert(e.code.0.to_string(), (1, e.to_string()));
                        return stats;
                    }
                }
                let mut i = start;
                while !stop.load(Ordering::Relaxed) {
                    let q = &qs[i % qs.len()];
                    let began = epoch.elapsed().as_secs_f64();
                    let (t, rows) = run_query(&mut conn, q);
                    if stop.load(Ordering::Relaxed) {
                        break; // cut off (or cancelled) by the end of the run
                    }
                    let s = &mut stats[i % qs.len()];
                    match rows {
                        Ok(_) => {
                            s.latency.saturating_record((t.as_micros() as u64).max(1));
                            s.spans.push((began, began + t.as_secs_f64()));
                            completed.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => {
                            let code = e.split(' ').next().unwrap_or("").to_string();
                            let lost = code.starts_with("08");
                            s.errors.entry(code).or_insert((0, e)).0 += 1;
                            // A lost connection ends the client.
                            if lost {
                                break;
                            }
                        }
                    }
                    i += 1;
                }
                stats
            }));
        }
        Ok(Streams {
            stop,
            cancelers,
            handles,
            completed,
        })
    }

    /// Tells the streams to stop and cancels their running queries;
    /// returns at once.
    pub fn signal(&self) {
        self.stop.store(true, Ordering::Relaxed);
        for c in &self.cancelers {
            c.cancel();
        }
    }

    /// Stops the streams (cancelling running queries), waits for them and
    /// merges what they did per query.
    pub fn stop(self) -> Vec<QueryStats> {
        self.signal();
        let mut merged: Vec<QueryStats> =
            queries(0).iter().map(|q| QueryStats::new(q.name)).collect();
        for h in self.handles {
            if let Ok(stats) = h.join() {
                for (m, s) in merged.iter_mut().zip(stats) {
                    let _ = m.latency.add(&s.latency);
                    m.spans.extend(s.spans);
                    for (code, (n, first)) in s.errors {
                        m.errors.entry(code).or_insert((0, first)).0 += n;
                    }
                }
            }
        }
        merged
    }
}
