//! CH-benCHmark ORDER-LINE and the papers' read-NDP queries (DANSEN §4;
//! update-aware NDP §5): Query-SUM (CH Q6: revenue over a delivery-date
//! range and a quantity range) with NDP off and on under each link
//! preset, Query-UDF (SPN inference per row, `spn_score`, over the rows
//! of half the districts), the preloader under each NVM latency profile,
//! a selectivity sweep and a projectivity sweep.
//!
//! Every measured query runs on a freshly reopened database, so the host
//! buffer pool starts cold for both sides (the OS page cache, which backs
//! the device's store, stays warm for both). The queries run at READ
//! COMMITTED on every target ([`ISOLATION`]); the embedded load commits
//! `Isolation::Snapshot` (REPEATABLE READ) transactions.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use ndpdb_embedded::process::LinkKind;
use ndpdb_formats::udf::{spn_features, SPN_FEATURES};
use ndpdb_formats::value::parse_timestamp;
use ndpdb_formats::{Column, DataType, Decimal, Schema, Value};
use ndpdb_host::{Config, Database, Isolation, NvmProfile, Result};
use ndpdb_link::LinkModel;
use ndpdb_sql::{Output, Session};

use crate::isolation::Level;
use crate::memory_rate::{page_spans_read_rate, query_sum_spans, sequential_read_rate};
use crate::report::{get, StatsDelta};
use crate::target::{copy_rows, copy_text, endpoint, text_rows, wire_error, Target};

pub const TABLE: &str = "order_line";

/// The isolation level of every query session.
pub const ISOLATION: Level = Level::ReadCommitted;

/// The report's isolation line.
pub fn isolation_line() -> String {
    crate::isolation::line(&format!(
        "{ISOLATION} (the queries, on every target); {} (the embedded load)",
        Level::RepeatableRead
    ))
}

/// Delivery dates are uniform over [2000-01-01, 2020-01-01).
const FIRST_DAY: &str = "2000-01-01";
const DAYS: i64 = 7305;

/// Query-UDF: SPN inference over the rows of the first `k` districts.
pub fn query_udf(k: u32) -> String {
    format!("SELECT count(*), max(spn_score(ol_features)) FROM order_line WHERE ol_d_id <= {k}")
}

pub const QUERY_SUM: &str = "SELECT sum(ol_amount) AS revenue FROM order_line \
    WHERE ol_delivery_d >= '1999-01-01 00:00:00' AND ol_delivery_d < '2020-01-01 00:00:00' \
    AND ol_quantity BETWEEN 1 AND 100000";

/// ORDER-LINE as ndpdb creates it.
pub fn order_line_schema() -> Schema {
    let c = |name: &str, ty: DataType, nullable: bool| Column {
        name: name.into(),
        ty,
        nullable,
    };
    Schema::new(
        vec![
            c("ol_o_id", DataType::Int, false),
            c("ol_d_id", DataType::Int, false),
            c("ol_w_id", DataType::Int, false),
            c("ol_number", DataType::Int, false),
            c("ol_i_id", DataType::Int, false),
            c("ol_supply_w_id", DataType::Int, false),
            c("ol_delivery_d", DataType::Timestamp, true),
            c("ol_quantity", DataType::Int, false),
            c(
                "ol_amount",
                DataType::Numeric {
                    precision: 6,
                    scale: 2,
                },
                false,
            ),
            c("ol_dist_info", DataType::Varchar(24), false),
            c("ol_features", DataType::Bytea, false),
        ],
        vec![2, 1, 0, 3],
    )
}

/// The order lines of CH-benCHmark's initial population (10 districts per
/// warehouse, 3,000 orders per district, 5–15 lines per order), the same
/// sequence for every target.
pub struct OrderLines {
    rng: SmallRng,
    base: i64,
    left: u64,
    /// Lines left in the current order, and the order's position.
    lines: i32,
    n: i32,
    o: i32,
    d: i32,
    w: i32,
}

