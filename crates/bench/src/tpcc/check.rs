//! TPC-C's consistency conditions 1–4 (clause 3.3.2.1–3.3.2.4), checked
//! with SQL after a run: aggregate queries per warehouse or district,
//! whose results are compared here, every warehouse and district
//! required to be present.
//!
//! ```text
//!  1  W_YTD = Σ D_YTD                                   per warehouse
//!  2  D_NEXT_O_ID − 1 = max(O_ID) = max(NO_O_ID)         per district
//!  3  max(NO_O_ID) − min(NO_O_ID) + 1 = count(NEW_ORDER)  per district
//!  4  Σ O_OL_CNT = count(ORDER_LINE)                      per district
//! ```

use std::collections::BTreeMap;

use ndpdb_formats::{Decimal, SqlState, Value};

use super::db::{decimal, int, prepare, query, DbError};
use super::DISTRICTS;
use crate::target::Conn;

/// One condition's verdict.
#[derive(Clone, Debug)]
pub struct Condition {
    pub number: u8,
    pub passed: bool,
    /// What was compared, or the first mismatch.
    pub detail: String,
}

impl Condition {
    pub fn title(&self) -> &'static str {
        TITLES[(self.number - 1) as usize]
    }
}

pub const TITLES: [&str; 4] = [
    "W_YTD = sum(D_YTD)",
    "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)",
    "max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW_ORDER)",
    "sum(O_OL_CNT) = count(ORDER_LINE)",
];

/// The queries, per condition.
pub const QUERIES: [&[&str]; 4] = [
    &[
        "SELECT w_id, w_ytd, SUM(d_ytd) FROM warehouse JOIN district ON d_w_id = w_id \
       GROUP BY w_id, w_ytd",
    ],
    &[
        "SELECT d_w_id, d_id, d_next_o_id FROM district",
        "SELECT o_w_id, o_d_id, MAX(o_id) FROM orders GROUP BY o_w_id, o_d_id",
        "SELECT no_w_id, no_d_id, MAX(no_o_id) FROM new_order GROUP BY no_w_id, no_d_id",
    ],
    &[
        "SELECT no_w_id, no_d_id, MAX(no_o_id) - MIN(no_o_id) + 1, COUNT(*) FROM new_order \
       GROUP BY no_w_id, no_d_id",
    ],
    &[
        "SELECT o_w_id, o_d_id, SUM(o_ol_cnt) FROM orders GROUP BY o_w_id, o_d_id",
        "SELECT ol_w_id, ol_d_id, COUNT(*) FROM order_line GROUP BY ol_w_id, ol_d_id",
    ],
];

type Key = (i64, i64);

fn run(conn: &mut Conn, sql: &str) -> Result<Vec<Vec<Value>>, DbError> {
    let stmt = prepare(conn, sql)?;
    query(conn, &stmt, &[]).map_err(|e| DbError::new(&e.code, format!("{sql}: {}", e.message)))
}

/// Rows keyed by their first two integer columns, the rest as exact numbers.
fn by_district(rows: Vec<Vec<Value>>) -> Result<BTreeMap<Key, Vec<Decimal>>, DbError> {
    let mut out = BTreeMap::new();
    for row in rows {
        let key = (int(&row[0])?, int(&row[1])?);
        let values = row[2..].iter().map(decimal).collect::<Result<_, _>>()?;
        out.insert(key, values);
    }
    Ok(out)
}

fn same(a: Decimal, b: Decimal) -> bool {
    a.checked_sub(b).is_ok_and(|d| d.mantissa == 0)
}

