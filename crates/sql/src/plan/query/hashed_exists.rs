//! Planning a correlated `[NOT] EXISTS` as a hash semi (anti) join: the
//! decision whether it qualifies and the three plans it needs. What runs
//! is `plan/subquery/hashed.rs` ([`HashedExists`]); its essay gives the
//! idea and the conditions.
//!
//! ```text
//!   WHERE terms of the subquery ─► correlation keys  inner = outer
//!                                ─► local terms      inner only ─► build's WHERE
//!                                ─► residual         both sides ─► checked per match
//!   build:    SELECT keys' inner sides, residual columns FROM … WHERE local
//!   probe:    the keys' outer sides, over the caller's row
//!   residual: over the build row, the caller's values as Outer slots
//! ```

use std::sync::Arc;

use ndpdb_formats::expr::Program;
use ndpdb_formats::DataType;
use sqlparser::ast::{
    BinaryOperator, Expr, Query, Select, SelectItem, SetExpr, Visit, Visitor as AstVisitor,
};

use super::plan::plan_query_in;
use crate::bind::compile::compile_predicate;
use crate::bind::scope::{ident_name, OperandCompiler, Scope, ScopeColumn};
use crate::plan::conjuncts::{and_all, conjuncts};
use crate::plan::join_order::base_rows;
use crate::plan::query::SelectPlan;
use crate::plan::subquery::{max_placeholder, name_expr, HashedExists, QueryContext, Residual};
use crate::Result;

/// Whether two key types hash alike ([`Value::key_bytes`]): numbers are
/// normalized decimals, VARCHAR and TEXT are text; CHAR keeps its blanks.
fn hash_alike(a: DataType, b: DataType) -> bool {
    let number = |t: DataType| {
        matches!(
            t,
            DataType::Int | DataType::BigInt | DataType::Numeric { .. }
        )
    };
    let text = |t: DataType| matches!(t, DataType::Text | DataType::Varchar(_));
    (number(a) && number(b))
        || (text(a) && text(b))
        || (a == b && !matches!(a, DataType::Double | DataType::Char(_)))
}

/// The column references of an expression, and whether it holds a subquery.
#[derive(Default)]
struct Names {
    refs: Vec<(Option<String>, String)>,
    subquery: bool,
}

impl AstVisitor for Names {
    type Break = ();
    fn pre_visit_expr(&mut self, e: &Expr) -> std::ops::ControlFlow<()> {
        match e {
            Expr::Identifier(id) => self.refs.push((None, ident_name(id))),
            Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                let n = parts.len();
                self.refs
                    .push((Some(ident_name(&parts[n - 2])), ident_name(&parts[n - 1])));
            }
            _ => {}
        }
        std::ops::ControlFlow::Continue(())
    }
    /// Every subquery expression (EXISTS, IN, scalar) holds a query.
    fn pre_visit_query(&mut self, _: &Query) -> std::ops::ControlFlow<()> {
        self.subquery = true;
        std::ops::ControlFlow::Continue(())
    }
}

/// Which side of the correlation an expression's columns are on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// No column at all (constants, parameters).
    Neither,
    Inner,
    Outer,
    Both,
}

/// The side of `e` over the subquery's FROM columns `inner`; `None` for
/// an expression that cannot be moved (a subquery, an ambiguous name).
fn side(e: &Expr, inner: &Scope, cols: &mut Vec<usize>) -> Option<Side> {
    let mut names = Names::default();
    let _ = e.visit(&mut names);
    if names.subquery {
        return None;
    }
    let (mut i, mut o) = (false, false);
    for (table, name) in &names.refs {
        match inner.resolve(table.as_deref(), name) {
            Ok(c) => {
                i = true;
                if !cols.contains(&c) {
                    cols.push(c);
                }
            }
            Err(err) if err.code == ndpdb_formats::SqlState::AMBIGUOUS_COLUMN => return None,
            Err(_) => o = true,
        }
    }
    Some(match (i, o) {
        (false, false) => Side::Neither,
        (true, false) => Side::Inner,
        (false, true) => Side::Outer,
        (true, true) => Side::Both,
    })
}

/// A subquery's WHERE terms, sorted (see the module docs).
struct Terms {
    /// Correlation keys: (inner side, caller side).
    keys: Vec<(Expr, Expr)>,
    local: Vec<Expr>,
    residual: Vec<Expr>,
    /// The subquery's FROM columns the residual reads.
    residual_columns: Vec<ScopeColumn>,
}

