//! The data set: CH-benCHmark's ORDER-LINE table as ndpdb creates it, the
//! same generated order lines for every target (embedded, through COPY
//! into a wire server or PostgreSQL), and the two queries of the papers
//! over it, Query-SUM and Query-UDF.
//!
//! ```text
//!  OrderLines (seeded: the same rows everywhere)
//!     ├─ load:      embedded, 2,000 rows per Snapshot transaction
//!     └─ load_wire: COPY into ndpdb serve or PostgreSQL
//!  ol_delivery_d uniform over [2000-01-01, 2020-01-01): date_cutoff(p)
//!  makes p % of the rows qualify (the selectivity sweep)
//! ```

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use ndpdb_formats::udf::{spn_features, SPN_FEATURES};
use ndpdb_formats::value::parse_timestamp;
use ndpdb_formats::{Column, DataType, Decimal, Schema, Value};
use ndpdb_host::{Database, Isolation, Result};

use crate::target::{copy_rows, copy_text, wire_error};

pub const TABLE: &str = "order_line";

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

/// The date bound that makes `percent` % of the rows qualify.
pub fn date_cutoff(percent: u32) -> String {
    let base = parse_timestamp(FIRST_DAY).unwrap_or(0);
    let micros = base + (DAYS * percent as i64 / 100) * 86_400_000_000;
    ndpdb_formats::value::format_timestamp(micros)
}
