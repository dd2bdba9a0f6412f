//! Planning set operations: `UNION`, `INTERSECT` and `EXCEPT`, each with
//! or without `ALL`, nested and parenthesized, with the query's ORDER BY,
//! LIMIT and OFFSET over the result. Running one is
//! `exec/set_operation.rs`'s.
//!
//! ```text
//!  a UNION b ORDER BY 1 LIMIT 5
//!    ─► each side: a child query of this level (plan_query_in), so a side
//!       may name the enclosing query's columns (Outer slots passed down)
//!    ─► column types: PostgreSQL's rule — numbers widen, text types meet
//!       as text, an untyped literal ('x', NULL) takes the other side's type
//!    ─► SelectPlan over one source, Input::SetOp, named by the left side
//!    ─► ORDER BY output names or positions only; LIMIT / OFFSET
//! ```
//!
//! `INTERSECT` binds tighter than `UNION` and `EXCEPT` (the parser builds
//! the tree); `a UNION b UNION c` is `(a UNION b) UNION c`, whose left
//! side is itself planned through here.

use std::sync::Arc;

use ndpdb_formats::expr::{Op, Program};
use ndpdb_formats::{DataType, SqlState};
use sqlparser::ast::{
    Expr, OrderByKind, Query, SelectItem, SetExpr, SetOperator, SetQuantifier, Value as AstValue,
    With,
};

use super::plan::{limit_offset, plan_query_in};
use super::{unsupported, Input, OrderItem, SelectPlan, SortKey, Source};
use crate::bind::compile::{compile, numeric_result};
use crate::bind::scope::Scope;
use crate::output::ResultColumn;
use crate::plan::access::Access;
use crate::plan::subquery::{Bindings, QueryContext};
use crate::{Error, Result};

/// Which set operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetOp {
    Union,
    Intersect,
    Except,
}

impl SetOp {
    pub fn sql(self) -> &'static str {
        match self {
            SetOp::Union => "UNION",
            SetOp::Intersect => "INTERSECT",
            SetOp::Except => "EXCEPT",
        }
    }
}

/// A planned set operation: its two sides and how their rows combine.
pub struct SetOperation {
    pub op: SetOp,
    /// `ALL`: duplicates count (else each distinct row once).
    pub all: bool,
    pub left: SetSide,
    pub right: SetSide,
}

/// One side of a set operation: a query of its own.
pub struct SetSide {
    pub plan: SelectPlan,
    /// The values of the side's Outer slots over the set operation's
    /// parameters (columns of an enclosing query the side names).
    pub args: Vec<Program>,
    /// The statement parameters the side names (`$1 … $base`).
    pub base: u32,
    /// Per column, the result type its values are cast to (`None`: the
    /// side gives that type already).
    pub casts: Vec<Option<DataType>>,
}

impl SetOperation {
    /// `UNION ALL`, `INTERSECT`, … as EXPLAIN names it.
    pub fn explain(&self) -> String {
        let op = match self.op {
            SetOp::Union => "Append",
            SetOp::Intersect => "Intersect",
            SetOp::Except => "Except",
        };
        match (self.op, self.all) {
            (SetOp::Union, true) => op.to_string(),
            (SetOp::Union, false) => "Union (distinct rows)".to_string(),
            (_, true) => format!("{op} All"),
            (_, false) => op.to_string(),
        }
    }
}

