//! Planning one SELECT body: FROM and its joins, WHERE split into
//! scan filters, join keys and a residual, GROUP BY / aggregates /
//! HAVING, and the projection (wildcards expanded, at most
//! `MAX_TARGET_ENTRIES` columns).

use std::sync::{Arc, Mutex};

use ndpdb_formats::expr::Program;
use ndpdb_formats::{DataType, SqlState};
use sqlparser::ast::{
    Distinct, Expr, GroupByExpr, Select, SelectItem, SelectItemQualifiedWildcardKind,
    Value as AstValue,
};

use super::plan::{equi_key, output_name, plan_from};
use super::{input_scope, permute, unsupported, Input, SelectPlan, Source};
use crate::bind::compile::{
    compile, compile_aggregated, compile_predicate, contains_aggregate, expect_bool, AggContext,
};
use crate::bind::scope::table_name;
use crate::bind::scope::{ident_name, Scope};
use crate::plan::conjuncts::{and_all, conjuncts, pushable};

use crate::output::ResultColumn;
use crate::plan::access::{key_prefix, plan_access, Access};
use crate::plan::join_plan::{plan_lookup, JoinKind, JoinStep};
use crate::plan::subquery::{Bindings, QueryContext};
use crate::plan::{join_order, or_terms};
use crate::{Error, Result};

/// PostgreSQL's limit on a SELECT list (`MaxTupleAttributeNumber`): a
/// row description counts its columns in 16 bits.
pub(crate) const MAX_TARGET_ENTRIES: usize = 1_664;

pub(crate) fn too_many_entries(n: usize) -> Result<()> {
    if n > MAX_TARGET_ENTRIES {
        return Err(Error::new(
            SqlState::TOO_MANY_COLUMNS,
            format!("target lists can have at most {MAX_TARGET_ENTRIES} entries"),
        ));
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
    let (tables, from_items) = plan_from(&s.from, ctx, params)?;
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
    // Which tables an outer join fills with NULLs: before each table is
    // joined, and at the end.
    let n = tables.len();
    let mut nullable = vec![false; n];
    let mut nullable_before = Vec::with_capacity(n);
    for (k, f) in from_items.iter().enumerate() {
        nullable_before.push(nullable.clone());
        match f.kind {
            JoinKind::Inner => {}
            JoinKind::Left => nullable[k] = true,
            JoinKind::Right => nullable[..k].iter_mut().for_each(|x| *x = true),
            JoinKind::Full => nullable[..=k].iter_mut().for_each(|x| *x = true),
        }
    }
    // The FROM items' columns in FROM order (what `*` expands to).
    let from_scopes: Vec<Scope> = tables
        .iter()
        .map(|(input, alias)| input_scope(input, alias, ctx))
        .collect();
    let mut from_scope = Scope::within(ctx);
    for ts_scope in &from_scopes {
        from_scope.columns.extend(ts_scope.columns.iter().cloned());
    }
    ctx.set_local(&from_scope);
    // Terms an OR implies (or_terms.rs), then the order of inner joins
    // (join_order.rs); with an outer join the FROM order stays.
    let filterable: Vec<bool> = nullable.iter().map(|x| !x).collect();
    or_terms::add_implied(&mut conds, &from_scopes, &filterable);
    let order = match outer {
        true => (0..n).collect(),
        false => {
            let inputs: Vec<&Input> = tables.iter().map(|(input, _)| input).collect();
            join_order::choose(&inputs, &from_scopes, &conds)
        }
    };
    let tables = permute(tables, &order);
    let from_items = permute(from_items, &order);
    let scopes = permute(from_scopes, &order);
    let mut scope = Scope::within(ctx);
    for ts_scope in &scopes {
        scope.columns.extend(ts_scope.columns.iter().cloned());
    }
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
    if outer {
        for (k, f) in from_items.iter().enumerate() {
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
    }
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
    for k in 1..n {
        let right_scope = &scopes[k];
        let kind = from_items[k].kind;
        let mut left_keys = Vec::new();
        let mut right_keys = Vec::new();
        let mut pairs = Vec::new();
        let mut residual = Vec::new();
        for c in std::mem::take(&mut step_on[k]) {
            match equi_key(&c, &left_scope, right_scope) {
                Some((l, r)) => {
                    left_keys.push(compile(l, &left_scope, params)?.0);
                    right_keys.push(compile(r, right_scope, params)?.0);
                    pairs.push((l.clone(), r.clone()));
                }
                None => residual.push(c),
            }
        }
        if kind == JoinKind::Inner && k >= last_right_or_full {
            let mut remaining = Vec::new();
            for c in rest {
                match equi_key(&c, &left_scope, right_scope) {
                    Some((l, r)) => {
                        left_keys.push(compile(l, &left_scope, params)?.0);
                        right_keys.push(compile(r, right_scope, params)?.0);
                        pairs.push((l.clone(), r.clone()));
                    }
                    None => remaining.push(c),
                }
            }
            rest = remaining;
        }
        let lookup = match &tables[k].0 {
            Input::Table(ts) => plan_lookup(
                ts,
                kind,
                &pairs,
                &pushed[k],
                &left_scope,
                right_scope,
                params,
            )?,
            Input::Derived(_) | Input::Rows(_) => None,
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
            left_keys,
            right_keys,
            residual,
            left_width: left_scope.columns.len(),
            right_width: right_scope.columns.len(),
            lookup,
            output: None,
        });
        left_scope = joined_scope;
    }
    let mut sources = Vec::new();
    for (i, (input, alias)) in tables.into_iter().enumerate() {
        let (access, key_prefix) = match &input {
            Input::Table(ts) => (
                plan_access(ts, &pushed[i], &scopes[i], params)?,
                key_prefix(ts, &pushed[i], &scopes[i], params)?,
            ),
            Input::Derived(_) | Input::Rows(_) => (Access::Scan, Vec::new()),
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
    // Terms that need a subquery per row run last, each on its own.
    let (plain, row_filter) = split_row_dependent(rest, &scope, ctx, params)?;
    let filter = match and_all(plain) {
        Some(e) => Some(compile_predicate(&e, &scope, params)?),
        None => None,
    };
    // Projection items (expanding wildcards).
    let mut items = projection_items(&s.projection, &from_scope, &scope)?;
    let group_exprs: Vec<Expr> = match &s.group_by {
        GroupByExpr::Expressions(es, mods) if mods.is_empty() => es
            .iter()
            .map(|e| resolve_group_ref(e, &items, &scope))
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
    let extras = crate::plan::select_extras::plan(&mut items, &mut scope, params)?;
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
            let (p, ty) = compile(e, &scope, params)?;
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
    Ok(SelectPlan {
        sources,
        joins,
        filter,
        row_filter,
        subqueries: Bindings::default(),
        agg,
        input_scope: scope,
        projection,
        columns,
        order: Vec::new(),
        distinct,
        limit: None,
        key_order_read: None,
        offset: None,
        for_update: false,
        ndp: None,
        last_ndp: Mutex::new(None),
        extras,
        narrow: std::sync::OnceLock::new(),
        single_wanted: std::sync::OnceLock::new(),
        last_steps: Mutex::new(Vec::new()),
        shared: None,
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
                // `*` lists the FROM items in FROM order, whatever the join order.
                for c in &from_scope.columns {
                    items.push((column_expr(&c.table, &c.name), c.name.clone()));
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