impl OrderLines {
    pub fn new(rows: u64) -> Result<OrderLines> {
        Ok(OrderLines {
            rng: SmallRng::seed_from_u64(6),
            base: parse_timestamp(FIRST_DAY)?,
            left: rows,
            lines: 0,
            n: 0,
            o: 1,
            d: 1,
            w: 1,
        })
    }
}

impl Iterator for OrderLines {
    type Item = Vec<Value>;

    fn next(&mut self) -> Option<Vec<Value>> {
        if self.left == 0 {
            return None;
        }
        if self.n == self.lines {
            if self.lines > 0 {
                self.o += 1;
                if self.o > 3000 {
                    self.o = 1;
                    self.d += 1;
                    if self.d > 10 {
                        self.d = 1;
                        self.w += 1;
                    }
                }
            }
            self.lines = self.rng.gen_range(5..=15);
            self.n = 0;
        }
        self.n += 1;
        self.left -= 1;
        let rng = &mut self.rng;
        let day = rng.gen_range(0..DAYS);
        let micros = self.base + day * 86_400_000_000 + rng.gen_range(0..86_400i64) * 1_000_000;
        let dist: String = (0..24)
            .map(|_| rng.gen_range(b'a'..=b'z') as char)
            .collect();
        let mut features = [0f32; SPN_FEATURES];
        for f in features.iter_mut() {
            *f = rng.gen_range(-3.0..3.0);
        }
        Some(vec![
            Value::Int(self.o),
            Value::Int(self.d),
            Value::Int(self.w),
            Value::Int(self.n),
            Value::Int(rng.gen_range(1..100_000)),
            Value::Int(self.w),
            Value::Timestamp(micros),
            Value::Int(rng.gen_range(1..=10)),
            Value::Numeric(Decimal::new(rng.gen_range(1..1_000_000), 2)),
            Value::Text(dist),
            Value::Bytea(spn_features(&features)),
        ])
    }
}