/// Plans `q`, whose body is a set operation: the set operation as the one source of a plan that applies `q`'s
/// ORDER BY, LIMIT and OFFSET. `q`'s WITH list is in `ctx` already.
pub(super) fn plan_set_query(
    q: &Query,
    params: &mut Vec<Option<DataType>>,
    ctx: &Arc<QueryContext>,
) -> Result<SelectPlan> {
    if !q.locks.is_empty() {
        return Err(Error::new(
            SqlState::FEATURE_NOT_SUPPORTED,
            "FOR UPDATE is not allowed with UNION/INTERSECT/EXCEPT",
        ));
    }
    let (set, columns) = match q.body.as_ref() {
        SetExpr::SetOperation {
            op,
            set_quantifier,
            left,
            right,
        } => plan_set_operation(*op, *set_quantifier, left, right, params, ctx)?,
        _ => return Err(Error::new(SqlState::INTERNAL_ERROR, "not a set operation")),
    };
    let alias = "*SELECT*".to_string();
    let mut scope = Scope::within(ctx);
    scope.add_table(&alias, columns.iter().map(|c| (c.name.clone(), c.ty)));
    ctx.set_local(&scope);
    let projection = (0..columns.len() as u32)
        .map(|c| Program {
            consts: Vec::new(),
            ops: vec![Op::Column(c)],
        })
        .collect();
    let source = Source {
        input: Input::SetOp(Box::new(set)),
        alias,
        access: Access::Scan,
        key_prefix: Vec::new(),
        filter: None,
        conjuncts: Vec::new(),
    };
    let subqueries = Bindings::new(ctx.base, Vec::new());
    let mut plan = SelectPlan::single_source(source, scope, projection, columns, subqueries);
    if let Some(ob) = &q.order_by {
        let exprs = match &ob.kind {
            OrderByKind::Expressions(e) => e,
            OrderByKind::All(_) => return Err(unsupported("ORDER BY ALL")),
        };
        for o in exprs {
            let desc = matches!(o.options.sort, Some(sqlparser::ast::OrderBySort::Desc));
            let nulls_first = o.options.nulls_first.unwrap_or(desc);
            let column = output_column(&o.expr, &plan, params)?;
            plan.order.push(OrderItem {
                key: SortKey::Output(column),
                desc,
                nulls_first,
            });
        }
    }
    limit_offset(q, &mut plan, params, ctx)?;
    plan.subqueries = ctx.finish();
    Ok(plan)
}

/// The output column an ORDER BY item of a set operation names: a
/// position or a result column's name (PostgreSQL allows nothing else).
fn output_column(e: &Expr, plan: &SelectPlan, params: &mut Vec<Option<DataType>>) -> Result<usize> {
    match e {
        Expr::Value(v) => {
            if let AstValue::Number(n, _) = &v.value {
                let i: usize = n.parse().unwrap_or(0);
                if i == 0 || i > plan.columns.len() {
                    return Err(Error::new(
                        SqlState::INVALID_COLUMN_REFERENCE,
                        format!("ORDER BY position {n} is not in select list"),
                    ));
                }
                return Ok(i - 1);
            }
        }
        Expr::Identifier(_) => {
            let (p, _) = compile(e, &plan.input_scope, params)?;
            if let Some(c) = p.single_column() {
                return Ok(c);
            }
        }
        _ => {}
    }
    Err(Error::new(
        SqlState::FEATURE_NOT_SUPPORTED,
        "invalid UNION/INTERSECT/EXCEPT ORDER BY clause",
    )
    .with_detail("Only result column names can be used, not expressions or functions.")
    .with_hint(
        "Add the expression/function to every SELECT, or move the UNION into a FROM clause.",
    ))
}

/// Plans `left op right`: both sides, their common column types, the
/// result columns (named by the left side).
fn plan_set_operation(
    op: SetOperator,
    quantifier: SetQuantifier,
    left: &SetExpr,
    right: &SetExpr,
    params: &mut Vec<Option<DataType>>,
    ctx: &Arc<QueryContext>,
) -> Result<(SetOperation, Vec<ResultColumn>)> {
    let op = match op {
        SetOperator::Union => SetOp::Union,
        SetOperator::Intersect => SetOp::Intersect,
        SetOperator::Except | SetOperator::Minus => SetOp::Except,
    };
    let all = match quantifier {
        SetQuantifier::All => true,
        SetQuantifier::Distinct | SetQuantifier::None => false,
        _ => return Err(unsupported(format!("{} BY NAME", op.sql()))),
    };
    let (mut l, l_columns, l_untyped) = plan_side(left, params, ctx)?;
    let (mut r, r_columns, r_untyped) = plan_side(right, params, ctx)?;
    if l_columns.len() != r_columns.len() {
        return Err(Error::new(
            SqlState::SYNTAX_ERROR,
            format!(
                "each {} query must have the same number of columns",
                op.sql()
            ),
        ));
    }
    let mut columns = Vec::with_capacity(l_columns.len());
    for (i, (a, b)) in l_columns.iter().zip(&r_columns).enumerate() {
        let untyped = |u: &[bool]| u.get(i).copied().unwrap_or(false);
        let (l_untyped, r_untyped) = (untyped(&l_untyped), untyped(&r_untyped));
        let ty = common_type(op, (a.ty, l_untyped), (b.ty, r_untyped))?;
        l.casts.push(cast_to(a.ty, l_untyped, ty));
        r.casts.push(cast_to(b.ty, r_untyped, ty));
        columns.push(ResultColumn {
            name: a.name.clone(),
            ty,
        });
    }
    Ok((
        SetOperation {
            op,
            all,
            left: l,
            right: r,
        },
        columns,
    ))
}

