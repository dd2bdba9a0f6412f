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
//! ([`LOOKUP_FACTOR`]), else the hash join of `join.rs`. Only key values
//! whose encoding equals SQL equality are looked up (numbers of any
//! integer or NUMERIC type, or the column's own type), so a lookup finds
//! exactly the rows `=` would match; every equi-term is checked again on
//! the joined row.

use ndpdb_formats::expr::Program;
use ndpdb_formats::{DataType, Value};
use ndpdb_host::database::TableState;
use ndpdb_host::transaction::Transaction;
use ndpdb_host::Database;
use sqlparser::ast::Expr;

use crate::bind::compile::{compile, Ty};
use crate::bind::scope::Scope;
use crate::exec::join::{key_of, JoinKind, JoinStep, Joined};
use crate::plan::access::{column_of, pk_terms};
use crate::Result;

/// Lookups win while the left side has fewer than 1/`LOOKUP_FACTOR` of
/// the table's keys (a lookup costs several scanned rows) — when the
/// table fits in the buffer pool.
pub const LOOKUP_FACTOR: u64 = 8;

/// [`LOOKUP_FACTOR`] for a table larger than the buffer pool, whose
/// lookups mostly read a page from the device: at 10 CH-benCHmark
/// warehouses, 115,841 lookups in STOCK (1 M rows, 64 MiB pool) took
/// 20 µs each, a scan about 1 µs per row read and joined.
pub const UNCACHED_LOOKUP_FACTOR: u64 = 20;

/// How the new table's key is made from a row so far.
pub struct KeyLookup {
    /// One program per primary-key column, over the left row (constants
    /// read no column).
    pub key: Vec<Program>,
    /// The key's index, for EXPLAIN.
    pub index: String,
}

/// Whether `left`'s values are equal to a key column of type `col`
/// exactly when their key encodings are equal.
fn encodes_alike(left: Ty, col: DataType) -> bool {
    let Ty::Known(left) = left else {
        return false;
    };
    let number = |t: DataType| {
        matches!(
            t,
            DataType::Int | DataType::BigInt | DataType::Numeric { .. }
        )
    };
    let text = |t: DataType| matches!(t, DataType::Text | DataType::Varchar(_));
    (number(left) && number(col)) || (text(left) && text(col)) || left == col
}

/// The lookup of a join of `ts` (an inner or LEFT join) on the equi-terms
/// `pairs` (left side, right side) with the table's own terms `pushed`,
/// when they give its whole primary key.
pub fn plan(
    ts: &TableState,
    kind: JoinKind,
    pairs: &[(Expr, Expr)],
    pushed: &[Expr],
    left_scope: &Scope,
    right_scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<Option<KeyLookup>> {
    let meta = ts.meta();
    let pk = &meta.schema.primary_key;
    if pk.is_empty() || !matches!(kind, JoinKind::Inner | JoinKind::Left) || pairs.is_empty() {
        return Ok(None);
    }
    let constants = pk_terms(ts, pushed, right_scope, params)?;
    let mut key = Vec::with_capacity(pk.len());
    for (i, &c) in pk.iter().enumerate() {
        let col_ty = meta.schema.columns[c].ty;
        let mut from_left = None;
        for (l, r) in pairs {
            if column_of(r, right_scope) != Some(c) {
                continue;
            }
            let mut probe = Vec::new();
            let (_, ty) = compile(l, left_scope, &mut probe)?;
            if encodes_alike(ty, col_ty) {
                from_left = Some(compile(l, left_scope, params)?.0);
                break;
            }
        }
        match from_left.or_else(|| constants.get(i).cloned().flatten()) {
            Some(p) => key.push(p),
            None => return Ok(None),
        }
    }
    // A key of constants only is read once, as the table's own lookup.
    if constants.iter().all(Option::is_some) {
        return Ok(None);
    }
    Ok(Some(KeyLookup {
        key,
        index: meta.pk_constraint_name(),
    }))
}

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