/// Sorts `select`'s WHERE terms over its FROM columns `inner`; `None`
/// when a term cannot be moved or no correlation key exists.
fn sort_terms(select: &Select, inner: &Scope) -> Option<Terms> {
    let mut terms = Vec::new();
    if let Some(w) = &select.selection {
        conjuncts(w, &mut terms);
    }
    let mut keys: Vec<(Expr, Expr)> = Vec::new();
    let mut local: Vec<Expr> = Vec::new();
    let mut residual: Vec<Expr> = Vec::new();
    for t in terms {
        match side(&t, inner, &mut Vec::new())? {
            Side::Neither | Side::Inner => {
                local.push(t);
                continue;
            }
            // A term of the caller's row alone: it decides per row.
            Side::Outer => {
                residual.push(t);
                continue;
            }
            Side::Both => {}
        }
        if let Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } = &t
        {
            let l = side(left, inner, &mut Vec::new())?;
            let r = side(right, inner, &mut Vec::new())?;
            match (l, r) {
                (Side::Inner, Side::Outer) => {
                    keys.push((left.as_ref().clone(), right.as_ref().clone()));
                    continue;
                }
                (Side::Outer, Side::Inner) => {
                    keys.push((right.as_ref().clone(), left.as_ref().clone()));
                    continue;
                }
                _ => {}
            }
        }
        residual.push(t);
    }
    if keys.is_empty() {
        return None;
    }
    let mut cols: Vec<usize> = Vec::new();
    for t in &residual {
        side(t, inner, &mut cols)?;
    }
    let residual_columns = cols.iter().map(|&c| inner.columns[c].clone()).collect();
    Some(Terms {
        keys,
        local,
        residual,
        residual_columns,
    })
}

/// The build query: the keys' inner sides, then the residual's columns,
/// from the subquery's FROM under its local terms alone.
fn build_query(query: &Query, select: &Select, terms: &Terms) -> Query {
    let mut build_select = select.clone();
    build_select.projection = terms
        .keys
        .iter()
        .map(|(i, _)| SelectItem::UnnamedExpr(i.clone()))
        .chain(
            terms
                .residual_columns
                .iter()
                .map(|c| SelectItem::UnnamedExpr(name_expr(Some(&c.table), &c.name))),
        )
        .collect();
    build_select.selection = and_all(terms.local.clone());
    Query {
        body: Box::new(SetExpr::Select(Box::new(build_select))),
        order_by: None,
        limit_clause: None,
        ..query.clone()
    }
}

/// The residual over the build row (keys first, unnamed), the caller's
/// values as Outer slots of a context of its own; `None` when it names
/// anything but the caller's columns (a subquery, a sequence call).
fn residual(
    caller: &Arc<QueryContext>,
    base: u32,
    terms: &Terms,
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
    operand: &mut OperandCompiler<'_>,
) -> Option<Residual> {
    let ctx = QueryContext::new(caller.db(), base, Some(scope.clone()), caller.ctes());
    let columns = terms
        .keys
        .iter()
        .map(|_| ScopeColumn {
            table: String::new(),
            name: String::new(),
            ty: DataType::Bool,
        })
        .chain(terms.residual_columns.iter().cloned())
        .collect();
    let row_scope = Scope {
        columns,
        ctx: Some(ctx.clone()),
        merged: Vec::new(),
    };
    let all = and_all(terms.residual.clone())?;
    let program = compile_predicate(&all, &row_scope, params).ok()?;
    if !ctx.finish().only_outer() {
        return None;
    }
    let args = ctx
        .outer_exprs()
        .iter()
        .map(|x| operand(x, params).map(|(p, _)| p))
        .collect::<Result<Vec<Program>>>()
        .ok()?;
    Some(Residual { program, args })
}

/// The hashed form of `query`, an EXISTS subquery of the query of
/// `caller` compiled over `scope`, whose per-row plan is `per_row`;
/// `None` when it does not qualify (see the module docs).
pub(crate) fn plan(
    caller: &Arc<QueryContext>,
    query: &Query,
    per_row: &SelectPlan,
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
    operand: &mut OperandCompiler<'_>,
) -> Option<HashedExists> {
    if !per_row.returns_rows_as_read() || query.with.is_some() {
        return None;
    }
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    let terms = sort_terms(select, &per_row.input_scope)?;
    let base = max_placeholder(query);
    let build_ctx = QueryContext::new(caller.db(), base, None, caller.ctes());
    let build = plan_query_in(&build_query(query, select, &terms), params, &build_ctx).ok()?;
    if build.subqueries.has_per_row() {
        return None;
    }
    // The probe: the keys' caller sides, hashing like the inner sides.
    let mut probe = Vec::with_capacity(terms.keys.len());
    for (k, (_, outer)) in terms.keys.iter().enumerate() {
        let (p, ty) = operand(outer, params).ok()?;
        let inner_ty = build.columns.get(k)?.ty;
        if !hash_alike(ty.data_type()?, inner_ty) {
            return None;
        }
        probe.push(p);
    }
    let residual = if terms.residual.is_empty() {
        None
    } else {
        Some(residual(caller, base, &terms, scope, params, operand)?)
    };
    let inner_rows = build
        .sources
        .iter()
        .map(|s| base_rows(&s.input) as usize)
        .max()
        .unwrap_or(0);
    Some(HashedExists::new(
        build,
        probe,
        residual,
        terms.residual_columns.len(),
        base,
        inner_rows,
    ))
}
