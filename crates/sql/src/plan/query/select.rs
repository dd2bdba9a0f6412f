//! Planning one SELECT body: FROM and its joins, WHERE split into
//! scan filters, join keys and a residual, GROUP BY / aggregates /
//! HAVING, and the projection (wildcards expanded, at most
//! `MAX_TARGET_ENTRIES` columns).

use std::sync::{Arc, Mutex};

use ndpdb_formats::expr::Program;
use ndpdb_formats::{DataType, SqlState};
use sqlparser::ast::{
    Distinct, Expr, GroupByExpr, Select, SelectItem, SelectItemQualifiedWildcardKind, SetExpr,
    Value as AstValue,
};

use super::from::{equi_key, input_scope, plan_from, FromItem, FromTables};
use super::{permute, unsupported, Input, SelectPlan, Source};
use crate::bind::compile::{
    compile, compile_aggregated, compile_predicate, contains_aggregate, expect_bool, AggContext,
};
use crate::bind::scope::table_name;
use crate::bind::scope::{ident_name, Scope};
use crate::plan::conjuncts::{and_all, conjuncts, pushable};

use crate::limits::{too_many_target_entries, MAX_TARGET_ENTRIES};
use crate::output::ResultColumn;
use crate::plan::access::{key_prefix, plan_access, Access};
use crate::plan::join_plan::{plan_lookup, JoinKind, JoinStep};
use crate::plan::subquery::{Bindings, QueryContext};
use crate::plan::{join_order, or_terms};
use crate::{Error, Result};

/// 54011 past [`MAX_TARGET_ENTRIES`] entries (after `*` expands).
pub(crate) fn too_many_entries(n: usize) -> Result<()> {
    if n > MAX_TARGET_ENTRIES {
        return Err(too_many_target_entries());
    }
    Ok(())
}

pub(crate) fn plan_select(
    s: &Select,
    params: &mut Vec<Option<DataType>>,
    ctx: &Arc<QueryContext>,
) -> Result<SelectPlan> {
    // Every item is at least one entry: refuse before planning FROM.
    too_many_entries(s.projection.len())?;
    if s.into.is_some() {
        // A statement's own SELECT … INTO is refused before planning;
        // one here is nested, which PostgreSQL refuses too.
        return Err(Error::new(
            SqlState::SYNTAX_ERROR,
            "SELECT ... INTO is not allowed here",
        ));
    }
    let (tables, from_items, merged) = plan_from(&s.from, ctx, params)?;
    let mut conds = Vec::new();
    if let Some(w) = &s.selection {
        conjuncts(w, &mut conds);
    }
    let outer = from_items.iter().any(|f| f.kind != JoinKind::Inner);
    if !outer {
        // Inner joins only: ON terms are WHERE terms.
        for f in &from_items {
            conds.extend(f.on.iter().cloned());
        }
    }
    // The FROM items' columns in FROM order (what `*` expands to).
    let from_scopes: Vec<Scope> = tables
        .iter()
        .map(|(input, alias)| input_scope(input, alias, ctx))
        .collect();
    // An unqualified USING column names the merged column (WHERE, the
    // output, ORDER BY); the per-table scopes keep the sides' columns
    // (a term pushed to a side's scan names that side's column).
    let mut from_scope = joined(&from_scopes, ctx);
    from_scope.merged = merged.clone();
    ctx.set_local(&from_scope);
    // Terms an OR implies (or_terms.rs), then the order of inner joins
    // (join_order.rs); with an outer join the FROM order stays.
    let (nullable, _) = null_filled(&from_items);
    let filterable: Vec<bool> = nullable.iter().map(|x| !x).collect();
    or_terms::add_implied(&mut conds, &from_scopes, &filterable);
    let order = match outer {
        true => (0..tables.len()).collect(),
        false => {
            let inputs: Vec<&Input> = tables.iter().map(|(input, _)| input).collect();
            join_order::choose(&inputs, &from_scopes, &conds)
        }
    };
    let tables = permute(tables, &order);
    let from_items = permute(from_items, &order);
    let scopes = permute(from_scopes, &order);
    let mut scope = joined(&scopes, ctx);
    scope.merged = merged;
    ctx.set_local(&scope);
    // Surface errors (unknown or ambiguous columns, types) against the full scope.
    for c in &conds {
        if contains_aggregate(c) {
            return Err(Error::new(
                SqlState::GROUPING_ERROR,
                "aggregate functions are not allowed in WHERE",
            ));
        }
        compile_predicate(c, &scope, params)?;
    }
    let mut terms = place_terms(conds, &from_items, &scopes)?;
    let joins = plan_joins(&tables, &from_items, &scopes, &mut terms, params, ctx)?;
    let sources = plan_sources(tables, &terms.pushed, &scopes, params)?;
    // Terms that need a subquery per row run last, each on its own.
    let (plain, row_filter) = split_row_dependent(terms.rest, &scope, ctx, params)?;
    let filter = match and_all(plain) {
        Some(e) => Some(compile_predicate(&e, &scope, params)?),
        None => None,
    };
    let out = plan_output(s, &from_scope, &mut scope, params)?;
    Ok(SelectPlan {
        sources,
        joins,
        filter,
        row_filter,
        subqueries: Bindings::default(),
        agg: out.agg,
        input_scope: scope,
        projection: out.projection,
        columns: out.columns,
        order: Vec::new(),
        distinct: out.distinct,
        limit: None,
        key_order_read: None,
        offset: None,
        for_update: false,
        ndp: None,
        last_ndp: Mutex::new(None),
        extras: out.extras,
        narrow: std::sync::OnceLock::new(),
        single_wanted: std::sync::OnceLock::new(),
        last_steps: Mutex::new(Vec::new()),
        shared: None,
    })
}

