//! Running a set operation (`plan/query/set_operation.rs`): both sides'
//! rows, cast to the result types, combined by hashing whole rows.
//!
//! ```text
//!  left rows ──┐  UNION ALL      left, then right
//!              ├► UNION          each distinct row once, first seen first
//!  right rows ─┘  INTERSECT      left's distinct rows also in right
//!                 INTERSECT ALL  a row min(m, n) times
//!                 EXCEPT         left's distinct rows not in right
//!                 EXCEPT ALL     a row max(m − n, 0) times
//! ```
//!
//! Rows compare as DISTINCT compares them: NULLs equal each other, numbers
//! by value (`1` and `1.0` are one row). Rows keep the left side's order,
//! then the right's; without ORDER BY SQL promises no order.

use std::collections::{HashMap, HashSet};

use ndpdb_formats::Value;
use ndpdb_host::Transaction;

use crate::exec::join::key_of;
use crate::plan::query::{SetOp, SetOperation, SetSide};
use crate::plan::subquery::statement_params;
use crate::Result;

impl SetOperation {
    /// The result rows under the set operation's `params` (its query
    /// level's, laid out by [`crate::plan::subquery::Bindings::bind`]).
    pub(crate) fn rows(&self, tx: &mut Transaction, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        let left = self.left.rows(tx, params)?;
        let right = self.right.rows(tx, params)?;
        Ok(combine(self.op, self.all, left, right))
    }

    /// Forgets subquery answers memoized by an earlier execution.
    pub(crate) fn reset_caches(&self) {
        self.left.plan.reset_caches();
        self.right.plan.reset_caches();
    }
}

impl SetSide {
    fn rows(&self, tx: &mut Transaction, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        let args = self
            .args
            .iter()
            .map(|a| a.eval(&[], params))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let statement = statement_params(params, self.base);
        let txn = params.last().cloned().unwrap_or(Value::Null);
        let bound = self.plan.subqueries.bind(tx, &statement, &args, txn)?;
        let mut rows = self.plan.rows(tx, &bound)?;
        if self.casts.iter().any(Option::is_some) {
            for row in &mut rows {
                for (v, cast) in row.iter_mut().zip(&self.casts) {
                    if let Some(ty) = cast {
                        let value = std::mem::replace(v, Value::Null);
                        *v = value.cast_into(ty)?;
                    }
                }
            }
        }
        Ok(rows)
    }
}

/// Combines the two sides' rows.
fn combine(op: SetOp, all: bool, left: Vec<Vec<Value>>, right: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    match (op, all) {
        (SetOp::Union, true) => {
            let mut out = left;
            out.extend(right);
            out
        }
        (SetOp::Union, false) => {
            let mut seen = HashSet::new();
            left.into_iter()
                .chain(right)
                .filter(|r| seen.insert(key_of(r)))
                .collect()
        }
        (SetOp::Intersect | SetOp::Except, false) => {
            let right: HashSet<Vec<u8>> = right.iter().map(|r| key_of(r)).collect();
            let keep_found = op == SetOp::Intersect;
            let mut seen = HashSet::new();
            left.into_iter()
                .filter(|r| {
                    let key = key_of(r);
                    right.contains(&key) == keep_found && seen.insert(key)
                })
                .collect()
        }
        (SetOp::Intersect | SetOp::Except, true) => {
            let mut counts: HashMap<Vec<u8>, usize> = HashMap::new();
            for r in &right {
                *counts.entry(key_of(r)).or_default() += 1;
            }
            let intersect = op == SetOp::Intersect;
            left.into_iter()
                .filter(|r| {
                    // A left row pairs off with one right row while any
                    // are left: INTERSECT keeps the pairs, EXCEPT the rest.
                    let paired = match counts.get_mut(&key_of(r)) {
                        Some(n) if *n > 0 => {
                            *n -= 1;
                            true
                        }
                        _ => false,
                    };
                    paired == intersect
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(v: &[i32]) -> Vec<Vec<Value>> {
        v.iter()
            .map(|&x| vec![if x < 0 { Value::Null } else { Value::Int(x) }])
            .collect()
    }

    fn ints(r: Vec<Vec<Value>>) -> Vec<i32> {
        r.into_iter()
            .map(|r| match r[0] {
                Value::Int(x) => x,
                _ => -1,
            })
            .collect()
    }

    #[test]
    fn each_operation_counts_duplicates_as_postgresql_does() {
        let l = || rows(&[1, 1, 2, 3, 3, 3, -1, -1]);
        let r = || rows(&[1, 3, 3, 4, -1]);
        let run = |op, all| ints(combine(op, all, l(), r()));
        assert_eq!(run(SetOp::Union, true).len(), 13);
        assert_eq!(run(SetOp::Union, false), vec![1, 2, 3, -1, 4]);
        assert_eq!(run(SetOp::Intersect, false), vec![1, 3, -1]);
        assert_eq!(run(SetOp::Intersect, true), vec![1, 3, 3, -1]);
        assert_eq!(run(SetOp::Except, false), vec![2]);
        assert_eq!(run(SetOp::Except, true), vec![1, 2, 3, -1]);
    }

    #[test]
    fn numbers_equal_in_value_are_one_row() {
        let l = vec![vec![Value::Int(1)]];
        let r = vec![vec![Value::Numeric(ndpdb_formats::Decimal::new(10, 1))]];
        assert_eq!(combine(SetOp::Union, false, l, r).len(), 1);
    }
}
