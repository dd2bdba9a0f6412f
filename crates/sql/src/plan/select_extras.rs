//! Columns a SELECT list computes over all of its rows, not one: the
//! ranking window functions (`row_number()`, `rank()`, `dense_rank()`
//! `OVER (PARTITION BY … ORDER BY …)`) and the set-returning function
//! `information_schema._pg_expandarray(array)`, which catalog queries
//! (JDBC's `getColumns`, `getPrimaryKeys`, `getIndexInfo`) use.
//!
//! ```text
//!  rows after FROM + WHERE
//!    └─► window columns: rows sorted by (partition, order) keys, numbered
//!          └─► set-returning function: one row per array element, with
//!              the record (x, n) of the element and its 1-based position
//!                └─► projection (the calls replaced by these columns)
//! ```
//!
//! The calls in the SELECT list are replaced by references to hidden
//! columns appended to the row (table `"\0extra"`, a name no query can
//! spell); `(f(a)).n` and `(f(a)).x` then read fields of the record
//! column ([`crate::bind::array_type`]), so `(f(a)).n`, `f(a) AS keys` and an
//! outer query's `(keys).x` all work. As in PostgreSQL, window functions
//! see the rows before the set-returning function expands them, and an
//! empty or NULL array yields no rows.
//!
//! Limits (0A000): one distinct `_pg_expandarray` argument per SELECT
//! list (PostgreSQL runs several in lockstep); no window frames or other
//! window functions; neither with GROUP BY or aggregates.

use std::cmp::Ordering;

use ndpdb_formats::catalog_funcs::{array_items, quote_element};
use ndpdb_formats::expr::Program;
use ndpdb_formats::{DataType, SqlState, Value};
use sqlparser::ast::{Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, WindowType};

use crate::bind::array_type;
use crate::bind::compile::compile;
use crate::bind::scope::{Scope, ScopeColumn};
use crate::exec::join::Joined;
use crate::{Error, Result};

/// The hidden table of the extra columns.
const TABLE: &str = "\0extra";

