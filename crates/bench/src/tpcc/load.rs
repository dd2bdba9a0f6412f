//! The TPC-C loader (clause 4.3), the same for every target: the rows of
//! the initial database are generated once per job (the items; each
//! warehouse with its stock, districts, customers, history, orders,
//! order lines and new orders) and sent in batches — `COPY … FROM STDIN`
//! over the wire, the same INSERT COPY runs (one batch per transaction)
//! in an embedded session. Jobs run on several connections at once; the
//! secondary indexes are built after the rows are in.
//!
//! ```text
//!  per warehouse   1 WAREHOUSE, ITEMS STOCK, 10 DISTRICT,
//!  per district    CUSTOMERS CUSTOMER + 1 HISTORY each,
//!                  CUSTOMERS ORDERS (customer ids a permutation), 5–15
//!                  ORDER_LINE each, the last 30 % in NEW_ORDER (undelivered)
//! ```

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use ndpdb_formats::{SqlState, Value};
use ndpdb_host::{Error, Result};

use super::random::{astring, data, last_name, money, nstring, nurand, rate, state, uniform, zip};
use super::schema::{self, Table};
use super::{Scale, DISTRICTS};
use crate::target::{copy_text, wire_error, write_back_dirty_pages, Backend, Conn};

/// Rows per COPY (or embedded transaction).
const BATCH: usize = 5_000;

/// What the load took.
#[derive(Clone, Debug, Default)]
pub struct LoadReport {
    /// Rows loaded.
    pub rows: u64,
    /// Generating and sending the rows.
    pub data: Duration,
    /// The secondary indexes (and PostgreSQL's VACUUM ANALYZE).
    pub indexes: Duration,
}

impl LoadReport {
    pub fn total(&self) -> Duration {
        self.data + self.indexes
    }
}

/// The load's settings.
#[derive(Clone, Copy, Debug)]
pub struct LoadConfig {
    pub warehouses: u32,
    pub scale: Scale,
    /// C for C_LAST at load time.
    pub c_last_load: i64,
    pub seed: u64,
    /// The load's "current time" (o_entry_d, h_date, ol_delivery_d,
    /// c_since), µs since 1970: targets loaded with the same value
    /// hold the same rows.
    pub now_micros: i64,
    /// Connections loading at once.
    pub threads: usize,
}

/// The rows a load writes, about (order lines average 10 an order).
pub fn expected_rows(warehouses: u32, scale: Scale) -> u64 {
    let c = scale.customers as u64;
    let per_district = 1 + 2 * c + c + 10 * c + scale.new_orders() as u64;
    scale.items as u64
        + warehouses as u64 * (1 + scale.items as u64 + DISTRICTS as u64 * per_district)
}

/// Drops the tables of an earlier run and creates them empty.
pub fn create_schema(conn: &mut Conn) -> Result<()> {
    for sql in schema::drop_sql() {
        conn.batch(&sql)?;
    }
    for t in schema::TABLES {
        conn.batch(&t.create_sql())?;
    }
    Ok(())
}

/// Creates the tables and loads the initial database.
pub fn load(backend: &Backend, cfg: &LoadConfig) -> Result<LoadReport> {
    let mut conn = backend.connect()?;
    create_schema(&mut conn)?;
    if matches!(backend, Backend::Wire(_)) {
        write_back_dirty_pages();
    }
    let jobs: Vec<Job> = std::iter::once(Job::Items)
        .chain((1..=cfg.warehouses).map(Job::Warehouse))
        .collect();
    let expected = expected_rows(cfg.warehouses, cfg.scale);
    let bar = progress_bar(expected);
    let start = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let jobs = Arc::new(jobs);
    let now = Value::Timestamp(cfg.now_micros)
        .to_pg_text()
        .unwrap_or_default();
    let threads = cfg.threads.clamp(1, jobs.len());
    let mut handles = Vec::new();
    for _ in 0..threads {
        let conn = backend.connect()?;
        let (next, jobs, bar, cfg, now) =
            (next.clone(), jobs.clone(), bar.clone(), *cfg, now.clone());
        handles.push(std::thread::spawn(move || -> Result<u64> {
            let mut w = Writer::new(conn, bar.clone());
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let t = Instant::now();
                let before = w.rows;
                job.generate(&cfg, &now, &mut w)
                    .and_then(|()| w.finish())
                    .map_err(|mut e| {
                        e.message = format!("loading {}: {}", job.name(), e.message);
                        e
                    })?;
                if bar.is_hidden() {
                    eprintln!(
                        "loaded {}: {} rows in {:.1} s",
                        job.name(),
                        w.rows - before,
                        t.elapsed().as_secs_f64()
                    );
                }
            }
            Ok(w.rows)
        }));
    }
    let mut rows = 0;
    let mut first_error = None;
    for h in handles {
        match h.join() {
            Ok(Ok(n)) => rows += n,
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(_) => {
                first_error.get_or_insert(Error::new(
                    SqlState::INTERNAL_ERROR,
                    "loader thread panicked",
                ));
            }
        }
    }
    bar.finish_and_clear();
    if let Some(e) = first_error {
        return Err(e);
    }
    let data = start.elapsed();
    let t = Instant::now();
    for sql in schema::INDEXES {
        conn.batch(sql).map_err(|mut e| {
            e.message = format!("{sql}: {}", e.message);
            e
        })?;
    }
    if backend.is_postgres() {
        conn.batch("VACUUM ANALYZE")?;
    }
    Ok(LoadReport {
        rows,
        data,
        indexes: t.elapsed(),
    })
}