/// Plans one side as a child query of `ctx`'s level: its plan, its
/// columns and which of them are untyped literals.
fn plan_side(
    side: &SetExpr,
    params: &mut Vec<Option<DataType>>,
    ctx: &Arc<QueryContext>,
) -> Result<(SetSide, Vec<ResultColumn>, Vec<bool>)> {
    let query = match side {
        SetExpr::Query(q) => q.as_ref().clone(),
        body => bare_query(None, body.clone()),
    };
    let scope = Scope::within(ctx);
    let child = ctx.child(&query, &scope);
    let plan = plan_query_in(&query, params, &child);
    child.detach_outer();
    let plan = plan?;
    let args = child
        .outer_exprs()
        .iter()
        .map(|x| compile(x, &scope, params).map(|(p, _)| p))
        .collect::<Result<_>>()?;
    let columns = plan.columns.clone();
    let untyped = untyped_columns(side);
    let side = SetSide {
        plan,
        args,
        base: child.base,
        casts: Vec::new(),
    };
    Ok((side, columns, untyped))
}

/// Which select-list items of a plain SELECT side are untyped literals
/// (`NULL`, `'text'`): PostgreSQL gives them the other side's type.
fn untyped_columns(side: &SetExpr) -> Vec<bool> {
    let SetExpr::Select(s) = side else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in &s.projection {
        let e = match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
            // A `*` stands for columns of known types.
            _ => return out,
        };
        out.push(matches!(
            e,
            Expr::Value(v) if matches!(v.value, AstValue::Null | AstValue::SingleQuotedString(_))
        ));
    }
    out
}

/// The cast a side's values need to become `ty`. Strings meeting as
/// VARCHAR or CHAR keep their values as they are: PostgreSQL's result
/// has no length limit then (no value is cut or padded to one).
fn cast_to(from: DataType, untyped: bool, ty: DataType) -> Option<DataType> {
    let string = untyped || from.is_textual();
    match ty {
        _ if from == ty && !untyped => None,
        DataType::Varchar(_) | DataType::Char(_) if string => None,
        _ => Some(ty),
    }
}

/// The type two sides' column meets in (PostgreSQL's rule for UNION,
/// CASE and VALUES): an untyped literal takes the other side's type;
/// numbers widen; text types meet as text (two VARCHARs as the longer);
/// DATE meets TIMESTAMP as TIMESTAMP.
fn common_type(op: SetOp, a: (DataType, bool), b: (DataType, bool)) -> Result<DataType> {
    use DataType::*;
    Ok(match (a, b) {
        ((_, true), (_, true)) => Text,
        // An untyped literal takes the type without its modifier.
        ((_, true), (t, false)) | ((t, false), (_, true)) => match t {
            Numeric { .. } => Numeric {
                precision: 0,
                scale: 0,
            },
            t => t,
        },
        ((x, _), (y, _)) if x == y => x,
        ((Varchar(m), _), (Varchar(n), _)) => Varchar(m.max(n)),
        ((Char(m), _), (Char(n), _)) => Char(m.max(n)),
        ((Date, _), (Timestamp, _)) | ((Timestamp, _), (Date, _)) => Timestamp,
        ((x, _), (y, _)) => match numeric_result(x, y) {
            Some(t) => t,
            None if x.is_textual() && y.is_textual() => Text,
            None => {
                return Err(Error::new(
                    SqlState::DATATYPE_MISMATCH,
                    format!(
                        "{} types {} and {} cannot be matched",
                        op.sql(),
                        x.sql_name(),
                        y.sql_name()
                    ),
                ))
            }
        },
    })
}

/// `body` as a query of its own: `with` and nothing around it (no ORDER
/// BY, LIMIT or locking clause).
pub(crate) fn bare_query(with: Option<With>, body: SetExpr) -> Query {
    Query {
        with,
        body: Box::new(body),
        order_by: None,
        limit_clause: None,
        fetch: None,
        locks: Vec::new(),
        for_clause: None,
        settings: None,
        format_clause: None,
        pipe_operators: Vec::new(),
    }
}