fn unsupported(what: &str) -> Error {
    Error::new(
        SqlState::FEATURE_NOT_SUPPORTED,
        format!("{what} is not supported"),
    )
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Ranking {
    RowNumber,
    Rank,
    DenseRank,
}

#[derive(Debug)]
struct Window {
    ranking: Ranking,
    partition: Vec<Program>,
    /// (key, descending, nulls first).
    order: Vec<(Program, bool, bool)>,
}

/// The extra columns of one SELECT list.
#[derive(Debug, Default)]
pub struct Extras {
    windows: Vec<Window>,
    /// The array `_pg_expandarray` expands.
    expand: Option<Program>,
}

fn is_expandarray(e: &Expr) -> Option<&Expr> {
    let Expr::Function(f) = e else { return None };
    let name = f.name.to_string().to_lowercase();
    if !matches!(
        name.as_str(),
        "information_schema._pg_expandarray" | "_pg_expandarray"
    ) {
        return None;
    }
    match &f.args {
        FunctionArguments::List(l) => match l.args.as_slice() {
            [FunctionArg::Unnamed(FunctionArgExpr::Expr(a))] => Some(a),
            _ => None,
        },
        _ => None,
    }
}

fn column_ref(name: &str) -> Expr {
    Expr::CompoundIdentifier(vec![
        Ident::with_quote('"', TABLE),
        Ident::with_quote('"', name),
    ])
}

/// Replaces the window and set-returning calls of `items` by hidden
/// columns appended to `scope`; `None` when there are none.
pub fn plan(
    items: &mut [(Expr, String)],
    scope: &mut Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<Option<Extras>> {
    // The rewrite below visits nested queries too: a window or
    // set-returning call inside a subquery of the SELECT list would be
    // taken as this query's. Refuse that form instead.
    if items.iter().any(|(e, _)| calls_inside_subquery(e)) {
        return Err(unsupported(
            "window or set-returning functions inside a subquery of the SELECT list",
        ));
    }
    let mut windows = Vec::new();
    let mut srf_arg: Option<Expr> = None;
    let mut error = None;
    for (e, _) in items.iter_mut() {
        let _ = sqlparser::ast::visit_expressions_mut(e, |x| {
            if let Some(arg) = is_expandarray(x) {
                match &srf_arg {
                    Some(a) if a != arg => {
                        error = Some(unsupported(
                            "more than one set-returning function argument in a SELECT list",
                        ));
                        return std::ops::ControlFlow::Break(());
                    }
                    _ => srf_arg = Some(arg.clone()),
                }
                *x = column_ref("srf");
                return std::ops::ControlFlow::Continue(());
            }
            if let Expr::Function(f) = x {
                if let Some(over) = &f.over {
                    let name = f.name.to_string().to_lowercase();
                    let ranking = match name.trim_start_matches("pg_catalog.") {
                        "row_number" => Ranking::RowNumber,
                        "rank" => Ranking::Rank,
                        "dense_rank" => Ranking::DenseRank,
                        other => {
                            error = Some(unsupported(&format!("window function {other}")));
                            return std::ops::ControlFlow::Break(());
                        }
                    };
                    let spec = match over {
                        WindowType::WindowSpec(s) if s.window_name.is_none() => s.clone(),
                        _ => {
                            error = Some(unsupported("a named window"));
                            return std::ops::ControlFlow::Break(());
                        }
                    };
                    let k = windows.len();
                    windows.push((ranking, spec));
                    *x = column_ref(&format!("w{k}"));
                }
            }
            std::ops::ControlFlow::Continue(())
        });
        if let Some(e) = error.take() {
            return Err(e);
        }
    }
    if windows.is_empty() && srf_arg.is_none() {
        return Ok(None);
    }
    let mut extras = Extras::default();
    for (ranking, spec) in windows {
        let partition = spec
            .partition_by
            .iter()
            .map(|p| Ok(compile(p, scope, params)?.0))
            .collect::<Result<_>>()?;
        let mut order = Vec::new();
        for o in &spec.order_by {
            let desc = matches!(o.options.sort, Some(sqlparser::ast::OrderBySort::Desc));
            let nulls_first = o.options.nulls_first.unwrap_or(desc);
            order.push((compile(&o.expr, scope, params)?.0, desc, nulls_first));
        }
        extras.windows.push(Window {
            ranking,
            partition,
            order,
        });
    }
    let window_columns: Vec<ScopeColumn> = (0..extras.windows.len())
        .map(|k| ScopeColumn {
            table: TABLE.into(),
            name: format!("w{k}"),
            ty: DataType::BigInt,
        })
        .collect();
    if let Some(arg) = srf_arg {
        let (p, ty) = compile(&arg, scope, params)?;
        let element = ty
            .data_type()
            .and_then(array_type::element_type)
            .ok_or_else(|| {
                Error::new(
                    SqlState::UNDEFINED_FUNCTION,
                    format!(
                        "function information_schema._pg_expandarray({}) does not exist",
                        ty.data_type()
                            .map_or("unknown".to_string(), |t| t.sql_name())
                    ),
                )
            })?;
        extras.expand = Some(p);
        scope.columns.extend(window_columns);
        scope.columns.push(ScopeColumn {
            table: TABLE.into(),
            name: "srf".into(),
            ty: array_type::record_of(element),
        });
    } else {
        scope.columns.extend(window_columns);
    }
    Ok(Some(extras))
}

/// Whether `x` is a window call or `_pg_expandarray`.
fn is_window_or_srf(x: &Expr) -> bool {
    matches!(x, Expr::Function(f) if f.over.is_some()) || is_expandarray(x).is_some()
}

/// Whether some expression `visit` meets satisfies `found`.
fn any_expr<V: sqlparser::ast::Visit>(v: &V, found: impl Fn(&Expr) -> bool) -> bool {
    sqlparser::ast::visit_expressions(v, |x| {
        if found(x) {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    })
    .is_break()
}

/// Whether `e` holds a subquery whose text has a window or set-returning
/// call.
fn calls_inside_subquery(e: &Expr) -> bool {
    any_expr(e, |x| match x {
        Expr::Subquery(q) => any_expr(&**q, is_window_or_srf),
        Expr::Exists { subquery, .. } | Expr::InSubquery { subquery, .. } => {
            any_expr(&**subquery, is_window_or_srf)
        }
        _ => false,
    })
}

/// Whether the SELECT list of `items` has a window or set-returning call.
pub fn mentioned(items: &[(Expr, String)]) -> bool {
    items.iter().any(|(e, _)| any_expr(e, is_window_or_srf))
}

fn compare(a: &Value, b: &Value, desc: bool, nulls_first: bool) -> Ordering {
    match (a.is_null(), b.is_null()) {
        (true, true) => Ordering::Equal,
        (true, false) => {
            if nulls_first {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        (false, true) => {
            if nulls_first {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        _ => {
            let c = a.sql_cmp(b).unwrap_or(Ordering::Equal);
            if desc {
                c.reverse()
            } else {
                c
            }
        }
    }
}

/// `rows` with the extra columns of `extras` appended (and expanded).
pub fn apply(extras: &Option<Extras>, rows: Vec<Joined>, params: &[Value]) -> Result<Vec<Joined>> {
    let Some(extras) = extras else {
        return Ok(rows);
    };
    let mut rows = rows;
    for w in &extras.windows {
        let mut keyed = Vec::with_capacity(rows.len());
        for (k, r) in rows.iter().enumerate() {
            let part = w
                .partition
                .iter()
                .map(|p| p.eval(&r.values, params))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let ord = w
                .order
                .iter()
                .map(|(p, _, _)| p.eval(&r.values, params))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            keyed.push((part, ord, k));
        }
        let cmp_part = |a: &[Value], b: &[Value]| {
            a.iter()
                .zip(b)
                .map(|(x, y)| compare(x, y, false, false))
                .find(|o| *o != Ordering::Equal)
                .unwrap_or(Ordering::Equal)
        };
        let cmp_order = |a: &[Value], b: &[Value]| {
            a.iter()
                .zip(b)
                .zip(&w.order)
                .map(|((x, y), (_, desc, nf))| compare(x, y, *desc, *nf))
                .find(|o| *o != Ordering::Equal)
                .unwrap_or(Ordering::Equal)
        };
        keyed.sort_by(|a, b| {
            cmp_part(&a.0, &b.0)
                .then_with(|| cmp_order(&a.1, &b.1))
                .then(a.2.cmp(&b.2))
        });
        let mut numbers = vec![0i64; rows.len()];
        let (mut row_number, mut rank, mut dense) = (0i64, 0i64, 0i64);
        for (j, (part, ord, k)) in keyed.iter().enumerate() {
            let prev = j.checked_sub(1).map(|p| &keyed[p]);
            let new_partition = prev.is_none_or(|p| cmp_part(&p.0, part) != Ordering::Equal);
            if new_partition {
                row_number = 0;
                rank = 0;
                dense = 0;
            }
            row_number += 1;
            let peer =
                !new_partition && prev.is_some_and(|p| cmp_order(&p.1, ord) == Ordering::Equal);
            if !peer {
                rank = row_number;
                dense += 1;
            }
            numbers[*k] = match w.ranking {
                Ranking::RowNumber => row_number,
                Ranking::Rank => rank,
                Ranking::DenseRank => dense,
            };
        }
        for (r, n) in rows.iter_mut().zip(numbers) {
            r.values.push(Value::BigInt(n));
        }
    }
    let Some(array) = &extras.expand else {
        return Ok(rows);
    };
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let Value::Text(a) = array.eval(&r.values, params)? else {
            continue;
        };
        let (_, items) = array_items(&a);
        for (k, item) in items.iter().enumerate() {
            let x = item.as_deref().map_or(String::new(), quote_element);
            let mut values = r.values.clone();
            values.push(Value::Text(format!("({x},{})", k + 1)));
            out.push(Joined {
                values,
                ids: r.ids.clone(),
            });
        }
    }
    Ok(out)
}
