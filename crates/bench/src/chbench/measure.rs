//! How a query is measured: [`RUNS`] runs on one freshly opened database
//! (the host buffer pool cold for the first), the median reported with
//! the link, buffer and device counters it moved, at READ COMMITTED on
//! every target ([`ISOLATION`]).
//!
//! ```text
//!  open ─► SET isolation, SET ndp ─► run × RUNS (StatsDelta around each)
//!        ─► sort by time ─► median: Measurement { elapsed, link bytes,
//!           misses, device and PE time, tuples, pages, result }
//! ```
//!
//! Wire targets (a server, PostgreSQL) are timed by [`measure_wire`].

use std::path::Path;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use ndpdb_host::{Config, Database, Result};
use ndpdb_sql::{Output, Session};

use crate::isolation::Level;
use crate::report::{get, StatsDelta};
use crate::target::{text_rows, wire_error};

/// The isolation level of every query session.
pub const ISOLATION: Level = Level::ReadCommitted;

/// The report's isolation line.
pub fn isolation_line() -> String {
    crate::isolation::line(&format!(
        "{ISOLATION} (the queries, on every target); {} (the embedded load)",
        Level::RepeatableRead
    ))
}

/// Runs `sql` `runs` times on a wire target; returns each time and the
/// last result as text.
pub fn measure_wire(
    client: &mut postgres::Client,
    sql: &str,
    runs: usize,
) -> Result<(Vec<Duration>, String)> {
    let mut times = Vec::new();
    let mut result = String::new();
    for _ in 0..runs {
        let t = Instant::now();
        let msgs = client.simple_query(sql).map_err(wire_error)?;
        times.push(t.elapsed());
        // As ndpdb's measurements print results: `|` between columns.
        result = text_rows(msgs)
            .iter()
            .map(|r| {
                r.iter()
                    .map(|c| c.as_deref().unwrap_or("NULL"))
                    .collect::<Vec<_>>()
                    .join("|")
            })
            .collect::<Vec<_>>()
            .join(";");
    }
    Ok((times, result))
}

/// One measured query execution.
#[derive(Clone, Debug)]
pub struct Measurement {
    pub label: String,
    pub preset: String,
    pub ndp: bool,
    pub elapsed: Duration,
    pub rows: usize,
    pub data_to_host: i64,
    pub data_to_device: i64,
    pub control_messages: i64,
    pub host_misses: i64,
    pub shared_bytes: i64,
    /// Device figures (0 when the query ran on the host).
    pub device_micros: i64,
    pub pe_micros: i64,
    pub tuples: i64,
    pub pages_read: i64,
    /// Page bytes the scan read (NDP: the PEs; host only: the host's
    /// workers), against `pages_read` whole pages.
    pub bytes_touched: i64,
    /// Every run's time; the figures above are those of the median run.
    pub runs: Vec<Duration>,
    pub result: String,
}

impl Measurement {
    pub const CSV_HEADER: &'static str =
        "label,preset,ndp,ms,rows,data_to_host_bytes,data_to_device_bytes,control_messages,host_buffer_misses,shared_state_bytes,device_ms,tuples_per_pe_second,scan_bytes_per_pe_second,bytes_touched,touched_bytes_per_pe_second,runs_ms";

    /// `  12.3 ms (median of 3 runs: 14.0 / 12.3 / 11.9)`.
    pub fn timing(&self) -> String {
        format!(
            "{:>9.1} ms (median of {} runs: {})",
            self.elapsed.as_secs_f64() * 1e3,
            self.runs.len(),
            self.runs
                .iter()
                .map(|t| format!("{:.1}", t.as_secs_f64() * 1e3))
                .collect::<Vec<_>>()
                .join(" / ")
        )
    }

    /// Tuples each PE walked per second of its busy time.
    pub fn tuples_per_pe_second(&self) -> f64 {
        if self.pe_micros == 0 {
            0.0
        } else {
            self.tuples as f64 / (self.pe_micros as f64 / 1e6)
        }
    }

    /// Page bytes the PEs read (not whole pages) per second of PE time.
    pub fn touched_bytes_per_pe_second(&self) -> f64 {
        if self.pe_micros == 0 {
            0.0
        } else {
            self.bytes_touched as f64 / (self.pe_micros as f64 / 1e6)
        }
    }

