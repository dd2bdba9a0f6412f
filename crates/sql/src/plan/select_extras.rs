//! Columns a SELECT list computes over all of its rows, not one: the
//! ranking window functions (`row_number()`, `rank()`, `dense_rank()`
//! `OVER (PARTITION BY … ORDER BY …)`) and the set-returning functions
//! `unnest(array)`, `generate_subscripts(array, dim [, reverse])` and
//! `information_schema._pg_expandarray(array)`, which catalog queries
//! (JDBC's `getColumns`, `getPrimaryKeys`, `getIndexInfo`) use.
//!
//! ```text
//!  rows after FROM + WHERE
//!    └─► window columns: rows sorted by (partition, order) keys, numbered
//!          └─► set-returning functions, in lockstep: as many rows as the
//!              longest gives, the shorter ones padded with NULLs
//!              (_pg_expandarray: the record (x, n) of the element and
//!              its 1-based position)
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
//! Limits (0A000): no window frames or other window functions; neither
//! with GROUP BY or aggregates.

use std::cmp::Ordering;

use ndpdb_formats::catalog_funcs::{array_items, quote_element};
use ndpdb_formats::expr::Program;
use ndpdb_formats::{DataType, SqlState, Value};
use sqlparser::ast::{Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, WindowType};

use crate::bind::array_type;
use crate::bind::compile::compile;
use crate::bind::scope::{Scope, ScopeColumn};
use crate::exec::join::Joined;
use crate::exec::row_source::json_rows::{self, JsonSource};
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

/// A set-returning call of the SELECT list.
#[derive(Debug)]
enum Srf {
    /// `_pg_expandarray(array)` over a catalog array's text form.
    ExpandArray(Program),
    /// `unnest(array)`.
    Unnest(Program),
    /// `generate_subscripts(array, dim [, reverse])`.
    Subscripts(Program, Program, Option<Program>),
    /// `jsonb_array_elements(j)`, `json_object_keys(j)` and the other
    /// json functions of one column.
    Json(JsonSource),
}

/// The extra columns of one SELECT list.
#[derive(Debug, Default)]
pub struct Extras {
    windows: Vec<Window>,
    /// The set-returning calls, run in lockstep.
    srfs: Vec<Srf>,
}