/// The columns of `scopes` one after another, in query `ctx`.
fn joined(scopes: &[Scope], ctx: &Arc<QueryContext>) -> Scope {
    let mut scope = Scope::within(ctx);
    for s in scopes {
        scope.columns.extend(s.columns.iter().cloned());
    }
    scope
}

/// Which tables an outer join fills with NULLs: at the end, and before
/// each table is joined.
fn null_filled(from_items: &[FromItem]) -> (Vec<bool>, Vec<Vec<bool>>) {
    let mut nullable = vec![false; from_items.len()];
    let mut before = Vec::with_capacity(from_items.len());
    for (k, f) in from_items.iter().enumerate() {
        before.push(nullable.clone());
        match f.kind {
            JoinKind::Inner => {}
            JoinKind::Left => nullable[k] = true,
            JoinKind::Right => nullable[..k].iter_mut().for_each(|x| *x = true),
            JoinKind::Full => nullable[..=k].iter_mut().for_each(|x| *x = true),
        }
    }
    (nullable, before)
}

/// Where each WHERE and ON term is evaluated.
struct Terms {
    /// Per table (in join order): terms that filter its scan.
    pushed: Vec<Vec<Expr>>,
    /// Per table: an outer join's ON terms that stay with its join step.
    step_on: Vec<Vec<Expr>>,
    /// WHERE terms over the joined rows (inner-join keys are taken out
    /// of these by `plan_joins`).
    rest: Vec<Expr>,
}