/// A bar on a terminal; hidden otherwise (each job then prints a line).
fn progress_bar(len: u64) -> ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(len);
    b.set_style(
        ProgressStyle::with_template("loading {bar:40} {pos}/~{len} rows ({per_sec}, eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    b
}

enum Job {
    Items,
    Warehouse(u32),
}

type Row = Vec<Option<String>>;

fn f(v: impl ToString) -> Option<String> {
    Some(v.to_string())
}

impl Job {
    fn name(&self) -> String {
        match self {
            Job::Items => "items".into(),
            Job::Warehouse(w) => format!("warehouse {w}"),
        }
    }

    fn generate(&self, cfg: &LoadConfig, now: &str, out: &mut Writer) -> Result<()> {
        match *self {
            Job::Items => {
                let mut rng = SmallRng::seed_from_u64(cfg.seed ^ 0x17e3);
                for i in 1..=cfg.scale.items {
                    out.push(
                        &schema::ITEM,
                        vec![
                            f(i),
                            f(uniform(&mut rng, 1, 10_000)),
                            f(astring(&mut rng, 14, 24)),
                            f(money(uniform(&mut rng, 100, 10_000))),
                            f(data(&mut rng)),
                        ],
                    )?;
                }
                Ok(())
            }
            Job::Warehouse(w) => warehouse(cfg, w, now, out),
        }
    }
}

fn address(rng: &mut SmallRng, row: &mut Row) {
    row.push(f(astring(rng, 10, 20)));
    row.push(f(astring(rng, 10, 20)));
    row.push(f(astring(rng, 10, 20)));
    row.push(f(state(rng)));
    row.push(f(zip(rng)));
}

fn warehouse(cfg: &LoadConfig, w: u32, now: &str, out: &mut Writer) -> Result<()> {
    let scale = cfg.scale;
    let mut rng = SmallRng::seed_from_u64(cfg.seed.wrapping_add(w as u64 * 0x9e37_79b9));
    let mut row = vec![f(w), f(astring(&mut rng, 6, 10))];
    address(&mut rng, &mut row);
    row.push(f(rate(uniform(&mut rng, 0, 2000))));
    row.push(f("300000.00"));
    out.push(&schema::WAREHOUSE, row)?;
    for i in 1..=scale.items {
        let mut row = vec![f(i), f(w), f(uniform(&mut rng, 10, 100))];
        for _ in 0..10 {
            row.push(f(astring(&mut rng, 24, 24)));
        }
        row.extend([f(0), f(0), f(0), f(data(&mut rng))]);
        out.push(&schema::STOCK, row)?;
    }
    let delivered = scale.customers - scale.new_orders();
    for d in 1..=DISTRICTS {
        let mut row = vec![f(d), f(w), f(astring(&mut rng, 6, 10))];
        address(&mut rng, &mut row);
        row.push(f(rate(uniform(&mut rng, 0, 2000))));
        row.push(f("30000.00"));
        row.push(f(scale.customers + 1));
        out.push(&schema::DISTRICT, row)?;
        for c in 1..=scale.customers {
            let last = if c <= scale.last_names() {
                last_name(c as i64 - 1)
            } else {
                last_name(nurand(&mut rng, 255, 0, 999, cfg.c_last_load))
            };
            let mut row = vec![
                f(c),
                f(d),
                f(w),
                f(astring(&mut rng, 8, 16)),
                f("OE"),
                f(last),
            ];
            address(&mut rng, &mut row);
            row.push(f(nstring(&mut rng, 16, 16)));
            row.push(f(now));
            row.push(f(if uniform(&mut rng, 1, 10) == 1 {
                "BC"
            } else {
                "GC"
            }));
            row.push(f("50000.00"));
            row.push(f(rate(uniform(&mut rng, 0, 5000))));
            row.push(f("-10.00"));
            row.push(f("10.00"));
            row.push(f(1));
            row.push(f(0));
            row.push(f(astring(&mut rng, 300, 500)));
            out.push(&schema::CUSTOMER, row)?;
            out.push(
                &schema::HISTORY,
                vec![
                    f(c),
                    f(d),
                    f(w),
                    f(d),
                    f(w),
                    f(now),
                    f("10.00"),
                    f(astring(&mut rng, 12, 24)),
                ],
            )?;
        }
        let mut customers: Vec<u32> = (1..=scale.customers).collect();
        customers.shuffle(&mut rng);
        for o in 1..=scale.customers {
            let done = o <= delivered;
            let lines = uniform(&mut rng, 5, 15);
            out.push(
                &schema::ORDERS,
                vec![
                    f(o),
                    f(d),
                    f(w),
                    f(customers[o as usize - 1]),
                    f(now),
                    done.then(|| uniform(&mut rng, 1, 10).to_string()),
                    f(lines),
                    f(1),
                ],
            )?;
            for n in 1..=lines {
                out.push(
                    &schema::ORDER_LINE,
                    vec![
                        f(o),
                        f(d),
                        f(w),
                        f(n),
                        f(uniform(&mut rng, 1, scale.items as i64)),
                        f(w),
                        done.then(|| now.to_string()),
                        f(5),
                        f(if done {
                            "0.00".to_string()
                        } else {
                            money(uniform(&mut rng, 1, 999_999))
                        }),
                        f(astring(&mut rng, 24, 24)),
                    ],
                )?;
            }
            if !done {
                out.push(&schema::NEW_ORDER, vec![f(o), f(d), f(w)])?;
            }
        }
    }
    Ok(())
}

/// Batches rows per table and sends each full batch.
struct Writer {
    conn: Conn,
    pending: HashMap<&'static str, (&'static Table, Vec<Row>)>,
    /// Embedded: the INSERT a batch goes through, per table.
    inserts: HashMap<&'static str, ndpdb_sql::session::Prepared>,
    bar: ProgressBar,
    rows: u64,
    buf: Vec<u8>,
}

