//! Key-lookup joins: when the join's equi-terms (and the new table's own
//! `col = constant` terms) give every column of the new table's primary
//! key, each row so far looks its partner up by key instead of the whole
//! table being read and hashed — PostgreSQL's nested loop over an index
//! scan, which TPC-C's Stock-Level and most CH-benCHmark dimension joins
//! need.
//!
//! ```text
//!  rows so far ──► per row: key = (left values | constants) in key order
//!                  ─► Transaction::get_by_key ─► the new table's filter
//!                  ─► all equi-keys and the ON residual ─► joined row
//!  LEFT: a row without a partner ─► left ++ NULLs
//! ```
//!
//! The choice is made when the join runs, from how many rows the left
//! side has: lookups when they are few against the table's keys
//! ([`LOOKUP_FACTOR`], planned in `plan/join_plan.rs`), else the hash join of `join.rs`. Only key values
//! whose encoding equals SQL equality are looked up (numbers of any
//! integer or NUMERIC type, or the column's own type), so a lookup finds
//! exactly the rows `=` would match; every equi-term is checked again on
//! the joined row.

use ndpdb_formats::expr::Program;
use ndpdb_formats::Value;
use ndpdb_host::database::TableState;
use ndpdb_host::transaction::Transaction;
use ndpdb_host::Database;

use crate::exec::join::{key_of, Joined};
pub use crate::plan::join_plan::KeyLookup;
use crate::plan::join_plan::{JoinKind, JoinStep, LOOKUP_FACTOR, UNCACHED_LOOKUP_FACTOR};
use crate::Result;

impl KeyLookup {
    /// Whether `left_rows` lookups beat reading the whole table.
    pub fn worthwhile(&self, db: &Database, table: &TableState, left_rows: usize) -> bool {
        let keys = table.pk.get().map_or(0, |p| p.len());
        let factor = match crate::placement::cost_model::table_pages(table)
            > db.buffer_pool_pages() as f64
        {
            true => UNCACHED_LOOKUP_FACTOR,
            false => LOOKUP_FACTOR,
        };
        (left_rows as u64).saturating_mul(factor) <= keys
    }

    /// Joins `left` with the rows of `table` (kept by `filter`) its keys
    /// find, as `step` defines the join.
    pub fn run(
        &self,
        tx: &mut Transaction,
        step: &JoinStep,
        table: &TableState,
        filter: Option<&Program>,
        left: Vec<Joined>,
        params: &[Value],
    ) -> Result<Vec<Joined>> {
        let mut out = Vec::with_capacity(left.len());
        for l in left {
            let found = match self.key_of(&l.values, params)? {
                Some(key) => tx.get_by_key(table, &key)?,
                None => None,
            };
            let mut matched = None;
            if let Some((_, _, row)) = found {
                let keep = match filter {
                    Some(f) => f.eval_predicate(&row, params)?,
                    None => true,
                };
                if keep {
                    let mut values = Vec::with_capacity(step.left_width + step.right_width);
                    values.extend(l.values.iter().cloned());
                    values.extend(row);
                    if joins(step, &values, params)? {
                        matched = Some(step.project(values));
                    }
                }
            }
            match matched {
                Some(values) => out.push(Joined::of_join(values)),
                None if step.kind == JoinKind::Left => {
                    let values = step.null_extended(Some(&l.values), None);
                    out.push(Joined::of_join(values));
                }
                None => {}
            }
        }
        Ok(out)
    }

    /// The key a left row looks up; `None` if a part is NULL.
    fn key_of(&self, left: &[Value], params: &[Value]) -> Result<Option<Vec<Value>>> {
        let mut key = Vec::with_capacity(self.key.len());
        for p in &self.key {
            match p.eval(left, params)? {
                Value::Null => return Ok(None),
                v => key.push(v),
            }
        }
        Ok(Some(key))
    }
}

/// Whether the joined row `values` meets every equi-term and the ON
/// residual of `step`.
fn joins(step: &JoinStep, values: &[Value], params: &[Value]) -> Result<bool> {
    let (left, right) = values.split_at(step.left_width);
    for (l, r) in step.left_keys.iter().zip(&step.right_keys) {
        let (a, b) = (l.eval(left, params)?, r.eval(right, params)?);
        if a.is_null() || b.is_null() || key_of(&[a]) != key_of(&[b]) {
            return Ok(false);
        }
    }
    match &step.residual {
        Some(res) => Ok(res.eval_predicate(values, params)?),
        None => Ok(true),
    }
}
