//! The AND terms of a condition, and the two questions the planner asks
//! of each: does it compile over these columns, and may it be pushed
//! down (filter a scan, be a join key) — it may unless it needs a
//! subquery per row.
//!
//! ```text
//!  WHERE a AND (b AND c) ──conjuncts──► [a, b, c] ──and_all──► a AND b AND c
//!                                          │
//!                          compiles / pushable over a scope
//!                          (one table's, the rows joined so far)
//! ```
//!
//! `query/`, `or_terms.rs`, `join_order.rs` and the hashed subqueries
//! all split and recombine conditions this way.

use sqlparser::ast::{BinaryOperator, Expr};

use crate::bind::compile::compile;
use crate::bind::scope::Scope;

/// The AND terms of `e`, in order (parenthesized ANDs split too).
pub(crate) fn conjuncts(e: &Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        Expr::Nested(inner)
            if matches!(
                inner.as_ref(),
                Expr::BinaryOp {
                    op: BinaryOperator::And,
                    ..
                }
            ) =>
        {
            conjuncts(inner, out)
        }
        e => out.push(e.clone()),
    }
}

pub(crate) fn and_all(mut es: Vec<Expr>) -> Option<Expr> {
    let first = es.pop()?;
    Some(es.into_iter().rev().fold(first, |acc, e| Expr::BinaryOp {
        left: Box::new(e),
        op: BinaryOperator::And,
        right: Box::new(acc),
    }))
}

pub(crate) fn compiles(e: &Expr, scope: &Scope) -> bool {
    let mut p = Vec::new();
    compile(e, scope, &mut p).is_ok()
}

/// Whether `e` compiles over `scope` without a per-row subquery (so it
/// may filter a scan or be a join key).
pub(crate) fn pushable(e: &Expr, scope: &Scope) -> bool {
    let mut p = Vec::new();
    match (compile(e, scope, &mut p), &scope.ctx) {
        (Ok((prog, _)), Some(ctx)) => !ctx.row_dependent(&prog),
        (Ok(_), None) => true,
        (Err(_), _) => false,
    }
}