/// The arguments of a call of `unnest` or `generate_subscripts`.
fn array_srf(e: &Expr) -> Option<(&'static str, Vec<&Expr>)> {
    let Expr::Function(f) = e else { return None };
    if f.over.is_some() {
        return None;
    }
    let name = f.name.to_string().to_lowercase();
    let name = match name.trim_start_matches("pg_catalog.") {
        "unnest" => "unnest",
        "generate_subscripts" => "generate_subscripts",
        "json_array_elements" => "json_array_elements",
        "jsonb_array_elements" => "jsonb_array_elements",
        "json_array_elements_text" => "json_array_elements_text",
        "jsonb_array_elements_text" => "jsonb_array_elements_text",
        "json_object_keys" => "json_object_keys",
        "jsonb_object_keys" => "jsonb_object_keys",
        "json_each" | "jsonb_each" | "json_each_text" | "jsonb_each_text" => "json_each",
        _ => return None,
    };
    match &f.args {
        FunctionArguments::List(l) => l
            .args
            .iter()
            .map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) => Some(x),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
            .map(|args| (name, args)),
        _ => None,
    }
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
    // Each distinct call, once: `unnest(a) AS x, unnest(a) + 1` is one.
    let mut calls: Vec<Expr> = Vec::new();
    let mut error = None;
    for (e, _) in items.iter_mut() {
        let _ = sqlparser::ast::visit_expressions_mut(e, |x| {
            if is_expandarray(x).is_some() || array_srf(x).is_some() {
                let k = match calls.iter().position(|c| c == x) {
                    Some(k) => k,
                    None => {
                        calls.push(x.clone());
                        calls.len() - 1
                    }
                };
                *x = column_ref(&format!("srf{k}"));
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
    if windows.is_empty() && calls.is_empty() {
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
    scope.columns.extend(window_columns);
    for (k, call) in calls.iter().enumerate() {
        let (srf, ty) = plan_srf(call, scope, params)?;
        extras.srfs.push(srf);
        scope.columns.push(ScopeColumn {
            table: TABLE.into(),
            name: format!("srf{k}"),
            ty,
        });
    }
    Ok(Some(extras))
}

/// One set-returning call: what it runs and the type of its column.
fn plan_srf(
    call: &Expr,
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<(Srf, DataType)> {
    let no_function = |name: &str, tys: &[crate::bind::compile::Ty]| {
        let names: Vec<String> = tys
            .iter()
            .map(|t| {
                t.data_type()
                    .map_or("unknown".to_string(), |t| t.sql_name())
            })
            .collect();
        Error::new(
            SqlState::UNDEFINED_FUNCTION,
            format!("function {name}({}) does not exist", names.join(", ")),
        )
        .with_hint("No function matches the given name and argument types. You might need to add explicit type casts.")
    };
    if let Some(arg) = is_expandarray(call) {
        let (p, ty) = compile(arg, scope, params)?;
        let element = ty
            .data_type()
            .and_then(array_type::element_type)
            .ok_or_else(|| no_function("information_schema._pg_expandarray", &[ty]))?;
        return Ok((Srf::ExpandArray(p), array_type::record_of(element)));
    }
    let Some((name, args)) = array_srf(call) else {
        return Err(unsupported("this set-returning call"));
    };
    if name == "json_each" {
        return Err(unsupported(
            "json_each in a SELECT list (a record); call it in FROM",
        ));
    }
    if name.starts_with("json") {
        let args: Vec<Expr> = args.into_iter().cloned().collect();
        let Some((source, columns)) = json_rows::plan(name, &args, scope, params)? else {
            return Err(unsupported("this set-returning call"));
        };
        return Ok((Srf::Json(source), columns[0].1));
    }
    let mut compiled = Vec::new();
    let mut tys = Vec::new();
    let mut elem = None;
    for (k, a) in args.iter().enumerate() {
        if k == 0 {
            let (p, e) = crate::bind::compile::compile_array(a, scope, params)?;
            match e {
                Ok(e) => {
                    elem = Some(e.scalar());
                    tys.push(crate::bind::compile::Ty::Known(DataType::Array(e)));
                }
                Err(t) => tys.push(t),
            }
            compiled.push(p);
        } else {
            let (p, t) = compile(a, scope, params)?;
            tys.push(t);
            compiled.push(p);
        }
    }
    let Some(elem) = elem else {
        return Err(no_function(name, &tys));
    };
    let mut programs = compiled.into_iter();
    match (name, tys.len()) {
        ("unnest", 1) => Ok((Srf::Unnest(programs.next().expect("one")), elem)),
        ("generate_subscripts", 2 | 3) => {
            let a = programs.next().expect("array");
            let d = programs.next().expect("dimension");
            Ok((Srf::Subscripts(a, d, programs.next()), DataType::Int))
        }
        _ => Err(no_function(name, &tys)),
    }
}

impl Srf {
    /// The values the call gives for one input row.
    fn values(&self, row: &[Value], params: &[Value]) -> Result<Vec<Value>> {
        Ok(match self {
            Srf::ExpandArray(p) => {
                let Value::Text(a) = p.eval(row, params)? else {
                    return Ok(Vec::new());
                };
                let (_, items) = array_items(&a);
                items
                    .iter()
                    .enumerate()
                    .map(|(k, item)| {
                        let x = item.as_deref().map_or(String::new(), quote_element);
                        Value::Text(format!("({x},{})", k + 1))
                    })
                    .collect()
            }
            Srf::Json(source) => source
                .rows_of(row, params)?
                .into_iter()
                .map(|mut r| r.pop().unwrap_or(Value::Null))
                .collect(),
            Srf::Unnest(p) => match p.eval(row, params)? {
                Value::Array(a) => a.items,
                _ => Vec::new(),
            },
            Srf::Subscripts(a, d, reverse) => {
                let (Value::Array(a), Some(d)) =
                    (a.eval(row, params)?, d.eval(row, params)?.as_i64())
                else {
                    return Ok(Vec::new());
                };
                let reverse = match reverse {
                    Some(r) => r.eval(row, params)? == Value::Bool(true),
                    None => false,
                };
                a.subscripts(d, reverse)
                    .into_iter()
                    .map(Value::Int)
                    .collect()
            }
        })
    }
}

/// Whether `x` is a window call or a set-returning call.
fn is_window_or_srf(x: &Expr) -> bool {
    matches!(x, Expr::Function(f) if f.over.is_some())
        || is_expandarray(x).is_some()
        || array_srf(x).is_some()
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
    if extras.srfs.is_empty() {
        return Ok(rows);
    }
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let sets = extras
            .srfs
            .iter()
            .map(|s| s.values(&r.values, params))
            .collect::<Result<Vec<_>>>()?;
        let n = sets.iter().map(Vec::len).max().unwrap_or(0);
        for k in 0..n {
            let mut values = r.values.clone();
            values.extend(
                sets.iter()
                    .map(|s| s.get(k).cloned().unwrap_or(Value::Null)),
            );
            out.push(Joined {
                values,
                ids: r.ids.clone(),
            });
        }
    }
    Ok(out)
}