/// Sorts the WHERE terms `conds` and the outer joins' ON terms over the
/// tables in join order (`scopes`).
fn place_terms(conds: Vec<Expr>, from_items: &[FromItem], scopes: &[Scope]) -> Result<Terms> {
    let n = scopes.len();
    let (nullable, nullable_before) = null_filled(from_items);
    // WHERE terms of one table filter its scan, unless an outer join
    // fills that table with NULLs (the term must see those rows).
    let mut pushed: Vec<Vec<Expr>> = vec![Vec::new(); n];
    let mut rest = Vec::new();
    for c in conds {
        match (0..n).find(|&i| !nullable[i] && pushable(&c, &scopes[i])) {
            Some(i) => pushed[i].push(c),
            None => rest.push(c),
        }
    }
    // With outer joins, ON terms stay with their join: an inner join's
    // may filter a table not NULL-filled by then, a LEFT join's may filter
    // its own (null-supplying) table; the rest are keys or residuals.
    let mut step_on: Vec<Vec<Expr>> = vec![Vec::new(); n];
    let outer = from_items.iter().any(|f| f.kind != JoinKind::Inner);
    for (k, f) in from_items.iter().enumerate().filter(|_| outer) {
        for c in &f.on {
            if contains_aggregate(c) {
                return Err(Error::new(
                    SqlState::GROUPING_ERROR,
                    "aggregate functions are not allowed in JOIN conditions",
                ));
            }
            let target = match f.kind {
                JoinKind::Inner => {
                    (0..=k).find(|&j| !nullable_before[k][j] && pushable(c, &scopes[j]))
                }
                JoinKind::Left => pushable(c, &scopes[k]).then_some(k),
                JoinKind::Right | JoinKind::Full => None,
            };
            match target {
                Some(j) => pushed[j].push(c.clone()),
                None => step_on[k].push(c.clone()),
            }
        }
    }
    Ok(Terms {
        pushed,
        step_on,
        rest,
    })
}

/// The hash-join keys among `terms` between the rows so far (`left`) and
/// the next table (`right`), compiled; the other terms are returned.
struct Keys {
    left: Vec<Program>,
    right: Vec<Program>,
    /// The key terms' two sides as written (a key lookup plans from them).
    pairs: Vec<(Expr, Expr)>,
}

impl Keys {
    fn take(
        &mut self,
        terms: Vec<Expr>,
        left: &Scope,
        right: &Scope,
        params: &mut Vec<Option<DataType>>,
    ) -> Result<Vec<Expr>> {
        let mut others = Vec::new();
        for c in terms {
            match equi_key(&c, left, right) {
                Some((l, r)) => {
                    self.left.push(compile(l, left, params)?.0);
                    self.right.push(compile(r, right, params)?.0);
                    self.pairs.push((l.clone(), r.clone()));
                }
                None => others.push(c),
            }
        }
        Ok(others)
    }
}

/// One join step per table after the first (left-deep, in join order).
fn plan_joins(
    tables: &FromTables,
    from_items: &[FromItem],
    scopes: &[Scope],
    terms: &mut Terms,
    params: &mut Vec<Option<DataType>>,
    ctx: &Arc<QueryContext>,
) -> Result<Vec<JoinStep>> {
    // WHERE terms may be an inner join's keys unless a later RIGHT or
    // FULL join would add NULL-filled rows they must still see.
    let last_right_or_full = from_items
        .iter()
        .rposition(|f| matches!(f.kind, JoinKind::Right | JoinKind::Full))
        .unwrap_or(0);
    let mut joins = Vec::new();
    let mut left_scope = scopes
        .first()
        .cloned()
        .unwrap_or_else(|| Scope::within(ctx));
    for k in 1..scopes.len() {
        let right_scope = &scopes[k];
        let kind = from_items[k].kind;
        let mut keys = Keys {
            left: Vec::new(),
            right: Vec::new(),
            pairs: Vec::new(),
        };
        let on = std::mem::take(&mut terms.step_on[k]);
        let residual = keys.take(on, &left_scope, right_scope, params)?;
        if kind == JoinKind::Inner && k >= last_right_or_full {
            let rest = std::mem::take(&mut terms.rest);
            terms.rest = keys.take(rest, &left_scope, right_scope, params)?;
        }
        let lookup = match &tables[k].0 {
            Input::Table(ts) => plan_lookup(
                ts,
                kind,
                &keys.pairs,
                &terms.pushed[k],
                &left_scope,
                right_scope,
                params,
            )?,
            Input::Derived(_) | Input::Rows(_) | Input::SetOp(_) => None,
        };
        let mut joined_scope = left_scope.clone();
        joined_scope
            .columns
            .extend(right_scope.columns.iter().cloned());
        let residual = match and_all(residual) {
            Some(e) => Some(compile_predicate(&e, &joined_scope, params)?),
            None => None,
        };
        joins.push(JoinStep {
            kind,
            left_keys: keys.left,
            right_keys: keys.right,
            residual,
            left_width: left_scope.columns.len(),
            right_width: right_scope.columns.len(),
            lookup,
            output: None,
        });
        left_scope = joined_scope;
    }
    Ok(joins)
}