    /// Page bytes each PE scanned per second of its busy time.
    pub fn scan_bytes_per_pe_second(&self) -> f64 {
        if self.pe_micros == 0 {
            0.0
        } else {
            (self.pages_read * ndpdb_formats::page::PAGE_SIZE as i64) as f64
                / (self.pe_micros as f64 / 1e6)
        }
    }

    pub fn csv(&self) -> String {
        format!(
            "{},{},{},{:.3},{},{},{},{},{},{},{:.3},{:.0},{:.0},{},{:.0},{}",
            self.label,
            self.preset,
            if self.ndp { "on" } else { "off" },
            self.elapsed.as_secs_f64() * 1e3,
            self.rows,
            self.data_to_host,
            self.data_to_device,
            self.control_messages,
            self.host_misses,
            self.shared_bytes,
            self.device_micros as f64 / 1e3,
            self.tuples_per_pe_second(),
            self.scan_bytes_per_pe_second(),
            self.bytes_touched,
            self.touched_bytes_per_pe_second(),
            self.runs
                .iter()
                .map(|t| format!("{:.3}", t.as_secs_f64() * 1e3))
                .collect::<Vec<_>>()
                .join(" ")
        )
    }
}

/// Runs of each measured query on one opened database (the median run
/// is reported; the first is the cold one), as for PostgreSQL.
pub const RUNS: usize = 3;

/// Runs `sql` [`RUNS`] times on a freshly opened database with `ndp` on or off.
pub fn measure(
    dir: &Path,
    config: &Config,
    label: &str,
    sql: &str,
    ndp: bool,
) -> Result<Measurement> {
    measure_with(dir, config, label, &[], sql, ndp)
}

/// [`measure`] after the session statements `settings`.
pub fn measure_with(
    dir: &Path,
    config: &Config,
    label: &str,
    settings: &[&str],
    sql: &str,
    ndp: bool,
) -> Result<Measurement> {
    let db = ndpdb_embedded::open_with(dir, config.clone())?;
    measure_on(&db, config, label, settings, sql, ndp)
}

pub(super) fn measure_on(
    db: &Database,
    config: &Config,
    label: &str,
    settings: &[&str],
    sql: &str,
    ndp: bool,
) -> Result<Measurement> {
    let mut s = Session::new(db.clone());
    s.execute(&ISOLATION.set_sql())?;
    s.execute(if ndp { "SET ndp = on" } else { "SET ndp = off" })?;
    for set in settings {
        s.execute(set)?;
    }
    let mut runs = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let delta = StatsDelta::start(db);
        let t = Instant::now();
        let out = s.execute(sql)?.pop();
        let elapsed = t.elapsed();
        runs.push((elapsed, delta.finish(db), out));
    }
    let times: Vec<Duration> = runs.iter().map(|r| r.0).collect();
    runs.sort_by_key(|r| r.0);
    let (elapsed, d, out) = runs.swap_remove(runs.len() / 2);
    let (rows, result) = match out {
        Some(Output::Rows { rows, .. }) => {
            let first = rows
                .first()
                .map(|r| {
                    r.iter()
                        .map(|v| v.to_pg_text().unwrap_or_default())
                        .collect::<Vec<_>>()
                        .join("|")
                })
                .unwrap_or_default();
            (rows.len(), first)
        }
        _ => (0, String::new()),
    };
    Ok(Measurement {
        label: label.to_string(),
        preset: config.link.name.to_string(),
        ndp,
        elapsed,
        rows,
        data_to_host: get(&d, "link.data.to_host.bytes"),
        data_to_device: get(&d, "link.data.to_device.bytes"),
        control_messages: get(&d, "link.control.to_device.messages"),
        host_misses: get(&d, "buffer.misses"),
        shared_bytes: get(&d, "ndp.shared_state_bytes"),
        device_micros: get(&d, "ndp.device_micros"),
        pe_micros: get(&d, "ndp.pe_micros"),
        tuples: get(&d, "ndp.tuples"),
        pages_read: get(&d, "ndp.pages_read"),
        bytes_touched: if ndp {
            get(&d, "ndp.bytes_touched")
        } else {
            get(&d, "scan.bytes_touched")
        },
        runs: times,
        result,
    })
}

/// A spinner for one measurement on a terminal (nothing otherwise: the
/// result line follows it).
pub(super) fn spinner(what: String) -> ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new_spinner();
    b.set_message(what);
    b.enable_steady_tick(Duration::from_millis(120));
    b
}
