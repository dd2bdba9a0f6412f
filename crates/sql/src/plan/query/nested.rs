//! Planning a subquery expression met while compiling a query: `EXISTS`,
//! `IN (SELECT …)`, `x op ANY / ALL (SELECT …)` and scalar subqueries.
//! This is the planner's recursion into nested queries: the expression
//! compiler (`bind/`) reaches it through the [`QueryBinder`] trait that
//! [`QueryContext`] implements here, and it plans the child query with
//! `plan_query_in` like any other.
//!
//! ```text
//!  compile(e) ─► QueryBinder::subquery ─► memoized? ─► its slot
//!                  └─► child context (outer scope = the caller's)
//!                        ─► plan_query_in(child) ─► SubKind + type
//!                        ─► per row?  correlated EXISTS ─► hashed_exists.rs
//!                        ─► SubPlan into a slot of the caller's context
//! ```
//!
//! The slots, their kinds and the parameter layout are
//! `plan/subquery/mod.rs`'s; running a planned subquery is
//! `plan/subquery/subplan.rs`'s.

use std::sync::Arc;

use ndpdb_formats::expr::{Op, Program};
use ndpdb_formats::{DataType, SqlState};
use ndpdb_host::Database;
use sqlparser::ast::{BinaryOperator, Expr, Query};

use super::hashed_exists;
use super::plan::plan_query_in;
use super::{unsupported, SelectPlan};
use crate::bind::compile::{comparable, Ty};
use crate::bind::scope::{OperandCompiler, QueryBinder, Scope};
use crate::bind::sequence_call::SequenceCall;
use crate::plan::subquery::{Comparison, QueryContext, SubKind, SubPlan};
use crate::{Error, Result};

impl QueryBinder for QueryContext {
    fn db(&self) -> &Database {
        QueryContext::db(self)
    }

    fn outer_ref(&self, table: Option<&str>, name: &str) -> Result<Option<(u32, DataType)>> {
        QueryContext::outer_ref(self, table, name)
    }

    fn subquery(
        self: Arc<Self>,
        e: &Expr,
        scope: &Scope,
        grouped: bool,
        params: &mut Vec<Option<DataType>>,
        operand: &mut OperandCompiler<'_>,
    ) -> Result<(u32, Ty)> {
        plan_subquery(&self, e, scope, grouped, params, operand)
    }

    fn sequence_call(&self, call: SequenceCall) -> u32 {
        QueryContext::sequence_call(self, call)
    }

    fn row_dependent(&self, p: &Program) -> bool {
        QueryContext::row_dependent(self, p)
    }
}

/// Plans the subquery expression `e` (EXISTS, IN, ANY / ALL, scalar) met
/// while compiling over `scope` in the query of `ctx`; returns its slot
/// and type. `operand` compiles the row-side expressions (correlated
/// values, the IN operand) in the caller's context: over `scope`'s rows,
/// or over grouped rows (`grouped`, where `scope` is the grouping's input).
pub(crate) fn plan_subquery(
    ctx: &Arc<QueryContext>,
    e: &Expr,
    scope: &Scope,
    grouped: bool,
    params: &mut Vec<Option<DataType>>,
    operand: &mut OperandCompiler<'_>,
) -> Result<(u32, Ty)> {
    let mut layout: Vec<(String, String)> = scope
        .columns
        .iter()
        .map(|c| (c.table.clone(), c.name.clone()))
        .collect();
    if grouped {
        layout.push(("".into(), "grouped rows".into()));
    }
    // The same subquery over the same columns, or one that needs no
    // column of the row (its arguments are parameters only).
    if let Some(known) = ctx.memoized(e, &layout) {
        return Ok(known);
    }
    let (query, negated) = query_of(e)?;
    let child = ctx.child(query, scope);
    let plan = plan_query_in(query, params, &child);
    child.detach_outer();
    let plan = plan?;
    let args: Vec<Program> = child
        .outer_exprs()
        .iter()
        .map(|x| operand(x, params).map(|(p, _)| p))
        .collect::<Result<_>>()?;
    let (kind, ty) = kind_of(e, negated, &plan, params, operand)?;
    let uses_row = |p: &Program| p.ops.iter().any(|op| matches!(op, Op::Column(_)));
    let per_row = args.iter().any(uses_row) || kind.operand().is_some_and(uses_row);
    let hashed = match e {
        Expr::Exists { .. } if per_row => {
            hashed_exists::plan(ctx, query, &plan, scope, params, operand)
        }
        _ => None,
    };
    let mut sub = SubPlan::new(kind, plan, args, child.base, per_row);
    sub.hashed = hashed;
    Ok((ctx.add_subplan(sub, e, layout, ty), ty))
}