/// Each table's read: its access path and the filter of its pushed terms.
fn plan_sources(
    tables: FromTables,
    pushed: &[Vec<Expr>],
    scopes: &[Scope],
    params: &mut Vec<Option<DataType>>,
) -> Result<Vec<Source>> {
    let mut sources = Vec::new();
    for (i, (input, alias)) in tables.into_iter().enumerate() {
        let (access, key_prefix) = match &input {
            Input::Table(ts) => (
                plan_access(ts, &pushed[i], &scopes[i], params)?,
                key_prefix(ts, &pushed[i], &scopes[i], params)?,
            ),
            Input::Derived(_) | Input::Rows(_) | Input::SetOp(_) => (Access::Scan, Vec::new()),
        };
        let filter = match and_all(pushed[i].clone()) {
            Some(e) => Some(compile_predicate(&e, &scopes[i], params)?),
            None => None,
        };
        let conjuncts = pushed[i]
            .iter()
            .map(|c| compile_predicate(c, &scopes[i], params))
            .collect::<Result<_>>()?;
        sources.push(Source {
            input,
            alias,
            access,
            key_prefix,
            filter,
            conjuncts,
        });
    }
    Ok(sources)
}

/// What a SELECT body outputs, over its joined and filtered rows.
struct Output {
    columns: Vec<ResultColumn>,
    projection: Vec<Program>,
    agg: Option<(AggContext, Option<Program>)>,
    extras: Option<crate::plan::select_extras::Extras>,
    distinct: bool,
}

