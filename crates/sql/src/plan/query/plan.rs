//! Planning a query: `plan_query` and its levels (ORDER BY, LIMIT,
//! VALUES), FROM items and their joins, and the filter plans of UPDATE
//! and DELETE (`plan_filter`). A plain SELECT body is planned in
//! `select.rs`.
//!
//! ```text
//!  Query ─► plan_query_in ─► plan_select (select.rs) ─► ORDER BY / LIMIT
//!             UNION / INTERSECT / EXCEPT ─► plan_set_query (set_operation.rs)
//!             FROM ─► plan_from ─► plan_from_item (table, derived, rows)
//!                       └─► equi_key: hash-join keys between the sides
//! ```

use std::sync::Arc;

use ndpdb_formats::expr::Program;
use ndpdb_formats::{DataType, SqlState};
use ndpdb_host::Database;
use sqlparser::ast::{
    Expr, LimitClause, LockType, OrderByKind, Query, Select, SelectItem, SetExpr, TableFactor,
    TableWithJoins, Value as AstValue,
};

use super::from::{plan_from, table_scope};
use super::select::{plan_select, split_row_dependent};
use super::set_operation::plan_set_query;
use super::{unsupported, Input, OrderItem, SelectPlan, SortKey, Source};
use crate::bind::compile::{compile, compile_aggregated, compile_predicate, contains_aggregate};
use crate::bind::scope::{ident_name, Scope};
use crate::output::ResultColumn;
use crate::plan::access::{key_prefix, plan_access};
use crate::plan::conjuncts::{and_all, conjuncts};
use crate::plan::subquery::{max_placeholder, Cte, QueryContext};
use crate::{Error, Result};

/// Plans a query. `params` collects parameter types.
pub fn plan_query(
    db: &Database,
    q: &Query,
    params: &mut Vec<Option<DataType>>,
) -> Result<SelectPlan> {
    let ctx = QueryContext::new(db, max_placeholder(q), None, Arc::new(Vec::new()));
    plan_query_in(q, params, &ctx)
}

/// Plans a query at one level of a statement: the top, a subquery
/// (`ctx` knows the enclosing query) or a query in FROM / WITH.
pub fn plan_query_in(
    q: &Query,
    params: &mut Vec<Option<DataType>>,
    ctx: &Arc<QueryContext>,
) -> Result<SelectPlan> {
    if let Some(with) = &q.with {
        if with.recursive {
            return Err(unsupported("WITH RECURSIVE"));
        }
        let mut list: Vec<Cte> = Vec::new();
        for cte in &with.cte_tables {
            let name = ident_name(&cte.alias.name);
            if list.iter().any(|c| c.name == name) {
                return Err(Error::new(
                    SqlState::DUPLICATE_ALIAS,
                    format!("WITH query name \"{name}\" specified more than once"),
                ));
            }
            list.push(Cte {
                name,
                visible: 0,
                columns: cte
                    .alias
                    .columns
                    .iter()
                    .map(|c| ident_name(&c.name))
                    .collect(),
                query: cte.query.as_ref().clone(),
            });
        }
        ctx.add_ctes(list);
    }
    if q.fetch.is_some() {
        return Err(unsupported("FETCH"));
    }
    let select = match q.body.as_ref() {
        SetExpr::Select(s) => s.as_ref(),
        SetExpr::Values(_) => return plan_values_query(q, params, ctx),
        SetExpr::SetOperation { .. } => return plan_set_query(q, params, ctx),
        SetExpr::Query(inner) if q.order_by.is_none() && q.limit_clause.is_none() => {
            if !q.locks.is_empty() {
                return Err(unsupported("a locking clause after a parenthesized query"));
            }
            return plan_query_in(inner, params, ctx);
        }
        SetExpr::Query(inner) => {
            let twice = |what: &str| {
                Error::new(
                    SqlState::SYNTAX_ERROR,
                    format!("multiple {what} clauses not allowed"),
                )
            };
            if q.order_by.is_some() && inner.order_by.is_some() {
                return Err(twice("ORDER BY"));
            }
            if q.limit_clause.is_some() && inner.limit_clause.is_some() {
                return Err(twice("LIMIT"));
            }
            return plan_values_query(q, params, ctx);
        }
        _ => return Err(unsupported("this query form")),
    };
    let for_update = match q.locks.as_slice() {
        [] => false,
        [l] if l.lock_type == LockType::Update && l.nonblock.is_none() => true,
        _ => return Err(unsupported("this locking clause")),
    };
    let mut plan = plan_select(select, params, ctx)?;
    plan.for_update = for_update;
    if for_update {
        if plan.sources.len() != 1 {
            return Err(unsupported("FOR UPDATE with joins"));
        }
        if plan.agg.is_some() || plan.distinct {
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                "FOR UPDATE is not allowed with GROUP BY clause, DISTINCT clause or aggregate functions",
            ));
        }
    }
    // ORDER BY
    let mut order_by: Vec<(Expr, bool)> = Vec::new();
    if let Some(ob) = &q.order_by {
        let exprs = match &ob.kind {
            OrderByKind::Expressions(e) => e,
            OrderByKind::All(_) => return Err(unsupported("ORDER BY ALL")),
        };
        for o in exprs {
            let desc = matches!(o.options.sort, Some(sqlparser::ast::OrderBySort::Desc));
            let nulls_first = o.options.nulls_first.unwrap_or(desc);
            let key = resolve_output_ref(&o.expr, &plan.columns, select)?;
            let sorted_by = match key.and_then(|i| select.projection.get(i)) {
                Some(SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }) => {
                    Some(e.clone())
                }
                Some(_) => None,
                None => Some(o.expr.clone()),
            };
            order_by.extend(sorted_by.map(|e| (e, desc)));
            let key = match key {
                Some(i) => SortKey::Output(i),
                None => SortKey::Expr(plan.compile_post(&o.expr, params)?),
            };
            plan.order.push(OrderItem {
                key,
                desc,
                nulls_first,
            });
        }
    }
    limit_offset(q, &mut plan, params, ctx)?;
    if plan.extras.is_none() {
        plan.key_order_read = plan.plan_key_order_read(&order_by)?;
    }
    plan.subqueries = ctx.finish();
    Ok(plan)
}

