//! Planning the FROM list: each item (a table, a view, a `WITH` query, a
//! subquery, VALUES, a set-returning function or a catalog relation) and
//! how it joins the items before it; the scopes that name their columns.
//!
//! ```text
//!  FROM a JOIN b USING (k), (SELECT …) d, v
//!    plan_from ─► plan_from_item per item ─► (Input, alias)
//!                   table ─────────────► Input::Table
//!                   view (plan/view.rs) ─► plan_derived ─► Input::Derived
//!                   WITH query, subquery ─► plan_derived ─► Input::Derived
//!                   VALUES, f(…), pg_catalog.* ─► Input::Rows (row_source/)
//!              └─► FromItem per item: join kind and ON terms (USING
//!                  becomes ON terms and merged columns: join_using.rs)
//!  equi_key: which ON / WHERE terms are hash-join keys between the sides
//! ```
//!
//! A query in FROM is planned by `plan_derived` (`plan.rs`): this is one
//! arm of the planner's recursion.

use std::sync::Arc;

use ndpdb_formats::{DataType, SqlState};
use ndpdb_host::database::TableState;
use sqlparser::ast::{
    BinaryOperator, Expr, JoinConstraint, JoinOperator, ObjectName, SetExpr, TableAlias,
    TableFactor, TableWithJoins,
};

use super::plan::plan_derived;
use super::{unsupported, Input};
use crate::bind::scope::{ident_name, table_name, MergedColumn, Scope};
use crate::exec::row_source;
use crate::plan::conjuncts::{compiles, conjuncts, pushable};
use crate::plan::join_plan::JoinKind;
use crate::plan::subquery::QueryContext;
use crate::plan::view::{self, inside_view, Relation};
use crate::{Error, Result};

/// A name part as written, without its quotes (an unquoted one folds to
/// lower case).
pub(crate) fn unquoted(part: &str) -> String {
    match part.strip_prefix('"').and_then(|p| p.strip_suffix('"')) {
        Some(q) => q.replace("\"\"", "\""),
        None => part.to_ascii_lowercase(),
    }
}

/// One FROM-list table: how it joins the tables before it and its ON
/// terms (the first table: [`JoinKind::Inner`], none).
pub(crate) struct FromItem {
    pub(crate) kind: JoinKind,
    pub(crate) on: Vec<Expr>,
}

/// The FROM list's items in order, each with its alias.
pub(crate) type FromTables = Vec<(Input, String)>;

/// The column names `AS t(a, b)` gives.
fn alias_columns(a: &Option<TableAlias>) -> Vec<String> {
    a.as_ref()
        .map(|a| a.columns.iter().map(|c| ident_name(&c.name)).collect())
        .unwrap_or_default()
}

/// One FROM item: a table, a `WITH` query or a subquery.
pub(crate) fn plan_from_item(
    tf: &TableFactor,
    ctx: &Arc<QueryContext>,
    params: &mut Vec<Option<DataType>>,
) -> Result<(Input, String)> {
    match tf {
        TableFactor::Table {
            name,
            alias,
            args: Some(args),
            with_ordinality,
            ..
        } => {
            let fname = name.to_string().to_ascii_lowercase();
            let as_name = alias.as_ref().map_or_else(
                || fname.trim_start_matches("pg_catalog.").to_string(),
                |a| ident_name(&a.name),
            );
            let rows = row_source::plan_function(
                &fname,
                args,
                &as_name,
                &alias_columns(alias),
                *with_ordinality,
                &Scope::within(ctx),
                params,
            )?;
            Ok((Input::Rows(Box::new(rows)), as_name))
        }
        TableFactor::Table {
            name,
            alias,
            args: None,
            ..
        } => plan_named(name, alias, ctx, params),
        TableFactor::UNNEST {
            alias,
            array_exprs,
            with_offset: false,
            with_ordinality,
            ..
        } => {
            let as_name = alias
                .as_ref()
                .map_or_else(|| "unnest".to_string(), |a| ident_name(&a.name));
            let rows = row_source::plan_call(
                "unnest",
                array_exprs,
                &as_name,
                &alias_columns(alias),
                *with_ordinality,
                &Scope::within(ctx),
                params,
            )?;
            Ok((Input::Rows(Box::new(rows)), as_name))
        }
        TableFactor::Derived {
            lateral,
            subquery,
            alias,
            ..
        } => {
            if *lateral {
                return Err(unsupported("LATERAL"));
            }
            let Some(a) = alias else {
                return Err(Error::new(
                    SqlState::SYNTAX_ERROR,
                    "subquery in FROM must have an alias",
                )
                .with_hint("For example, FROM (SELECT ...) [AS] foo."));
            };
            let as_name = ident_name(&a.name);
            let columns = alias_columns(alias);
            if let (SetExpr::Values(values), None, None) = (
                subquery.body.as_ref(),
                &subquery.order_by,
                &subquery.limit_clause,
            ) {
                let scope = Scope::within(ctx);
                let rows = row_source::plan_values(values, &as_name, &columns, &scope, params)?;
                return Ok((Input::Rows(Box::new(rows)), as_name));
            }
            let input = plan_derived(ctx.db(), subquery, &as_name, &columns, ctx.ctes(), params)?;
            Ok((input, as_name))
        }
        other => Err(unsupported(format!("FROM item {other}"))),
    }
}