fn progress_bar(rows: u64, progress: bool) -> ProgressBar {
    if !progress {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(rows);
    b.set_style(
        ProgressStyle::with_template(
            "loading {bar:40} {pos}/{len} order lines ({per_sec}, eta {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    b
}

/// Loads `rows` order lines, 2,000 per transaction.
pub fn load(db: &Database, rows: u64, progress: bool) -> Result<Duration> {
    db.create_table(TABLE, order_line_schema())?;
    let table = db.table(TABLE)?;
    let bar = progress_bar(rows, progress);
    let start = Instant::now();
    let mut lines = OrderLines::new(rows)?.peekable();
    while lines.peek().is_some() {
        let mut tx = db.begin(Isolation::Snapshot)?;
        tx.begin_statement();
        for row in lines.by_ref().take(2000) {
            tx.insert(&table, row)?;
            bar.inc(1);
        }
        tx.commit()?;
    }
    bar.finish_and_clear();
    Ok(start.elapsed())
}

/// `CREATE TABLE order_line (…)` as SQL, for wire targets.
pub fn create_table_sql() -> String {
    let s = order_line_schema();
    let columns: Vec<String> = s
        .columns
        .iter()
        .map(|c| {
            format!(
                "{} {}{}",
                c.name,
                c.ty,
                if c.nullable { "" } else { " NOT NULL" }
            )
        })
        .collect();
    let pk: Vec<&str> = s
        .primary_key
        .iter()
        .map(|i| s.columns[*i].name.as_str())
        .collect();
    format!(
        "CREATE TABLE {TABLE} ({}, PRIMARY KEY ({}))",
        columns.join(", "),
        pk.join(", ")
    )
}

/// Loads the same order lines into a wire target through COPY.
pub fn load_wire(client: &mut postgres::Client, rows: u64, progress: bool) -> Result<Duration> {
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {TABLE}; {}",
            create_table_sql()
        ))
        .map_err(wire_error)?;
    let bar = progress_bar(rows, progress);
    crate::target::write_back_dirty_pages();
    let start = Instant::now();
    let mut lines = OrderLines::new(rows)?;
    copy_rows(
        client,
        TABLE,
        rows,
        20_000,
        |_, line| {
            if let Some(row) = lines.next() {
                let fields: Vec<String> = row
                    .iter()
                    .map(|v| {
                        v.to_pg_text()
                            .map_or_else(|| "\\N".to_string(), |t| copy_text(&t))
                    })
                    .collect();
                line.push_str(&fields.join("\t"));
            }
        },
        |n| bar.inc(n),
    )?;
    bar.finish_and_clear();
    Ok(start.elapsed())
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

fn measure_on(
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

fn plots(out: &Path, all: &[Measurement], postgres: Option<Duration>) -> Result<bool, String> {
    use crate::plot::{bar_chart, line_chart, Series};
    let ms = |m: &Measurement| m.elapsed.as_secs_f64() * 1e3;
    // One chart per query (Query-UDF takes ~100× Query-SUM's time); the
    // PostgreSQL bar where PostgreSQL ran the query (it has no SPN UDF).
    for (label, file, title) in [
        (
            "query-sum",
            "query-sum.png",
            "Query-SUM (CH Q6 on ORDER-LINE)",
        ),
        ("query-udf", "query-udf.png", "Query-UDF (SPN inference)"),
    ] {
        let mut cats = Vec::new();
        let mut values = Vec::new();
        // By link preset, then the measurements over other links
        // (`query-sum@rados`: the device's store in RADOS), by link.
        fn link_of<'m>(m: &'m Measurement, label: &str) -> Option<&'m str> {
            m.label.strip_prefix(label)?.strip_prefix('@')
        }
        for m in all
            .iter()
            .filter(|m| (m.label == label || link_of(m, label).is_some()) && !m.ndp)
        {
            let on = all
                .iter()
                .find(|o| o.label == m.label && o.preset == m.preset && o.ndp);
            cats.push(link_of(m, label).map_or_else(|| m.preset.clone(), str::to_string));
            let mut v = vec![ms(m), on.map_or(0.0, ms)];
            if let (Some(pg), "query-sum") = (postgres, label) {
                v.push(pg.as_secs_f64() * 1e3);
            }
            values.push(v);
        }
        if cats.is_empty() {
            continue;
        }
        let series: &[&str] = if postgres.is_some() && label == "query-sum" {
            &["ndpdb host only", "ndpdb NDP", "PostgreSQL 15"]
        } else {
            &["ndpdb host only", "ndpdb NDP"]
        };
        if !bar_chart(&out.join(file), title, "time (ms)", &cats, series, &values)? {
            return Ok(false);
        }
    }
    let sweep = |prefix: &str,
                 ndp: bool,
                 x: &dyn Fn(&str) -> f64,
                 y: &dyn Fn(&Measurement) -> f64| Series {
        label: format!("ndp {}", if ndp { "on" } else { "off" }),
        points: all
            .iter()
            .filter(|m| m.label.starts_with(prefix) && m.ndp == ndp)
            .map(|m| (x(&m.label[prefix.len()..]), y(m)))
            .collect(),
    };
    let num = |s: &str| s.parse::<f64>().unwrap_or(0.0);
    let nvm: Vec<&Measurement> = all
        .iter()
        .filter(|m| m.label.starts_with("preload-on-"))
        .collect();
    if !nvm.is_empty() {
        let mut cats = Vec::new();
        let mut values = Vec::new();
        for on in nvm {
            let profile = &on.label["preload-on-".len()..];
            let off = all
                .iter()
                .find(|m| m.label == format!("preload-off-{profile}"));
            cats.push(format!("NVM {profile}"));
            values.push(vec![
                off.map_or(0.0, |m| m.device_micros as f64 / 1e3),
                on.device_micros as f64 / 1e3,
            ]);
        }
        bar_chart(
            &out.join("preloader.png"),
            "Query-SUM on the device: preloader off vs on per NVM latency",
            "device time (ms)",
            &cats,
            &["no preloader", "preloader"],
            &values,
        )?;
    }
    if all.iter().any(|m| m.label.starts_with("fan-out-")) {
        let mut series = vec![Series {
            label: "ndpdb NDP, pages in RADOS (3 OSDs)".into(),
            points: all
                .iter()
                .filter_map(|m| Some((num(m.label.strip_prefix("fan-out-")?), ms(m))))
                .collect(),
        }];
        if let Some(pg) = postgres {
            let x: Vec<f64> = series[0].points.iter().map(|p| p.0).collect();
            let pg = pg.as_secs_f64() * 1e3;
            series.push(Series {
                label: "PostgreSQL 15 (local heap)".into(),
                points: x.into_iter().map(|x| (x, pg)).collect(),
            });
        }
        line_chart(
            &out.join("fan-out.png"),
            "Query-SUM in the OSDs: page objects called at once",
            "objects in flight",
            "time (ms)",
            &series,
        )?;
    }
    if all.iter().any(|m| m.label.starts_with("selectivity-")) {
        line_chart(
            &out.join("selectivity.png"),
            "Selectivity sweep: sum(ol_amount) where ol_delivery_d < cutoff",
            "selectivity (%)",
            "time (ms)",
            &[
                sweep("selectivity-", false, &num, &ms),
                sweep("selectivity-", true, &num, &ms),
            ],
        )?;
        let mb = |m: &Measurement| m.data_to_host as f64 / 1e6;
        line_chart(
            &out.join("projectivity.png"),
            "Projectivity sweep: rows of 10 % selectivity, k columns",
            "columns returned",
            "time (ms)",
            &[
                sweep("projectivity-", false, &num, &ms),
                sweep("projectivity-", true, &num, &ms),
            ],
        )?;
        line_chart(
            &out.join("projectivity-bytes.png"),
            "Projectivity sweep: data plane bytes to the host",
            "columns returned",
            "MB to host",
            &[
                sweep("projectivity-", false, &num, &mb),
                sweep("projectivity-", true, &num, &mb),
            ],
        )?;
    }
    Ok(true)
}

/// The date bound that makes `percent` % of the rows qualify.
pub fn date_cutoff(percent: u32) -> String {
    let base = parse_timestamp(FIRST_DAY).unwrap_or(0);
    let micros = base + (DAYS * percent as i64 / 100) * 86_400_000_000;
    ndpdb_formats::value::format_timestamp(micros)
}

pub struct ChOptions {
    pub rows: u64,
    pub out: PathBuf,
    pub presets: Vec<LinkModel>,
    pub base: Config,
    pub sweeps: bool,
    /// PostgreSQL baseline: a connection string (Query-SUM on the same rows).
    pub postgres: Option<String>,
    /// Also run Query-SUM through the wire protocol, against a server on
    /// the same database in this process (ndp off, then on).
    pub server: bool,
    /// Ways to reach the device Query-SUM also runs over (beside the
    /// in-process device of the preset runs): a device process over a
    /// unix socket or TCP (base preset).
    pub links: Vec<LinkKind>,
    /// With the `rados` link: Query-SUM with NDP on, calling this many
    /// page objects at once (each scans its share in its OSD).
    pub fan_out: Vec<usize>,
}

/// Query-SUM through the wire: a server on the loaded database (fresh
/// buffer pool, the base link preset), `SET ndp = off` then `on`.
fn server_query_sum(dir: &Path, config: &Config, log: &mut impl FnMut(&str)) -> Result<()> {
    let server = endpoint(
        &Target::NdpdbServer(None),
        config.clone(),
        Some(dir.to_path_buf()),
    )?;
    let mut client = server.connect()?;
    client
        .batch_execute(&ISOLATION.set_sql())
        .map_err(wire_error)?;
    for ndp in ["off", "on"] {
        client
            .batch_execute(&format!("SET ndp = {ndp}"))
            .map_err(wire_error)?;
        let (times, result) = measure_wire(&mut client, QUERY_SUM, 1)?;
        log(&format!(
            "query-sum  {:<12} ndp {ndp:<3} {:>9.1} ms  through the ndpdb server (wire protocol)  result {result}",
            config.link.name,
            times[0].as_secs_f64() * 1e3
        ));
    }
    Ok(())
}

/// The PostgreSQL column: the same order lines loaded through COPY, then
/// Query-SUM [`RUNS`] times (PostgreSQL's defaults: parallel workers on;
/// the first run after the load and VACUUM ANALYZE, as cold as PostgreSQL
/// gets without a restart). Returns the median time and the result.
fn postgres_query_sum(
    conninfo: &str,
    rows: u64,
    log: &mut impl FnMut(&str),
) -> Result<(Duration, String)> {
    let mut client = postgres::Client::connect(conninfo, postgres::NoTls).map_err(wire_error)?;
    client
        .batch_execute(&ISOLATION.set_sql())
        .map_err(wire_error)?;
    let t = load_wire(&mut client, rows, true)?;
    client
        .batch_execute(&format!("VACUUM ANALYZE {TABLE}"))
        .map_err(wire_error)?;
    log(&format!(
        "PostgreSQL: loaded {rows} order lines through COPY in {:.1} s",
        t.as_secs_f64()
    ));
    let (times, result) = measure_wire(&mut client, QUERY_SUM, RUNS)?;
    let mut sorted = times.clone();
    sorted.sort();
    let median = sorted[sorted.len() / 2];
    log(&format!(
        "query-sum  PostgreSQL   runs {} ms, median {:.1} ms  result {result}",
        times
            .iter()
            .map(|t| format!("{:.1}", t.as_secs_f64() * 1e3))
            .collect::<Vec<_>>()
            .join(" / "),
        median.as_secs_f64() * 1e3
    ));
    Ok((median, result))
}

/// "PostgreSQL 3.20× faster" or "ndpdb 2.10× faster" for PostgreSQL's time
/// over ndpdb's.
fn verdict(postgres_over_ndpdb: f64) -> String {
    if postgres_over_ndpdb >= 1.0 {
        format!("{postgres_over_ndpdb:.2}× faster than PostgreSQL")
    } else {
        format!("PostgreSQL {:.2}× faster", 1.0 / postgres_over_ndpdb)
    }
}

/// A spinner for one measurement on a terminal (nothing otherwise: the
/// result line follows it).
fn spinner(what: String) -> ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new_spinner();
    b.set_message(what);
    b.enable_steady_tick(Duration::from_millis(120));
    b
}