/// `q`'s LIMIT and OFFSET onto `plan`.
pub(super) fn limit_offset(
    q: &Query,
    plan: &mut SelectPlan,
    params: &mut Vec<Option<DataType>>,
    ctx: &Arc<QueryContext>,
) -> Result<()> {
    match &q.limit_clause {
        None => {}
        Some(LimitClause::LimitOffset {
            limit,
            offset,
            limit_by,
        }) => {
            if !limit_by.is_empty() {
                return Err(unsupported("LIMIT BY"));
            }
            let empty = Scope::within(ctx);
            if let Some(l) = limit {
                plan.limit = Some(compile(l, &empty, params)?.0);
            }
            if let Some(o) = offset {
                plan.offset = Some(compile(&o.value, &empty, params)?.0);
            }
        }
        Some(LimitClause::OffsetCommaLimit { .. }) => return Err(unsupported("LIMIT a, b")),
    }
    Ok(())
}

/// A VALUES list as a query: `SELECT * FROM (VALUES …) AS "*VALUES*"`
/// with the query's ORDER BY, LIMIT and OFFSET; so also a parenthesized
/// query with an ORDER BY or LIMIT of its own outside the parentheses.
pub(crate) fn plan_values_query(
    q: &Query,
    params: &mut Vec<Option<DataType>>,
    ctx: &Arc<QueryContext>,
) -> Result<SelectPlan> {
    let template = "SELECT * FROM (VALUES (1)) AS \"*VALUES*\"";
    let parsed =
        sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::PostgreSqlDialect {}, template)
            .map_err(|e| Error::new(SqlState::INTERNAL_ERROR, e.to_string()))?;
    let Some(sqlparser::ast::Statement::Query(mut outer)) = parsed.into_iter().next() else {
        return Err(Error::new(SqlState::INTERNAL_ERROR, "VALUES template"));
    };
    let inner = Query {
        order_by: None,
        limit_clause: None,
        ..q.clone()
    };
    if let SetExpr::Select(select) = outer.body.as_mut() {
        if let Some(TableFactor::Derived { subquery, .. }) =
            select.from.first_mut().map(|f| &mut f.relation)
        {
            **subquery = inner;
        }
    }
    outer.order_by = q.order_by.clone();
    outer.limit_clause = q.limit_clause.clone();
    plan_query_in(&outer, params, ctx)
}