/// A FROM item named `name`: a catalog relation, a `WITH` query, a table
/// or a view.
fn plan_named(
    name: &ObjectName,
    alias: &Option<TableAlias>,
    ctx: &Arc<QueryContext>,
    params: &mut Vec<Option<DataType>>,
) -> Result<(Input, String)> {
    let parts: Vec<String> = name.0.iter().map(|p| p.to_string()).collect();
    let system = match parts.as_slice() {
        [schema, rel] => row_source::system_relation(Some(&unquoted(schema)), &unquoted(rel)),
        [rel] if ctx.ctes().iter().all(|c| c.name != unquoted(rel)) => {
            row_source::system_relation(None, &unquoted(rel))
        }
        _ => None,
    };
    if let Some(rows) = system {
        let rel = parts.last().map(|p| unquoted(p)).unwrap_or_default();
        let as_name = alias.as_ref().map_or(rel, |a| ident_name(&a.name));
        return Ok((Input::Rows(Box::new(rows)), as_name));
    }
    if let [schema, rel] = parts.as_slice() {
        let schema = unquoted(schema);
        if schema == "information_schema" || schema == "pg_catalog" {
            return Err(Error::new(
                SqlState::UNDEFINED_TABLE,
                format!("relation \"{schema}.{}\" does not exist", unquoted(rel)),
            ));
        }
    }
    let tname = table_name(name)?;
    let as_name = alias
        .as_ref()
        .map_or(tname.clone(), |a| ident_name(&a.name));
    let ctes = ctx.ctes();
    if name.0.len() == 1 {
        if let Some(cte) = ctes.iter().rev().find(|c| c.name == tname) {
            let mut columns = alias_columns(alias);
            if columns.is_empty() {
                columns = cte.columns.clone();
            }
            let visible = Arc::new(ctes[..cte.visible].to_vec());
            let input = plan_derived(ctx.db(), &cte.query, &as_name, &columns, visible, params)?;
            return Ok((input, as_name));
        }
    }
    let input = match view::relation(ctx.db(), &tname, alias_columns(alias))? {
        // `t AS x (a, b)`: the table's columns renamed, read as the
        // derived table `(SELECT * FROM t) AS x (a, b)`.
        Relation::Table(table) if !alias_columns(alias).is_empty() => {
            let sql = format!(
                "SELECT * FROM {}",
                crate::exec::row_source::system::quote_ident(&table.meta().name)
            );
            let query = match crate::parse::parse(&sql)?.pop() {
                Some(sqlparser::ast::Statement::Query(q)) => *q,
                _ => return Err(unsupported("this table alias")),
            };
            plan_derived(
                ctx.db(),
                &query,
                &as_name,
                &alias_columns(alias),
                Arc::default(),
                params,
            )?
        }
        Relation::Table(table) => Input::Table(table),
        Relation::View(v) => {
            let (db, columns) = (ctx.db(), &v.columns);
            let mut input = inside_view(|| {
                plan_derived(db, &v.query, &as_name, columns, Arc::default(), params)
            })?;
            if let Input::Derived(plan) = &mut input {
                plan.shared = crate::shared_view::shared_for(&v.meta.name, &v.meta.sql);
                let types: Vec<DataType> = plan.columns.iter().map(|c| c.ty).collect();
                v.check(&types)?;
            }
            input
        }
    };
    Ok((input, as_name))
}
/// Plans the FROM list: the items in order, how each joins, and the
/// columns its `JOIN … USING` merge (in the order `*` lists them).
pub(crate) fn plan_from(
    from: &[TableWithJoins],
    ctx: &Arc<QueryContext>,
    params: &mut Vec<Option<DataType>>,
) -> Result<(FromTables, Vec<FromItem>, Vec<MergedColumn>)> {
    let mut out: FromTables = Vec::new();
    let mut items = Vec::new();
    let mut all_merged = Vec::new();
    let mut add = |tf: &TableFactor, out: &mut FromTables| -> Result<()> {
        let (input, alias) = plan_from_item(tf, ctx, params)?;
        if out.iter().any(|(_, a)| *a == alias) {
            return Err(Error::new(
                SqlState::DUPLICATE_ALIAS,
                format!("table name \"{alias}\" specified more than once"),
            ));
        }
        out.push((input, alias));
        Ok(())
    };
    for twj in from {
        // This join tree's first item, and its USING columns so far.
        let tree = out.len();
        let mut merged: Vec<MergedColumn> = Vec::new();
        add(&twj.relation, &mut out)?;
        items.push(FromItem {
            kind: JoinKind::Inner,
            on: Vec::new(),
        });
        for j in &twj.joins {
            let (kind, constraint) = match &j.join_operator {
                JoinOperator::Join(c) | JoinOperator::Inner(c) => (JoinKind::Inner, c),
                JoinOperator::CrossJoin(c) => (JoinKind::Inner, c),
                JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (JoinKind::Left, c),
                JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (JoinKind::Right, c),
                JoinOperator::FullOuter(c) => (JoinKind::Full, c),
                other => {
                    return Err(unsupported(
                        format!("join type {other:?}")
                            .split('(')
                            .next()
                            .unwrap_or("join")
                            .to_string(),
                    ))
                }
            };
            add(&j.relation, &mut out)?;
            let mut on = Vec::new();
            match constraint {
                JoinConstraint::On(e) => conjuncts(e, &mut on),
                JoinConstraint::None if kind != JoinKind::Inner => {
                    return Err(Error::new(
                        SqlState::SYNTAX_ERROR,
                        "syntax error at end of input",
                    ))
                }
                JoinConstraint::None => {}
                JoinConstraint::Using(cols) => {
                    // The left side is this join tree only (`FROM x, a
                    // JOIN b USING (c)`: not x).
                    let scopes: Vec<Scope> = out[tree..]
                        .iter()
                        .map(|(i, a)| input_scope(i, a, ctx))
                        .collect();
                    on.extend(crate::plan::join_using::terms(
                        cols,
                        &scopes,
                        &out[tree].1,
                        kind,
                        &mut merged,
                    )?);
                }
                JoinConstraint::Natural => return Err(unsupported("NATURAL JOIN")),
            }
            items.push(FromItem { kind, on });
        }
        all_merged.extend(merged);
    }
    Ok((out, items, all_merged))
}