/// The memory rates a PE's scan is judged against (`crate::memory_rate`).
#[derive(Clone, Copy)]
struct Yardsticks {
    sequential: f64,
    page_spans: f64,
}

/// The headline figures (`ratios.csv`: `metric,value`).
fn ratios(
    all: &[Measurement],
    postgres: Option<&(Duration, String)>,
    memory_rate: Option<Yardsticks>,
) -> Vec<(&'static str, f64)> {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let find = |label: &str, ndp: bool| all.iter().find(|m| m.label == label && m.ndp == ndp);
    let mut out = Vec::new();
    let (sum_on, sum_off) = (find("query-sum", true), find("query-sum", false));
    if let Some((pg, _)) = postgres {
        out.push(("query_sum_postgres_ms", ms(*pg)));
    }
    if let Some(m) = sum_on {
        out.push(("query_sum_ndp_ms", ms(m.elapsed)));
    }
    if let Some(m) = sum_off {
        out.push(("query_sum_host_ms", ms(m.elapsed)));
    }
    if let Some((pg, _)) = postgres {
        if let Some(m) = sum_on {
            out.push((
                "query_sum_postgres_over_ndp",
                ms(*pg) / ms(m.elapsed).max(1e-9),
            ));
        }
        if let Some(m) = sum_off {
            out.push((
                "query_sum_postgres_over_host",
                ms(*pg) / ms(m.elapsed).max(1e-9),
            ));
        }
    }
    if let Some(m) = sum_on {
        out.push(("pe_tuples_per_s", m.tuples_per_pe_second()));
        out.push(("pe_bytes_touched_per_s", m.touched_bytes_per_pe_second()));
        out.push(("pe_page_bytes_per_s", m.scan_bytes_per_pe_second()));
    }
    if let Some(r) = memory_rate {
        out.push(("memory_read_bytes_per_s", r.sequential));
        out.push(("page_spans_read_bytes_per_s", r.page_spans));
    }
    if let Some(m) = find("query-udf", true) {
        out.push(("query_udf_pe_tuples_per_s", m.tuples_per_pe_second()));
    }
    out
}