/// `ORDER BY 2` or `ORDER BY alias` → output column index.
pub(crate) fn resolve_output_ref(
    e: &Expr,
    columns: &[ResultColumn],
    select: &Select,
) -> Result<Option<usize>> {
    match e {
        Expr::Value(v) => {
            if let AstValue::Number(n, _) = &v.value {
                let i: usize = n.parse().unwrap_or(0);
                if i == 0 || i > columns.len() {
                    return Err(Error::new(
                        SqlState::INVALID_COLUMN_REFERENCE,
                        format!("ORDER BY position {n} is not in select list"),
                    ));
                }
                return Ok(Some(i - 1));
            }
            Ok(None)
        }
        Expr::Identifier(id) => {
            let name = ident_name(id);
            for (i, item) in select.projection.iter().enumerate() {
                if let SelectItem::ExprWithAlias { alias, .. } = item {
                    if ident_name(alias) == name {
                        return Ok(Some(i.min(columns.len().saturating_sub(1))));
                    }
                }
            }
            Ok(None)
        }
        _ => Ok(None),
    }
}

/// Plans a query in FROM, a `WITH` query or a view's query seeing
/// `ctes`; `columns` renames its result columns (`AS t(a, b)`).
pub(crate) fn plan_derived(
    db: &Database,
    q: &Query,
    alias: &str,
    columns: &[String],
    ctes: Arc<Vec<Cte>>,
    params: &mut Vec<Option<DataType>>,
) -> Result<Input> {
    let ctx = QueryContext::new(db, max_placeholder(q), None, ctes);
    let mut plan = plan_query_in(q, params, &ctx)?;
    if columns.len() > plan.columns.len() {
        return Err(Error::new(
            SqlState::INVALID_COLUMN_REFERENCE,
            format!(
                "table \"{alias}\" has {} columns available but {} columns specified",
                plan.columns.len(),
                columns.len()
            ),
        ));
    }
    for (c, name) in plan.columns.iter_mut().zip(columns) {
        c.name = name.clone();
    }
    Ok(Input::Derived(Box::new(plan)))
}

impl SelectPlan {
    /// Compiles an ORDER BY expression over the projection's input.
    pub(crate) fn compile_post(
        &mut self,
        e: &Expr,
        params: &mut Vec<Option<DataType>>,
    ) -> Result<Program> {
        match &mut self.agg {
            Some((ctx, _)) => Ok(compile_aggregated(e, ctx, params)?.0),
            None => Ok(compile(e, &self.input_scope, params)?.0),
        }
    }
}

/// Plans `SELECT * FROM table WHERE selection` for UPDATE / DELETE;
/// `base`: the highest `$n` of the whole statement (its SET list too).
pub fn plan_filter(
    db: &Database,
    table: &TableWithJoins,
    selection: Option<&Expr>,
    base: u32,
    params: &mut Vec<Option<DataType>>,
) -> Result<SelectPlan> {
    if !table.joins.is_empty() {
        return Err(unsupported("joins in UPDATE / DELETE"));
    }
    let ctx = QueryContext::new(db, base, None, Arc::new(Vec::new()));
    let mut conds = Vec::new();
    let (tables, _, _) = plan_from(std::slice::from_ref(table), &ctx, params)?;
    let (ts, alias) = match tables.into_iter().next() {
        Some((Input::Table(ts), alias)) => (ts, alias),
        _ => return Err(unsupported("UPDATE / DELETE of this FROM item")),
    };
    let scope = table_scope(&ts, &alias, &ctx);
    ctx.set_local(&scope);
    if let Some(w) = selection {
        if contains_aggregate(w) {
            return Err(Error::new(
                SqlState::GROUPING_ERROR,
                "aggregate functions are not allowed in WHERE",
            ));
        }
        conjuncts(w, &mut conds);
    }
    // Terms with a per-row subquery (`id IN (SELECT …)`) run after the scan.
    let (pushed, row_filter) = split_row_dependent(conds, &scope, &ctx, params)?;
    let conjuncts = pushed
        .iter()
        .map(|c| compile_predicate(c, &scope, params))
        .collect::<Result<_>>()?;
    let access = plan_access(&ts, &pushed, &scope, params)?;
    let key_prefix = key_prefix(&ts, &pushed, &scope, params)?;
    let filter = match and_all(pushed) {
        Some(e) => Some(compile_predicate(&e, &scope, params)?),
        None => None,
    };
    let subqueries = ctx.finish();
    let source = Source {
        input: Input::Table(ts),
        alias,
        access,
        key_prefix,
        filter,
        conjuncts,
    };
    let mut plan = SelectPlan::single_source(source, scope, Vec::new(), Vec::new(), subqueries);
    plan.row_filter = row_filter;
    Ok(plan)
}