impl Writer {
    fn new(conn: Conn, bar: ProgressBar) -> Writer {
        Writer {
            conn,
            pending: HashMap::new(),
            inserts: HashMap::new(),
            bar,
            rows: 0,
            buf: Vec::with_capacity(1 << 20),
        }
    }

    fn push(&mut self, table: &'static Table, row: Row) -> Result<()> {
        let entry = self
            .pending
            .entry(table.name)
            .or_insert_with(|| (table, Vec::with_capacity(BATCH)));
        entry.1.push(row);
        if entry.1.len() >= BATCH {
            let rows = std::mem::take(&mut entry.1);
            self.send(table, rows)?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        let pending: Vec<_> = self
            .pending
            .values_mut()
            .map(|(t, rows)| (*t, std::mem::take(rows)))
            .collect();
        for (t, rows) in pending {
            if !rows.is_empty() {
                self.send(t, rows)?;
            }
        }
        Ok(())
    }

    fn send(&mut self, table: &'static Table, rows: Vec<Row>) -> Result<()> {
        self.send_rows(table, rows).map_err(|mut e| {
            e.message = format!("{}: {}", table.name, e.message);
            e
        })
    }

    fn send_rows(&mut self, table: &'static Table, rows: Vec<Row>) -> Result<()> {
        let n = rows.len() as u64;
        match &mut self.conn {
            Conn::Wire(client) => {
                self.buf.clear();
                for row in &rows {
                    for (i, v) in row.iter().enumerate() {
                        if i > 0 {
                            self.buf.push(b'\t');
                        }
                        match v {
                            Some(s) => self.buf.extend_from_slice(copy_text(s).as_bytes()),
                            None => self.buf.extend_from_slice(b"\\N"),
                        }
                    }
                    self.buf.push(b'\n');
                }
                let sql = format!(
                    "COPY {} ({}) FROM STDIN",
                    table.name,
                    table.column_names().join(", ")
                );
                let mut w = client.copy_in(&sql).map_err(wire_error)?;
                w.write_all(&self.buf)?;
                w.finish().map_err(wire_error)?;
            }
            Conn::Embedded(session) => {
                if !self.inserts.contains_key(table.name) {
                    let params: Vec<String> =
                        (1..=table.columns.len()).map(|i| format!("${i}")).collect();
                    let sql = format!(
                        "INSERT INTO {} ({}) VALUES ({})",
                        table.name,
                        table.column_names().join(", "),
                        params.join(", ")
                    );
                    self.inserts.insert(table.name, session.prepare(&sql)?);
                }
                let insert = &self.inserts[table.name];
                let values: Vec<Vec<Value>> = rows
                    .into_iter()
                    .map(|r| {
                        r.into_iter()
                            .map(|v| v.map_or(Value::Null, Value::Text))
                            .collect()
                    })
                    .collect();
                session.execute("BEGIN")?;
                let r = session.insert_rows(insert, values, &|_, e| e);
                match r {
                    Ok(_) => {
                        session.execute("COMMIT")?;
                    }
                    Err(e) => {
                        let _ = session.execute("ROLLBACK");
                        return Err(e);
                    }
                }
            }
        }
        self.rows += n;
        self.bar.inc(n);
        Ok(())
    }
}