/// Loads the table and runs every measurement; writes CSV and a summary.
pub fn run(opts: &ChOptions, mut log: impl FnMut(&str)) -> Result<Vec<Measurement>> {
    std::fs::create_dir_all(&opts.out)?;
    let dir = opts.out.join("db");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    {
        let db = ndpdb_embedded::open_with(&dir, opts.base.clone())?;
        let t = load(&db, opts.rows, true)?;
        log(&format!(
            "loaded {} order lines in {:.1} s",
            opts.rows,
            t.as_secs_f64()
        ));
    }
    // The same rows once more, into a database whose device store is
    // in RADOS.
    let rados_dir = opts.out.join("db-rados");
    if opts.links.contains(&LinkKind::Rados) {
        if rados_dir.exists() {
            std::fs::remove_dir_all(&rados_dir)?;
        }
        let bin = std::env::current_exe()?;
        let db = ndpdb_embedded::process::open_over(
            &rados_dir,
            opts.base.clone(),
            LinkKind::Rados,
            &bin,
        )?;
        let before = ndpdb_rados::counters();
        let t = load(&db, opts.rows, true)?;
        let moved = ndpdb_rados::counters().since(&before);
        log(&format!(
            "loaded {} order lines into RADOS in {:.1} s ({} B written to objects)",
            opts.rows,
            t.as_secs_f64(),
            moved.written_bytes
        ));
    }
    let mut all = Vec::new();
    for preset in &opts.presets {
        let config = Config {
            link: *preset,
            ..opts.base.clone()
        };
        for (label, sql) in [
            ("query-sum", QUERY_SUM.to_string()),
            ("query-udf", query_udf(5)),
        ] {
            for ndp in [false, true] {
                let on_off = if ndp { "on" } else { "off" };
                let spin = spinner(format!("{label} {} ndp {on_off}", preset.name));
                // Host-only scans run their workers unpinned (PostgreSQL's
                // parallel workers are not pinned either).
                let m = if ndp {
                    measure(&dir, &config, label, &sql, ndp)?
                } else {
                    crate::pin::unpinned(|| measure(&dir, &config, label, &sql, ndp))?
                };
                spin.finish_and_clear();
                let device = if ndp {
                    format!(
                        "  device {:.1} ms, {:.2} M tuples/s per PE, {:.0} MB/s of pages and {:.0} MB/s read per PE",
                        m.device_micros as f64 / 1e3,
                        m.tuples_per_pe_second() / 1e6,
                        m.scan_bytes_per_pe_second() / 1e6,
                        m.touched_bytes_per_pe_second() / 1e6
                    )
                } else {
                    String::new()
                };
                log(&format!(
                    "{label}  {:<12} ndp {:<3} {}  data to host {:>12} B  misses {:>7}  result {}{device}",
                    preset.name,
                    on_off,
                    m.timing(),
                    m.data_to_host,
                    m.host_misses,
                    m.result
                ));
                all.push(m);
            }
        }
    }
    for &link in opts.links.iter().filter(|l| **l != LinkKind::InProcess) {
        let at = if link == LinkKind::Rados {
            &rados_dir
        } else {
            &dir
        };
        for ndp in [false, true] {
            let bin = std::env::current_exe()?;
            let db = ndpdb_embedded::process::open_over(at, opts.base.clone(), link, &bin)?;
            // What the opening read (the maps) is not the query's.
            let before = ndpdb_rados::counters();
            let label = format!("query-sum@{}", link.name());
            let m = measure_on(&db, &opts.base, &label, &[], QUERY_SUM, ndp)?;
            drop(db);
            let moved = ndpdb_rados::counters().since(&before);
            let from_rados = if link == LinkKind::Rados {
                format!(
                    "  from RADOS per run: {:>12} B read, {:>9} B of object-class replies ({} calls)",
                    moved.read_bytes / RUNS as u64,
                    moved.reply_bytes / RUNS as u64,
                    moved.calls / RUNS as u64
                )
            } else {
                String::new()
            };
            log(&format!(
                "query-sum  {:<12} ndp {:<3} {}  data to host {:>12} B  link messages {:>7}  result {}{from_rados}",
                link.name(),
                if ndp { "on" } else { "off" },
                m.timing(),
                m.data_to_host,
                m.control_messages,
                m.result
            ));
            all.push(m);
        }
    }
    if opts.links.contains(&LinkKind::Rados) {
        for &in_flight in &opts.fan_out {
            let config = Config {
                rados_objects_in_flight: in_flight,
                ..opts.base.clone()
            };
            let bin = std::env::current_exe()?;
            let db = ndpdb_embedded::process::open_over(
                &rados_dir,
                config.clone(),
                LinkKind::Rados,
                &bin,
            )?;
            let before = ndpdb_rados::counters();
            let label = format!("fan-out-{in_flight}");
            let m = measure_on(&db, &config, &label, &[], QUERY_SUM, true)?;
            drop(db);
            let moved = ndpdb_rados::counters().since(&before);
            log(&format!(
                "query-sum  rados  {in_flight:>4} objects in flight  {}  {} B of replies per run  result {}",
                m.timing(),
                moved.reply_bytes / RUNS as u64,
                m.result
            ));
            all.push(m);
        }
    }
    if opts.server {
        server_query_sum(&dir, &opts.base, &mut log)?;
    }
    let postgres = match &opts.postgres {
        Some(conninfo) => Some(postgres_query_sum(conninfo, opts.rows, &mut log)?),
        None => None,
    };
    if let Some((pg, result)) = &postgres {
        for m in all
            .iter()
            .filter(|m| m.label == "query-sum" && m.preset == "unthrottled")
        {
            let same = if m.result == *result {
                "same result"
            } else {
                "RESULT DIFFERS"
            };
            log(&format!(
                "query-sum  ndpdb {} (ndp {}) is {} ({same}: {})",
                if m.ndp { "NDP" } else { "host only" },
                if m.ndp { "on" } else { "off" },
                verdict(pg.as_secs_f64() / m.elapsed.as_secs_f64().max(1e-9)),
                m.result
            ));
        }
    }
    // The yardsticks: one thread reading as many bytes as a PE scanned,
    // front to back and as the spans of each page a Query-SUM reads.
    let mut memory_rate = None;
    if let Some(m) = all
        .iter()
        .find(|m| m.label == "query-sum" && m.ndp && m.pages_read > 0)
    {
        let bytes = m.pages_read as usize * ndpdb_formats::page::PAGE_SIZE;
        let rate = sequential_read_rate(bytes);
        let (spans_rate, _) = page_spans_read_rate(m.pages_read as usize, &query_sum_spans()?);
        memory_rate = Some(Yardsticks {
            sequential: rate,
            page_spans: spans_rate,
        });
        log(&format!(
            "device scan per PE: {:.0} MB/s of whole pages ({:.0}% of one thread summing {:.0} MB of memory at {:.0} MB/s); {:.0} MB/s of the bytes it read ({:.0}%)",
            m.scan_bytes_per_pe_second() / 1e6,
            100.0 * m.scan_bytes_per_pe_second() / rate.max(1.0),
            bytes as f64 / 1e6,
            rate / 1e6,
            m.touched_bytes_per_pe_second() / 1e6,
            100.0 * m.touched_bytes_per_pe_second() / rate.max(1.0),
        ));
        log(&format!(
            "memory alone, reading only those spans of each page: {:.0} MB/s ({:.0}% of the sequential rate); the PE reaches {:.0}% of it",
            spans_rate / 1e6,
            100.0 * spans_rate / rate.max(1.0),
            100.0 * m.touched_bytes_per_pe_second() / spans_rate.max(1.0),
        ));
    }
    if opts.sweeps {
        // The papers' Experiment 3: NVM latency with and without preloader.
        for nvm in NvmProfile::ALL {
            let config = Config {
                device_nvm: nvm,
                ..opts.base.clone()
            };
            for preload in [false, true] {
                let on_off = if preload { "on" } else { "off" };
                let m = measure_with(
                    &dir,
                    &config,
                    &format!("preload-{on_off}-{}", nvm.name),
                    &[&format!("SET ndp_preload = {on_off}")],
                    QUERY_SUM,
                    true,
                )?;
                log(&format!(
                    "nvm {:<4} preloader {on_off:<3}  device {:>8.1} ms  {:.2} M tuples/s per PE",
                    nvm.name,
                    m.device_micros as f64 / 1e3,
                    m.tuples_per_pe_second() / 1e6
                ));
                all.push(m);
            }
        }
        let config = Config {
            link: opts
                .presets
                .last()
                .copied()
                .unwrap_or(LinkModel::UNTHROTTLED),
            ..opts.base.clone()
        };
        for pct in [0u32, 10, 25, 50, 75, 100] {
            let sql = format!(
                "SELECT sum(ol_amount) FROM order_line WHERE ol_delivery_d < '{}'",
                date_cutoff(pct)
            );
            for ndp in [false, true] {
                let m = measure(&dir, &config, &format!("selectivity-{pct}"), &sql, ndp)?;
                log(&format!(
                    "selectivity {pct:>3}% ndp {:<3} {:>9.1} ms",
                    if ndp { "on" } else { "off" },
                    m.elapsed.as_secs_f64() * 1e3
                ));
                all.push(m);
            }
        }
        let cols = [
            "ol_o_id",
            "ol_d_id",
            "ol_w_id",
            "ol_number",
            "ol_i_id",
            "ol_supply_w_id",
            "ol_delivery_d",
            "ol_quantity",
            "ol_amount",
            "ol_dist_info",
        ];
        for k in [1usize, 2, 5, 10] {
            let sql = format!(
                "SELECT {} FROM order_line WHERE ol_delivery_d < '{}'",
                cols[..k].join(", "),
                date_cutoff(10)
            );
            for ndp in [false, true] {
                let m = measure(&dir, &config, &format!("projectivity-{k}"), &sql, ndp)?;
                log(&format!(
                    "projectivity {k:>2} columns ndp {:<3} {:>9.1} ms  data to host {:>12} B",
                    if ndp { "on" } else { "off" },
                    m.elapsed.as_secs_f64() * 1e3,
                    m.data_to_host
                ));
                all.push(m);
            }
        }
    }
    let mut csv = String::from(Measurement::CSV_HEADER);
    csv.push('\n');
    for m in &all {
        let _ = writeln!(csv, "{}", m.csv());
    }
    std::fs::write(opts.out.join("chbench.csv"), csv)?;
    let headline = ratios(&all, postgres.as_ref(), memory_rate);
    let mut csv = String::from("metric,value\n");
    for (k, v) in &headline {
        let _ = writeln!(csv, "{k},{v:.3}");
    }
    std::fs::write(opts.out.join("ratios.csv"), csv)?;
    log(&format!(
        "ratios: {}",
        headline
            .iter()
            .map(|(k, v)| format!("{k} {v:.3}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    match plots(&opts.out, &all, postgres.as_ref().map(|p| p.0)) {
        Ok(true) => log(&format!("plots: {}/*.png", opts.out.display())),
        Ok(false) => log("plots skipped: no TrueType font found (CSV written)"),
        Err(e) => log(&format!("plots failed: {e} (CSV written)")),
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(all)
}