/// GROUP BY, aggregates, HAVING, the projection and DISTINCT of `s` over
/// the joined rows (`scope`; `from_scope` in FROM order for `*`).
fn plan_output(
    s: &Select,
    from_scope: &Scope,
    scope: &mut Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<Output> {
    // Projection items (expanding wildcards).
    let mut items = projection_items(&s.projection, from_scope, scope)?;
    let group_exprs: Vec<Expr> = match &s.group_by {
        GroupByExpr::Expressions(es, mods) if mods.is_empty() => es
            .iter()
            .map(|e| resolve_group_ref(e, &items, scope))
            .collect::<Result<_>>()?,
        _ => return Err(unsupported("this GROUP BY form")),
    };
    let aggregated = !group_exprs.is_empty()
        || items.iter().any(|(e, _)| contains_aggregate(e))
        || s.having.is_some();
    if aggregated && crate::plan::select_extras::mentioned(&items) {
        return Err(unsupported(
            "window or set-returning functions with aggregates",
        ));
    }
    let extras = crate::plan::select_extras::plan(&mut items, scope, params)?;
    let mut columns = Vec::new();
    let mut projection = Vec::new();
    let mut agg = None;
    if aggregated {
        let mut ctx = AggContext::new(scope.clone(), group_exprs, params)?;
        for (e, name) in &items {
            let (p, ty) = compile_aggregated(e, &mut ctx, params)?;
            projection.push(p);
            columns.push(ResultColumn {
                name: name.clone(),
                ty: ty.output_type(),
            });
        }
        let having = match &s.having {
            Some(h) => {
                let (p, ty) = compile_aggregated(h, &mut ctx, params)?;
                expect_bool(ty, "HAVING")?;
                Some(p)
            }
            None => None,
        };
        agg = Some((ctx, having));
    } else {
        for (e, name) in &items {
            let (p, ty) = compile(e, scope, params)?;
            projection.push(p);
            columns.push(ResultColumn {
                name: name.clone(),
                ty: ty.output_type(),
            });
        }
    }
    let distinct = match &s.distinct {
        None | Some(Distinct::All) => false,
        Some(Distinct::Distinct) => true,
        Some(Distinct::On(_)) => return Err(unsupported("DISTINCT ON")),
    };
    Ok(Output {
        columns,
        projection,
        agg,
        extras,
        distinct,
    })
}

/// The SELECT list with wildcards expanded: `(expression, output name)`
/// per column, at most `MAX_TARGET_ENTRIES` of them.
pub(crate) fn projection_items(
    projection: &[SelectItem],
    from_scope: &Scope,
    scope: &Scope,
) -> Result<Vec<(Expr, String)>> {
    let mut items: Vec<(Expr, String)> = Vec::new();
    for item in projection {
        match item {
            SelectItem::UnnamedExpr(e) => items.push((e.clone(), output_name(e))),
            SelectItem::ExprWithAlias { expr, alias } => {
                items.push((expr.clone(), ident_name(alias)))
            }
            SelectItem::Wildcard(_) => {
                if from_scope.is_empty() {
                    return Err(Error::new(
                        SqlState::SYNTAX_ERROR,
                        "SELECT * with no tables specified is not valid",
                    ));
                }
                // `*` lists the FROM items in FROM order, whatever the join
                // order; a join tree's USING columns first, once each.
                for (t, name) in from_scope.star_columns() {
                    items.push((column_expr(&t, &name), name));
                }
            }
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(t), _) => {
                let t = table_name(t)?;
                if !scope.has_table(&t) {
                    return Err(Error::new(
                        SqlState::UNDEFINED_TABLE,
                        format!("missing FROM-clause entry for table \"{t}\""),
                    ));
                }
                for c in from_scope.columns.iter().filter(|c| c.table == t) {
                    items.push((column_expr(&c.table, &c.name), c.name.clone()));
                }
            }
            other => return Err(unsupported(format!("select item {other}"))),
        }
    }
    too_many_entries(items.len())?;
    Ok(items)
}

/// WHERE terms as (those a scan or the residual filter may evaluate,
/// the compiled ones that need a subquery per row).
pub(crate) fn split_row_dependent(
    terms: Vec<Expr>,
    scope: &Scope,
    ctx: &QueryContext,
    params: &mut Vec<Option<DataType>>,
) -> Result<(Vec<Expr>, Vec<Program>)> {
    let mut plain = Vec::new();
    let mut row_filter = Vec::new();
    for c in terms {
        let p = compile_predicate(&c, scope, params)?;
        if ctx.row_dependent(&p) {
            row_filter.push(p);
        } else {
            plain.push(c);
        }
    }
    Ok((plain, row_filter))
}

pub(crate) fn column_expr(table: &str, name: &str) -> Expr {
    Expr::CompoundIdentifier(vec![
        sqlparser::ast::Ident::with_quote('"', table),
        sqlparser::ast::Ident::with_quote('"', name),
    ])
}

/// `GROUP BY 1` / `GROUP BY alias` refer to select-list items.
pub(crate) fn resolve_group_ref(e: &Expr, items: &[(Expr, String)], scope: &Scope) -> Result<Expr> {
    match e {
        Expr::Value(v) => {
            if let AstValue::Number(n, _) = &v.value {
                let i: usize = n.parse().unwrap_or(0);
                return items
                    .get(i.wrapping_sub(1))
                    .map(|(e, _)| e.clone())
                    .ok_or_else(|| {
                        Error::new(
                            SqlState::INVALID_COLUMN_REFERENCE,
                            format!("GROUP BY position {n} is not in select list"),
                        )
                    });
            }
            Ok(e.clone())
        }
        Expr::Identifier(id) => {
            let name = ident_name(id);
            if scope.resolve(None, &name).is_err() {
                if let Some((e, _)) = items.iter().find(|(_, n)| *n == name) {
                    return Ok(e.clone());
                }
            }
            Ok(e.clone())
        }
        e => Ok(e.clone()),
    }
}