/// Checks conditions 1–4 on a target loaded with `warehouses` warehouses.
/// A query the target refuses fails its condition (the error is the
/// detail).
pub fn check(conn: &mut Conn, warehouses: u32) -> Vec<Condition> {
    let districts: Vec<Key> = (1..=warehouses as i64)
        .flat_map(|w| (1..=DISTRICTS as i64).map(move |d| (w, d)))
        .collect();
    let verdict = |number: u8, r: Result<Option<String>, DbError>, ok: String| match r {
        Ok(None) => Condition {
            number,
            passed: true,
            detail: ok,
        },
        Ok(Some(mismatch)) => Condition {
            number,
            passed: false,
            detail: mismatch,
        },
        Err(e) => Condition {
            number,
            passed: false,
            detail: format!("query failed: {e}"),
        },
    };
    let mut out = Vec::new();

    // 1: per warehouse.
    let r = (|| {
        let rows = run(conn, QUERIES[0][0])?;
        let mut seen = 0;
        for row in rows {
            let w = int(&row[0])?;
            let (ytd, sum) = (decimal(&row[1])?, decimal(&row[2])?);
            seen += 1;
            if !same(ytd, sum) {
                return Ok(Some(format!(
                    "warehouse {w}: W_YTD {ytd}, sum(D_YTD) {sum}"
                )));
            }
        }
        Ok((seen != warehouses)
            .then(|| format!("{seen} of {warehouses} warehouses have districts")))
    })();
    out.push(verdict(1, r, format!("{warehouses} warehouses")));

    let count = districts.len();
    let missing = |what: &str, key: &Key| Some(format!("district {}/{}: no {what}", key.0, key.1));

    // 2: per district.
    let r = (|| {
        let next = by_district(run(conn, QUERIES[1][0])?)?;
        let max_o = by_district(run(conn, QUERIES[1][1])?)?;
        let max_no = by_district(run(conn, QUERIES[1][2])?)?;
        for key in &districts {
            let Some(n) = next.get(key) else {
                return Ok(missing("DISTRICT row", key));
            };
            let Some(o) = max_o.get(key) else {
                return Ok(missing("ORDERS rows", key));
            };
            let expected = n[0]
                .checked_sub(Decimal::from_i64(1))
                .map_err(|e| DbError::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE.0, e.to_string()))?;
            if !same(expected, o[0]) {
                return Ok(Some(format!(
                    "district {}/{}: D_NEXT_O_ID - 1 = {expected}, max(O_ID) = {}",
                    key.0, key.1, o[0]
                )));
            }
            // A district whose orders are all delivered has no max(NO_O_ID).
            if let Some(no) = max_no.get(key) {
                if !same(expected, no[0]) {
                    return Ok(Some(format!(
                        "district {}/{}: D_NEXT_O_ID - 1 = {expected}, max(NO_O_ID) = {}",
                        key.0, key.1, no[0]
                    )));
                }
            }
        }
        Ok(None)
    })();
    out.push(verdict(2, r, format!("{count} districts")));

    // 3: per district with undelivered orders.
    let r = (|| {
        let rows = by_district(run(conn, QUERIES[2][0])?)?;
        for (key, v) in &rows {
            if !same(v[0], v[1]) {
                return Ok(Some(format!(
                    "district {}/{}: max - min + 1 = {}, count = {}",
                    key.0, key.1, v[0], v[1]
                )));
            }
        }
        Ok(None)
    })();
    out.push(verdict(3, r, format!("{count} districts")));

    // 4: per district.
    let r = (|| {
        let sums = by_district(run(conn, QUERIES[3][0])?)?;
        let lines = by_district(run(conn, QUERIES[3][1])?)?;
        for key in &districts {
            let Some(s) = sums.get(key) else {
                return Ok(missing("ORDERS rows", key));
            };
            let Some(l) = lines.get(key) else {
                return Ok(missing("ORDER_LINE rows", key));
            };
            if !same(s[0], l[0]) {
                return Ok(Some(format!(
                    "district {}/{}: sum(O_OL_CNT) = {}, count(ORDER_LINE) = {}",
                    key.0, key.1, s[0], l[0]
                )));
            }
        }
        Ok(None)
    })();
    out.push(verdict(4, r, format!("{count} districts")));
    out
}
