//! CH-benCHmark's three tables beyond TPC-C — REGION, NATION and SUPPLIER
//! — with the rows BenchBase's `CHBenCHmarkLoader` writes, so that the 22
//! queries see the data they see there.
//!
//! ```text
//!  REGION    5 rows   data/ch/region_gen.tbl  (key|name|comment)
//!  NATION   62 rows   data/ch/nation_gen.tbl  (key|name|regionkey|comment);
//!                     n_nationkey = the ASCII code of one of 0-9 A-Z a-z
//!  SUPPLIER 10,000    one java.util.Random seeded 0, per row in order:
//!                     name astring(25,25), address astring(20,40),
//!                     nation number(0,61), phone nstring(15,15),
//!                     acctbal (float) fixedPoint(2, 10000, 1e9),
//!                     comment astring(51,101)
//!
//!  stock ─ mod(s_w_id * s_i_id, 10000) = su_suppkey ─ supplier
//!  customer ─ ascii(substring(c_state from 1 for 1)) = n_nationkey ─ nation
//!  supplier ─ su_nationkey = n_nationkey;  nation ─ n_regionkey = r_regionkey
//! ```
//!
//! The `.tbl` files are BenchBase's (cmu-db/benchbase, Apache License
//! 2.0, `src/main/resources/benchmarks/chbenchmark/`); fields keep their
//! blank padding, as BenchBase's `StringTokenizer` reads them. BenchBase's
//! DDL declares FOREIGN KEYs from NATION to REGION and SUPPLIER to NATION;
//! they constrain nothing the benchmark writes and are left out.

use ndpdb_host::Result;

use crate::target::Conn;
use crate::tpcc::schema::Table;

pub const REGION: Table = Table {
    name: "region",
    columns: &[
        ("r_regionkey", "INT NOT NULL"),
        ("r_name", "CHAR(55) NOT NULL"),
        ("r_comment", "CHAR(152) NOT NULL"),
    ],
    primary_key: Some("r_regionkey"),
};

pub const NATION: Table = Table {
    name: "nation",
    columns: &[
        ("n_nationkey", "INT NOT NULL"),
        ("n_name", "CHAR(25) NOT NULL"),
        ("n_regionkey", "INT NOT NULL"),
        ("n_comment", "CHAR(152) NOT NULL"),
    ],
    primary_key: Some("n_nationkey"),
};

pub const SUPPLIER: Table = Table {
    name: "supplier",
    columns: &[
        ("su_suppkey", "INT NOT NULL"),
        ("su_name", "CHAR(25) NOT NULL"),
        ("su_address", "VARCHAR(40) NOT NULL"),
        ("su_nationkey", "INT NOT NULL"),
        ("su_phone", "CHAR(15) NOT NULL"),
        ("su_acctbal", "NUMERIC(12,2) NOT NULL"),
        ("su_comment", "CHAR(101) NOT NULL"),
    ],
    primary_key: Some("su_suppkey"),
};

pub const TABLES: [&Table; 3] = [&REGION, &NATION, &SUPPLIER];

/// Suppliers BenchBase always loads, whatever the warehouse count.
pub const SUPPLIERS: u32 = 10_000;

const REGION_TBL: &str = include_str!("../../data/ch/region_gen.tbl");
const NATION_TBL: &str = include_str!("../../data/ch/nation_gen.tbl");

/// The 62 nation keys: the ASCII codes of `0-9`, `A-Z` and `a-z`.
pub fn nation_keys() -> Vec<i32> {
    (b'0'..=b'9')
        .chain(b'A'..=b'Z')
        .chain(b'a'..=b'z')
        .map(i32::from)
        .collect()
}

/// `java.util.Random` (a 48-bit linear congruential generator) with
/// BenchBase's `RandomGenerator` helpers on top: the supplier rows depend
/// on reproducing its sequence exactly.
pub struct JavaRandom {
    seed: u64,
}

const MULTIPLIER: u64 = 0x5_DEEC_E66D;
const MASK: u64 = (1 << 48) - 1;

impl JavaRandom {
    pub fn new(seed: i64) -> JavaRandom {
        JavaRandom {
            seed: (seed as u64 ^ MULTIPLIER) & MASK,
        }
    }

    fn next(&mut self, bits: u32) -> i32 {
        self.seed = self.seed.wrapping_mul(MULTIPLIER).wrapping_add(0xB) & MASK;
        (self.seed >> (48 - bits)) as u32 as i32
    }

    /// `nextInt(bound)`: uniform in `0..bound` (`bound > 0`).
    pub fn next_int(&mut self, bound: i32) -> i32 {
        let bits = self.next(31);
        let m = bound - 1;
        if bound & m == 0 {
            return ((bound as i64 * bits as i64) >> 31) as i32;
        }
        let mut u = bits;
        loop {
            let r = u % bound;
            if u.wrapping_sub(r).wrapping_add(m) >= 0 {
                return r;
            }
            u = self.next(31);
        }
    }

    /// `number(min, max)`: uniform in `min..=max`.
    pub fn number(&mut self, min: i32, max: i32) -> i32 {
        min + self.next_int(max - min + 1)
    }

    fn string(&mut self, min: i32, max: i32, base: u8, chars: i32) -> String {
        let len = self.number(min, max);
        (0..len)
            .map(|_| (base + self.number(0, chars - 1) as u8) as char)
            .collect()
    }