/// The name PostgreSQL gives an unnamed select-list expression.
pub(crate) fn output_name(e: &Expr) -> String {
    figure(e).map_or_else(|| "?column?".into(), |(name, _)| name)
}

/// PostgreSQL's `FigureColname`: a name and whether it is strong (a
/// column's, a function's) or weak (a cast's type name, which an outer
/// cast replaces: `'42'::int2::int8` is `int8`, `a::int8` is `a`).
fn figure(e: &Expr) -> Option<(String, bool)> {
    let strong = |s: String| Some((s, true));
    match e {
        Expr::Identifier(id) => strong(ident_name(id)),
        Expr::CompoundIdentifier(ids) => ids.last().map(|i| (ident_name(i), true)),
        Expr::Function(f) => f
            .name
            .0
            .last()
            .map(|p| (p.to_string().to_lowercase(), true)),
        Expr::Cast {
            expr, data_type, ..
        } => match figure(expr) {
            Some(named @ (_, true)) => Some(named),
            _ => crate::bind::compile::sql_type(data_type)
                .ok()
                .map(|t| (cast_name(t), false)),
        },
        Expr::Nested(e) => figure(e),
        Expr::Array(_) => strong("array".into()),
        // `a[1]` is named after `a` (a column or a cast), as PostgreSQL does.
        Expr::CompoundFieldAccess { root, access_chain } => {
            use sqlparser::ast::AccessExpr;
            match access_chain.last() {
                Some(AccessExpr::Subscript(_)) => access_chain
                    .iter()
                    .rev()
                    .find_map(|a| match a {
                        AccessExpr::Dot(Expr::Identifier(id)) => Some((ident_name(id), true)),
                        _ => None,
                    })
                    .or_else(|| figure(root)),
                Some(AccessExpr::Dot(Expr::Identifier(id))) => strong(ident_name(id)),
                _ => None,
            }
        }
        Expr::Substring { shorthand, .. } => {
            strong(if *shorthand { "substr" } else { "substring" }.into())
        }
        Expr::Ceil { .. } => strong("ceil".into()),
        Expr::Floor { .. } => strong("floor".into()),
        Expr::Position { .. } => strong("position".into()),
        Expr::Case { .. } => strong("case".into()),
        Expr::Extract { .. } => strong("extract".into()),
        Expr::Exists { .. } => strong("exists".into()),
        // A scalar subquery is named after its one column.
        Expr::Subquery(q) => match q.body.as_ref() {
            SetExpr::Select(s) => match s.projection.first() {
                Some(SelectItem::UnnamedExpr(e)) => figure(e),
                Some(SelectItem::ExprWithAlias { alias, .. }) => strong(ident_name(alias)),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// The name of a column that casts a literal: its type's catalog name
/// (an array's element type's, as PostgreSQL names `'{1}'::int[]`).
fn cast_name(t: DataType) -> String {
    match t {
        DataType::Int => "int4",
        DataType::BigInt => "int8",
        DataType::Double => "float8",
        DataType::Bool => "bool",
        DataType::Numeric { .. } => "numeric",
        DataType::Text => "text",
        DataType::Varchar(_) => "varchar",
        DataType::Char(_) => "bpchar",
        DataType::Date => "date",
        DataType::Timestamp => "timestamp",
        DataType::Bytea => "bytea",
        DataType::Json => "json",
        DataType::Jsonb => "jsonb",
        DataType::Array(e) => return cast_name(e.scalar()),
    }
    .into()
}