/// `a = b` with one side over the rows so far and the other over the new
/// table: a hash-join key (left part first). A side without columns
/// (`p.c = 'x'`) is no key: the comparison needs its types' rules.
pub(crate) fn equi_key<'e>(
    c: &'e Expr,
    left: &Scope,
    right: &Scope,
) -> Option<(&'e Expr, &'e Expr)> {
    let Expr::BinaryOp {
        left: l,
        op: BinaryOperator::Eq,
        right: r,
    } = c
    else {
        return None;
    };
    let constant = |e: &Expr| compiles(e, &left.no_columns());
    if constant(l) || constant(r) {
        return None;
    }
    if pushable(l, left) && pushable(r, right) {
        Some((l, r))
    } else if pushable(r, left) && pushable(l, right) {
        Some((r, l))
    } else {
        None
    }
}

pub(crate) fn table_scope(ts: &TableState, alias: &str, ctx: &Arc<QueryContext>) -> Scope {
    let mut s = Scope::within(ctx);
    s.add_table(
        alias,
        ts.meta()
            .schema
            .columns
            .iter()
            .map(|c| (c.name.clone(), c.ty)),
    );
    s
}
/// The columns a FROM item gives, under its alias.
pub(crate) fn input_scope(input: &Input, alias: &str, ctx: &Arc<QueryContext>) -> Scope {
    match input {
        Input::Table(ts) => table_scope(ts, alias, ctx),
        Input::Derived(plan) => {
            let mut s = Scope::within(ctx);
            s.add_table(alias, plan.columns.iter().map(|c| (c.name.clone(), c.ty)));
            s
        }
        Input::Rows(r) => {
            let mut s = Scope::within(ctx);
            s.add_table(alias, r.columns.iter().map(|c| (c.name.clone(), c.ty)));
            s
        }
        Input::SetOp(_) => Scope::within(ctx),
    }
}