    /// Lower-case letters, length in `min..=max`.
    pub fn astring(&mut self, min: i32, max: i32) -> String {
        self.string(min, max, b'a', 26)
    }

    /// Digits, length in `min..=max`.
    pub fn nstring(&mut self, min: i32, max: i32) -> String {
        self.string(min, max, b'0', 10)
    }

    /// `fixedPoint(places, min, max)`: Java's `(int)` casts saturate.
    pub fn fixed_point(&mut self, places: u32, min: f64, max: f64) -> f64 {
        let mult = 10i32.pow(places);
        let to_int = |d: f64| (d * mult as f64 + 0.5) as i32;
        self.number(to_int(min), to_int(max)) as f64 / mult as f64
    }
}

fn fields(tbl: &'static str) -> impl Iterator<Item = Vec<&'static str>> {
    tbl.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split('|').collect())
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The rows of the three tables as SQL literals, in load order.
pub fn rows() -> Vec<(&'static Table, Vec<Vec<String>>)> {
    let region = fields(REGION_TBL)
        .map(|f| vec![f[0].to_string(), quote(f[1]), quote(f[2])])
        .collect();
    let nation = fields(NATION_TBL)
        .map(|f| vec![f[0].to_string(), quote(f[1]), f[2].to_string(), quote(f[3])])
        .collect();
    let keys = nation_keys();
    let mut rng = JavaRandom::new(0);
    let mut supplier = Vec::with_capacity(SUPPLIERS as usize);
    for key in 1..=SUPPLIERS {
        let name = rng.astring(25, 25);
        let address = rng.astring(20, 40);
        let nation = keys[rng.number(0, 61) as usize];
        let phone = rng.nstring(15, 15);
        // `(float) fixedPoint(…)` then `setDouble`: the value passes
        // through single precision; NUMERIC(12,2) rounds half away from 0.
        let balance = rng.fixed_point(2, 10_000.0, 1_000_000_000.0) as f32;
        let cents = (balance as f64 * 100.0).round() as i64;
        let comment = rng.astring(51, 101);
        supplier.push(vec![
            key.to_string(),
            quote(&name),
            quote(&address),
            nation.to_string(),
            quote(&phone),
            format!("{}.{:02}", cents / 100, cents % 100),
            quote(&comment),
        ]);
    }
    vec![(&REGION, region), (&NATION, nation), (&SUPPLIER, supplier)]
}

/// Drops the three tables (and Q15's view) of an earlier run.
pub fn drop_sql() -> Vec<String> {
    let mut sql = vec!["DROP VIEW IF EXISTS revenue0".to_string()];
    sql.extend(
        TABLES
            .iter()
            .rev()
            .map(|t| format!("DROP TABLE IF EXISTS {}", t.name)),
    );
    sql
}

/// Creates and fills the three tables: multi-row INSERTs of 200 rows,
/// one transaction per table.
pub fn load(conn: &mut Conn, postgres: bool) -> Result<u64> {
    for sql in drop_sql() {
        // A database without views refuses DROP VIEW: nothing to drop.
        let _ = conn.batch(&sql);
    }
    let mut n = 0;
    for (table, rows) in rows() {
        conn.batch(&table.create_sql())?;
        conn.batch("BEGIN")?;
        for chunk in rows.chunks(200) {
            let values: Vec<String> = chunk
                .iter()
                .map(|r| format!("({})", r.join(", ")))
                .collect();
            let sql = format!("INSERT INTO {} VALUES {}", table.name, values.join(", "));
            if let Err(e) = conn.batch(&sql) {
                let _ = conn.batch("ROLLBACK");
                return Err(e);
            }
            n += chunk.len() as u64;
        }
        conn.batch("COMMIT")?;
    }
    if postgres {
        conn.batch("ANALYZE region, nation, supplier")?;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_random_matches_the_jdk() {
        // new java.util.Random(0): nextInt(100) × 5 and nextInt(1 << 20).
        let mut r = JavaRandom::new(0);
        let got: Vec<i32> = (0..5).map(|_| r.next_int(100)).collect();
        assert_eq!(got, vec![60, 48, 29, 47, 15]);
        let mut r = JavaRandom::new(42);
        assert_eq!(r.next_int(10), 0);
        assert_eq!(r.next_int(10), 3);
    }

    #[test]
    fn the_tables_have_benchbase_row_counts_and_keys() {
        let rows = rows();
        assert_eq!(rows[0].1.len(), 5);
        assert_eq!(rows[1].1.len(), 62);
        assert_eq!(rows[2].1.len(), SUPPLIERS as usize);
        let nations: Vec<i32> = rows[1].1.iter().map(|r| r[0].parse().unwrap()).collect();
        let mut keys = nation_keys();
        keys.sort();
        let mut sorted = nations.clone();
        sorted.sort();
        assert_eq!(sorted, keys);
        // Every supplier's nation exists; names are 25 lower-case letters.
        for s in &rows[2].1 {
            assert!(nations.contains(&s[3].parse().unwrap()));
            assert_eq!(s[1].len(), 27);
            assert!(s[1][1..26].bytes().all(|b| b.is_ascii_lowercase()));
        }
    }
}