/// The query of a subquery expression and whether it is negated.
fn query_of(e: &Expr) -> Result<(&Query, bool)> {
    Ok(match e {
        Expr::Exists { subquery, negated } => (subquery.as_ref(), *negated),
        Expr::InSubquery {
            subquery, negated, ..
        } => (subquery.as_ref(), *negated),
        Expr::Subquery(q) => (q.as_ref(), false),
        Expr::AnyOp { right, .. } | Expr::AllOp { right, .. } => match right.as_ref() {
            Expr::Subquery(q) => (q.as_ref(), false),
            _ => return Err(unsupported("ANY / ALL over an array")),
        },
        _ => return Err(unsupported(format!("expression {e}"))),
    })
}

/// What `e` asks of its planned subquery `plan`, and the type it gives.
fn kind_of(
    e: &Expr,
    negated: bool,
    plan: &SelectPlan,
    params: &mut Vec<Option<DataType>>,
    operand: &mut OperandCompiler<'_>,
) -> Result<(SubKind, Ty)> {
    let column_type = plan.columns.first().map(|c| c.ty);
    let expr = match e {
        Expr::Exists { .. } => {
            return Ok((SubKind::Exists { negated }, Ty::Known(DataType::Bool)));
        }
        Expr::InSubquery { expr, .. }
        | Expr::AnyOp { left: expr, .. }
        | Expr::AllOp { left: expr, .. } => expr,
        _ => {
            if plan.columns.len() != 1 {
                return Err(Error::new(
                    SqlState::SYNTAX_ERROR,
                    "subquery must return only one column",
                ));
            }
            let ty = Ty::Known(column_type.unwrap_or(DataType::Text));
            return Ok((SubKind::Scalar, ty));
        }
    };
    if plan.columns.len() != 1 {
        return Err(Error::new(
            SqlState::SYNTAX_ERROR,
            if plan.columns.len() > 1 {
                "subquery has too many columns"
            } else {
                "subquery has too few columns"
            },
        ));
    }
    if matches!(expr.as_ref(), Expr::Tuple(_)) {
        return Err(unsupported("row comparison with a subquery"));
    }
    let col = column_type.unwrap_or(DataType::Text);
    let (lhs, lt) = operand(expr, params)?;
    if let Ty::Param(i) = lt {
        if let Some(slot) = params.get_mut(i as usize) {
            slot.get_or_insert(col);
        }
    }
    if let Some(t) = lt.data_type() {
        if !comparable(t, col) {
            return Err(Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!(
                    "operator does not exist: {} = {}",
                    t.sql_name(),
                    col.sql_name()
                ),
            )
            .with_hint(
                "No operator matches the given name and argument types. \
                 You might need to add explicit type casts.",
            ));
        }
    }
    let blank_padded =
        matches!(lt.data_type(), Some(DataType::Char(_))) || matches!(col, DataType::Char(_));
    let kind = match e {
        Expr::AnyOp { compare_op, .. } | Expr::AllOp { compare_op, .. } => SubKind::Quantified {
            lhs,
            op: comparison(compare_op)?,
            all: matches!(e, Expr::AllOp { .. }),
            blank_padded,
        },
        _ => SubKind::In {
            lhs,
            negated,
            blank_padded,
        },
    };
    Ok((kind, Ty::Known(DataType::Bool)))
}

/// The operator of `x op ANY / ALL (…)`.
fn comparison(op: &BinaryOperator) -> Result<Comparison> {
    Ok(match op {
        BinaryOperator::Eq => Comparison::Eq,
        BinaryOperator::NotEq => Comparison::Ne,
        BinaryOperator::Lt => Comparison::Lt,
        BinaryOperator::LtEq => Comparison::Le,
        BinaryOperator::Gt => Comparison::Gt,
        BinaryOperator::GtEq => Comparison::Ge,
        op => return Err(unsupported(format!("operator {op} with ANY / ALL"))),
    })
}
