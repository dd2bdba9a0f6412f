//! SELECT: planning and execution.
//!
//! ```text
//!  sources (PK lookup or scan + pushed-down filter, per table)
//!     └─► hash joins on equi-conditions (left-deep; inner joins in the
//!         order of join_order.rs, LEFT/RIGHT/FULL OUTER in FROM order:
//!         join.rs) ─► residual WHERE
//!           └─► FOR UPDATE locks (single table) ─► GROUP BY / aggregates ─► HAVING
//!                 └─► projection ─► DISTINCT ─► ORDER BY ─► OFFSET / LIMIT
//! ```
//!
//! WHERE and ON are split into conjuncts. A conjunct that only names one
//! table's columns filters that table's scan; `a.x = b.y` between the
//! tables joined so far and the next one becomes a hash-join key; the rest
//! is evaluated on the joined rows. With outer joins a WHERE conjunct
//! filters a scan only if no outer join fills that table with NULLs, and
//! an outer join's ON terms stay with it (keys and a residual; a LEFT
//! join's terms over its own table filter that table's scan). Equality on every primary-key column
//! with constants or parameters turns a scan into an index lookup. An OR
//! of AND lists adds the terms it implies (`or_terms.rs`).

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use ndpdb_formats::expr::Program;
use ndpdb_formats::{DataType, RecId, SqlState, Value, Vid};
use ndpdb_host::database::TableState;
use ndpdb_host::ndp::{NdpReport, NdpRequest};
use ndpdb_host::page_scan::ChunkMap;
use ndpdb_host::{Database, Transaction};
use ndpdb_link::ndp::NdpOp;
use sqlparser::ast::{
    BinaryOperator, Distinct, Expr, GroupByExpr, JoinConstraint, JoinOperator, LimitClause,
    LockType, OrderByKind, Query, Select, SelectItem, SelectItemQualifiedWildcardKind, SetExpr,
    TableFactor, TableWithJoins, Value as AstValue,
};
use std::sync::Mutex;

use crate::access::{key_prefix, plan_access, Access, IndexAccess, PlannedIndex};
use crate::compile::{
    compile, compile_aggregated, compile_predicate, contains_aggregate, expect_bool, AggContext,
};
use crate::ddl::table_name;
use crate::host_aggregate::{HostAggregate, PartedAggregate};
use crate::join::{key_of, JoinKind, JoinStep, Joined};
use crate::join_filter::ReadFilter;
use crate::join_layout::Widen;
use crate::join_lookup;
use crate::join_order;
use crate::or_terms;
use crate::ordered_read::{self, KeyOrderRead, TupleRows};
use crate::output::{Output, ResultColumn};
use crate::row_source::{self, RowSource};
use crate::scope::{ident_name, Scope};
use crate::subquery::{max_placeholder, Bindings, Cte, QueryContext};
use crate::{Error, Result};
use ndpdb_formats::agg::AggSpec;
use ndpdb_scan::{merge_groups, Pipeline, PipelineOp};

fn unsupported(what: impl std::fmt::Display) -> Error {
    Error::new(
        SqlState::FEATURE_NOT_SUPPORTED,
        format!("{what} is not supported"),
    )
}

mod join_run;
mod row_sink;
use join_run::widen_all;
use row_sink::Sink;

/// What a FROM item reads.
pub enum Input {
    Table(Arc<TableState>),
    /// A subquery in FROM or a `WITH` query: its rows, once per execution.
    Derived(Box<SelectPlan>),
    /// VALUES, a set-returning function or a catalog relation
    /// (`row_source/`): rows made when the statement runs.
    Rows(Box<RowSource>),
}

pub struct Source {
    pub input: Input,
    pub alias: String,
    pub access: Access,
    /// Values of the leading primary-key columns every row kept has
    /// (`access::key_prefix`): what a scan locks under SERIALIZABLE.
    pub key_prefix: Vec<Program>,
    pub filter: Option<Program>,
    /// `filter`'s AND terms, each compiled alone (NDP pipelines compare
    /// predicates by them).
    pub conjuncts: Vec<Program>,
}

impl Source {
    /// The table read, unless this is a derived table.
    pub fn table(&self) -> Option<&Arc<TableState>> {
        match &self.input {
            Input::Table(t) => Some(t),
            Input::Derived(_) | Input::Rows(_) => None,
        }
    }
}

enum SortKey {
    Output(usize),
    Expr(Program),
}

struct OrderItem {
    key: SortKey,
    desc: bool,
    nulls_first: bool,
}

/// A planned SELECT; reusable across executions with different parameters.
pub struct SelectPlan {
    pub sources: Vec<Source>,
    joins: Vec<JoinStep>,
    filter: Option<Program>,
    /// WHERE terms that need a subquery per row, after `filter`, in order.
    row_filter: Vec<Program>,
    /// The query's subqueries and correlated references (parameter slots).
    pub subqueries: Bindings,
    /// The grouping context and HAVING, for aggregate queries.
    agg: Option<(AggContext, Option<Program>)>,
    /// The joined row's columns (ORDER BY of non-aggregate queries).
    pub(crate) input_scope: Scope,
    projection: Vec<Program>,
    pub columns: Vec<ResultColumn>,
    order: Vec<OrderItem>,
    distinct: bool,
    limit: Option<Program>,
    offset: Option<Program>,
    pub for_update: bool,
    /// The first rows come in primary-key order: the read stops at
    /// OFFSET + LIMIT rows (`ordered_read.rs`).
    key_order_read: Option<KeyOrderRead>,
    /// Where the first source's scan runs, when it goes to the device.
    pub ndp: Option<NdpPlacement>,
    /// Figures of the last offloaded execution (for EXPLAIN ANALYZE).
    pub last_ndp: Mutex<Option<NdpReport>>,
    /// Window and set-returning columns (`select_extras.rs`).
    extras: Option<crate::select_extras::Extras>,
    /// The joins over narrow rows (`join_layout.rs`); made at the first
    /// execution, when every part of the plan is compiled.
    narrow: std::sync::OnceLock<Option<crate::join_layout::NarrowJoins>>,
    /// The columns a one-table plain SELECT reads (`single_table_wanted`).
    single_wanted: std::sync::OnceLock<Option<Vec<bool>>>,
    /// Per FROM item of the last execution: rows read and the time the
    /// read took, rows after its join and the time the join took
    /// (EXPLAIN ANALYZE).
    pub last_steps: Mutex<Vec<StepReport>>,
    /// The rows of a view this plan reads, shared with the view's other
    /// references in the statement (`shared_view.rs`).
    pub shared: Option<Arc<crate::shared_view::SharedRows>>,
}

/// What one FROM item of a join cost in an execution.
#[derive(Clone, Debug, Default)]
pub struct StepReport {
    pub alias: String,
    pub rows_read: usize,
    pub read: std::time::Duration,
    /// Rows after this item was joined (the first item: its rows).
    pub rows_out: usize,
    pub join: std::time::Duration,
    /// Joined by key lookups instead of a scan.
    pub lookups: bool,
    /// Read through a runtime join filter of this many keys
    /// (`join_filter.rs`: the IN list's keys, or the Bloom filter's).
    pub join_filter: Option<usize>,
}

/// How a query uses NDP (`SET ndp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NdpMode {
    Off,
    On,
    Auto,
}

/// The device part of a plan.
#[derive(Clone, Debug)]
pub struct NdpPlacement {
    pub request: NdpRequest,
    /// The device aggregates (rows come back as `[groups…, aggregates…]`).
    pub aggregate: bool,
    /// For scans: the table columns the rest of the plan reads.
    pub columns: Vec<u32>,
    /// Why this placement was chosen (EXPLAIN).
    pub reason: String,
}

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

/// `items` in `order` (positions into `items`, each once).
fn permute<T>(items: Vec<T>, order: &[usize]) -> Vec<T> {
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order.iter().filter_map(|&i| slots[i].take()).collect()
}

fn table_scope(ts: &TableState, alias: &str, ctx: &Arc<QueryContext>) -> Scope {
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
fn input_scope(input: &Input, alias: &str, ctx: &Arc<QueryContext>) -> Scope {
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
    }
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

fn output_name(e: &Expr) -> String {
    match e {
        Expr::Identifier(id) => ident_name(id),
        Expr::CompoundIdentifier(ids) => ids.last().map(ident_name).unwrap_or_default(),
        Expr::Function(f) => f
            .name
            .0
            .last()
            .map(|p| p.to_string().to_lowercase())
            .unwrap_or_default(),
        Expr::Cast {
            expr, data_type, ..
        } => match expr.as_ref() {
            Expr::Value(_) => crate::compile::sql_type(data_type)
                .map(|t| match t {
                    DataType::Int => "int4".to_string(),
                    DataType::BigInt => "int8".into(),
                    DataType::Double => "float8".into(),
                    DataType::Bool => "bool".into(),
                    DataType::Numeric { .. } => "numeric".into(),
                    DataType::Text => "text".into(),
                    DataType::Varchar(_) => "varchar".into(),
                    DataType::Char(_) => "bpchar".into(),
                    DataType::Date => "date".into(),
                    DataType::Timestamp => "timestamp".into(),
                    DataType::Bytea => "bytea".into(),
                })
                .unwrap_or_else(|_| "?column?".into()),
            e => output_name(e),
        },
        Expr::Nested(e) => output_name(e),
        Expr::Substring { shorthand, .. } => if *shorthand { "substr" } else { "substring" }.into(),
        Expr::Case { .. } => "case".into(),
        Expr::Extract { .. } => "extract".into(),
        Expr::Exists { .. } => "exists".into(),
        // A scalar subquery is named after its one column.
        Expr::Subquery(q) => match q.body.as_ref() {
            SetExpr::Select(s) => match s.projection.first() {
                Some(SelectItem::UnnamedExpr(e)) => output_name(e),
                Some(SelectItem::ExprWithAlias { alias, .. }) => ident_name(alias),
                _ => "?column?".into(),
            },
            _ => "?column?".into(),
        },
        _ => "?column?".into(),
    }
}

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
        SetExpr::SetOperation { .. } => return Err(unsupported("UNION / INTERSECT / EXCEPT")),
        SetExpr::Query(_) => return Err(unsupported("parenthesized queries")),
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
    if plan.extras.is_none() {
        plan.key_order_read = plan.plan_key_order_read(&order_by)?;
    }
    plan.subqueries = ctx.finish();
    Ok(plan)
}

/// A VALUES list as a query: `SELECT * FROM (VALUES …) AS "*VALUES*"`
/// with the query's ORDER BY, LIMIT and OFFSET.
fn plan_values_query(
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

/// A name part as written, without its quotes (an unquoted one folds to
/// lower case).
fn unquoted(part: &str) -> String {
    match part.strip_prefix('"').and_then(|p| p.strip_suffix('"')) {
        Some(q) => q.replace("\"\"", "\""),
        None => part.to_ascii_lowercase(),
    }
}

/// `ORDER BY 2` or `ORDER BY alias` → output column index.
fn resolve_output_ref(
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

/// One FROM-list table: how it joins the tables before it and its ON
/// terms (the first table: [`JoinKind::Inner`], none).
struct FromItem {
    kind: JoinKind,
    on: Vec<Expr>,
}

/// The FROM list's items in order, each with its alias.
type FromTables = Vec<(Input, String)>;

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

/// One FROM item: a table, a `WITH` query or a subquery.
fn plan_from_item(
    tf: &TableFactor,
    ctx: &Arc<QueryContext>,
    params: &mut Vec<Option<DataType>>,
) -> Result<(Input, String)> {
    let alias_columns = |a: &Option<sqlparser::ast::TableAlias>| -> Vec<String> {
        a.as_ref()
            .map(|a| a.columns.iter().map(|c| ident_name(&c.name)).collect())
            .unwrap_or_default()
    };
    match tf {
        TableFactor::Table {
            name,
            alias,
            args: Some(args),
            ..
        } => {
            let fname = name.to_string().to_ascii_lowercase();
            let as_name = alias.as_ref().map_or_else(
                || fname.trim_start_matches("pg_catalog.").to_string(),
                |a| ident_name(&a.name),
            );
            let scope = Scope::within(ctx);
            let rows = row_source::plan_function(
                &fname,
                args,
                &as_name,
                &alias_columns(alias),
                &scope,
                params,
            )?;
            Ok((Input::Rows(Box::new(rows)), as_name))
        }
        TableFactor::Table {
            name,
            alias,
            args: None,
            ..
        } => {
            let parts: Vec<String> = name.0.iter().map(|p| p.to_string()).collect();
            let system = match parts.as_slice() {
                [schema, rel] => {
                    row_source::system_relation(Some(&unquoted(schema)), &unquoted(rel))
                }
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
                    let input =
                        plan_derived(ctx.db(), &cte.query, &as_name, &columns, visible, params)?;
                    return Ok((input, as_name));
                }
            }
            let input =
                crate::view::from_relation(ctx, &tname, &as_name, alias_columns(alias), params)?;
            Ok((input, as_name))
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
                let rows = row_source::plan_values(
                    values,
                    &as_name,
                    &columns,
                    &Scope::within(ctx),
                    params,
                )?;
                return Ok((Input::Rows(Box::new(rows)), as_name));
            }
            let input = plan_derived(ctx.db(), subquery, &as_name, &columns, ctx.ctes(), params)?;
            Ok((input, as_name))
        }
        other => Err(unsupported(format!("FROM item {other}"))),
    }
}

/// Plans the FROM list: the items in order, and how each joins.
fn plan_from(
    from: &[TableWithJoins],
    ctx: &Arc<QueryContext>,
    params: &mut Vec<Option<DataType>>,
) -> Result<(FromTables, Vec<FromItem>)> {
    let mut out: FromTables = Vec::new();
    let mut items = Vec::new();
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
                    let scopes: Vec<Scope> =
                        out.iter().map(|(i, a)| input_scope(i, a, ctx)).collect();
                    on.extend(crate::join_using::terms(cols, &scopes)?);
                }
                JoinConstraint::Natural => return Err(unsupported("NATURAL JOIN")),
            }
            items.push(FromItem { kind, on });
        }
    }
    Ok((out, items))
}

/// `a = b` with one side over the rows so far and the other over the new
/// table: a hash-join key (left part first). A side without columns
/// (`p.c = 'x'`) is no key: the comparison needs its types' rules.
fn equi_key<'e>(c: &'e Expr, left: &Scope, right: &Scope) -> Option<(&'e Expr, &'e Expr)> {
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

/// PostgreSQL's limit on a SELECT list (`MaxTupleAttributeNumber`): a
/// row description counts its columns in 16 bits.
const MAX_TARGET_ENTRIES: usize = 1_664;

fn too_many_entries(n: usize) -> Result<()> {
    if n > MAX_TARGET_ENTRIES {
        return Err(Error::new(
            SqlState::TOO_MANY_COLUMNS,
            format!("target lists can have at most {MAX_TARGET_ENTRIES} entries"),
        ));
    }
    Ok(())
}

fn plan_select(
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
            Input::Table(ts) => join_lookup::plan(
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
    let mut items: Vec<(Expr, String)> = Vec::new();
    for item in &s.projection {
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
    if aggregated && crate::select_extras::mentioned(&items) {
        return Err(unsupported(
            "window or set-returning functions with aggregates",
        ));
    }
    let extras = crate::select_extras::plan(&mut items, &mut scope, params)?;
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

/// WHERE terms as (those a scan or the residual filter may evaluate,
/// the compiled ones that need a subquery per row).
fn split_row_dependent(
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

fn column_expr(table: &str, name: &str) -> Expr {
    Expr::CompoundIdentifier(vec![
        sqlparser::ast::Ident::with_quote('"', table),
        sqlparser::ast::Ident::with_quote('"', name),
    ])
}

/// `GROUP BY 1` / `GROUP BY alias` refer to select-list items.
fn resolve_group_ref(e: &Expr, items: &[(Expr, String)], scope: &Scope) -> Result<Expr> {
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

/// The tuples an index range names; `None` when it covers more than a
/// quarter of the index (a scan is cheaper) or the index is gone.
/// The key prefix a source's rows share, evaluated (`None`: none, or a
/// NULL in it — then no row matches, and the table counts as read).
fn key_prefix_values(prefix: &[Program], params: &[Value]) -> Result<Option<Vec<Value>>> {
    if prefix.is_empty() {
        return Ok(None);
    }
    let values: Vec<Value> = prefix
        .iter()
        .map(|p| p.eval(&[], params))
        .collect::<Result<_, _>>()?;
    Ok((!values.iter().any(Value::is_null)).then_some(values))
}

/// Whether no column appears twice in `columns` (a narrowed row takes
/// each column's value once).
fn distinct_columns(columns: &[usize]) -> bool {
    let mut seen = HashSet::with_capacity(columns.len());
    columns.iter().all(|c| seen.insert(*c))
}

fn index_range(table: &TableState, ix: &IndexAccess, params: &[Value]) -> Result<Option<Vec<Vid>>> {
    match ordered_read::key_range(ix, params)? {
        Some(range) => match ix.index.get(table)? {
            Some(index) => Ok(index.lookup(&range, (index.len() / 4).max(64))),
            // Dropped since the plan was made: a scan.
            None => Ok(None),
        },
        None => Ok(Some(Vec::new())),
    }
}

impl SelectPlan {
    /// Whether the first rows may be read in primary-key order, stopping
    /// at the LIMIT (`ordered_read.rs`).
    fn plan_key_order_read(&self, order_by: &[(Expr, bool)]) -> Result<Option<KeyOrderRead>> {
        let [src] = &self.sources[..] else {
            return Ok(None);
        };
        if src.table().is_none()
            || self.limit.is_none()
            || self.agg.is_some()
            || self.distinct
            || self.filter.is_some()
            || !self.row_filter.is_empty()
            || order_by.len() != self.order.len()
        {
            return Ok(None);
        }
        let is_key_order = matches!(&src.access,
            Access::Index(ix) if matches!(ix.index, PlannedIndex::KeyOrder(_)));
        Ok(ordered_read::plan(
            &src.access,
            is_key_order,
            order_by,
            &self.input_scope,
        ))
    }

    /// OFFSET + LIMIT with `params`, when the plan reads in key order.
    fn key_order_take(&self, params: &[Value]) -> Result<Option<(KeyOrderRead, usize)>> {
        let Some(read) = self.key_order_read else {
            return Ok(None);
        };
        let count = |p: &Option<Program>| -> Result<Option<usize>> {
            match p {
                None => Ok(Some(0)),
                Some(p) => Ok(p
                    .eval(&[], params)?
                    .as_i64()
                    .and_then(|n| usize::try_from(n).ok())),
            }
        };
        // A NULL or bad LIMIT reads everything (and fails where it did).
        match (count(&self.limit)?, count(&self.offset)?) {
            (Some(l), Some(o)) => Ok(Some((read, l.saturating_add(o)))),
            _ => Ok(None),
        }
    }

    /// The first source's first `take` rows in key order, when the plan
    /// reads so.
    fn read_in_key_order(
        &self,
        tx: &mut Transaction,
        params: &[Value],
    ) -> Result<Option<(TupleRows, usize)>> {
        let Some((read, take)) = self.key_order_take(params)? else {
            return Ok(None);
        };
        let src = &self.sources[0];
        let (Some(table), Access::Index(ix)) = (src.table(), &src.access) else {
            return Ok(None);
        };
        if !ix.index.present(table) {
            return Ok(None);
        }
        match key_prefix_values(&src.key_prefix, params)? {
            Some(prefix) => tx.read_key_prefix(table, &prefix)?,
            None => tx.read_predicate(table)?,
        }
        let keep = |row: &[Value]| -> Result<bool> {
            match &src.filter {
                Some(f) => Ok(f.eval_predicate(row, params)?),
                None => Ok(true),
            }
        };
        let rows = ordered_read::read(tx, table, ix, read, take, params, keep)?;
        Ok(Some((rows, take)))
    }

    /// Compiles an ORDER BY expression over the projection's input.
    fn compile_post(&mut self, e: &Expr, params: &mut Vec<Option<DataType>>) -> Result<Program> {
        match &mut self.agg {
            Some((ctx, _)) => Ok(compile_aggregated(e, ctx, params)?.0),
            None => Ok(compile(e, &self.input_scope, params)?.0),
        }
    }

    fn read_source(
        &self,
        tx: &mut Transaction,
        src: &Source,
        params: &[Value],
        wanted: Option<&[bool]>,
        narrow: Option<&[usize]>,
    ) -> Result<Vec<(Vid, RecId, Vec<Value>)>> {
        let mut out = Vec::new();
        self.read_source_each(tx, src, params, wanted, narrow, |vid, rid, row| {
            out.push((vid, rid, row));
            Ok(())
        })?;
        Ok(out)
    }

    /// [`Self::read_source`], each row handed to `visit` as it is read.
    /// With `narrow`, a row holds only those columns of the table, in
    /// that order (the first item of a narrow join); otherwise it has the
    /// table's width, NULL where `wanted` says nothing reads.
    fn read_source_each(
        &self,
        tx: &mut Transaction,
        src: &Source,
        params: &[Value],
        wanted: Option<&[bool]>,
        narrow: Option<&[usize]>,
        visit: impl FnMut(Vid, RecId, Vec<Value>) -> Result<()>,
    ) -> Result<()> {
        let filter = ReadFilter {
            program: src.filter.as_ref(),
            bloom: None,
        };
        self.read_filtered_each(tx, src, filter, params, (wanted, narrow), None, visit)
    }

    /// Whether [`Self::read_filtered_each`] reads `src` through the scan
    /// core's pipeline on the host workers (and so can pass each chunk
    /// of rows through a map there).
    pub(super) fn reads_by_pipeline(&self, src: &Source, wanted: Option<&[bool]>) -> bool {
        matches!(src.input, Input::Table(_))
            && matches!(src.access, Access::Scan)
            && wanted.is_some()
            && (self.joins.is_empty() || self.narrow_joins().is_some())
    }

    /// [`Self::read_source_each`] with `filter` in place of the source's
    /// own (a runtime join filter, `join_filter.rs`, which includes it).
    /// With `map`, a pipeline read ([`Self::reads_by_pipeline`]) passes
    /// each chunk's rows through it on the workers, and `visit` gets the
    /// rows out of it; other reads ignore it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn read_filtered_each(
        &self,
        tx: &mut Transaction,
        src: &Source,
        ReadFilter { program, bloom }: ReadFilter<'_>,
        params: &[Value],
        (wanted, narrow): (Option<&[bool]>, Option<&[usize]>),
        map: Option<&ChunkMap<'_>>,
        mut visit: impl FnMut(Vid, RecId, Vec<Value>) -> Result<()>,
    ) -> Result<()> {
        // Kept rows lose the columns nothing reads (after the filter).
        let mut keep = |vid: Vid, rid: RecId, mut row: Vec<Value>| -> Result<()> {
            let kept = match program {
                Some(f) => f.eval_predicate(&row, params)?,
                None => true,
            };
            if !kept {
                return Ok(());
            }
            if let Some(columns) = narrow {
                let narrowed = columns
                    .iter()
                    .map(|&c| {
                        row.get_mut(c)
                            .map_or(Value::Null, |v| std::mem::replace(v, Value::Null))
                    })
                    .collect();
                return visit(vid, rid, narrowed);
            }
            if let Some(wanted) = wanted {
                for (v, w) in row.iter_mut().zip(wanted) {
                    if !w {
                        *v = Value::Null;
                    }
                }
            }
            visit(vid, rid, row)
        };
        let table = match &src.input {
            Input::Table(t) => t,
            Input::Derived(plan) => {
                let Some(shared) = &plan.shared else {
                    for row in plan.derived_rows(tx, params)? {
                        keep(Vid(0), RecId::NULL, row)?;
                    }
                    return Ok(());
                };
                let rows = match shared.get() {
                    Some(rows) => rows,
                    None => {
                        let rows = Arc::new(plan.derived_rows(tx, params)?);
                        shared.keep(rows.clone());
                        rows
                    }
                };
                for row in rows.iter() {
                    keep(Vid(0), RecId::NULL, row.clone())?;
                }
                return Ok(());
            }
            Input::Rows(r) => {
                for row in r.rows(tx.database(), params)? {
                    keep(Vid(0), RecId::NULL, row)?;
                }
                return Ok(());
            }
        };
        match &src.access {
            // A table scan of a plain SELECT (no row ids needed): the
            // scan core's pipeline filters it page by page on the host
            // workers and streams the columns read, chunk by chunk.
            Access::Scan if self.reads_by_pipeline(src, wanted) => {
                // Narrow rows come as projected; full-width ones keep the
                // projected values at their places in the table's layout
                // (built by the scan's workers).
                let (columns, table_layout) = match narrow {
                    Some(columns) => (columns.iter().map(|&c| c as u32).collect(), false),
                    None => {
                        let columns: Vec<u32> = wanted
                            .into_iter()
                            .flatten()
                            .enumerate()
                            .filter(|(_, w)| **w)
                            .map(|(c, _)| c as u32)
                            .collect();
                        (columns, true)
                    }
                };
                let pipeline = Pipeline::new(
                    &table.types,
                    params,
                    program,
                    PipelineOp::Project { columns },
                )
                .with_key_bloom(bloom.cloned());
                let pipeline = match table_layout {
                    true => pipeline.with_rows_in_table_layout(),
                    false => pipeline,
                };
                let prefix = key_prefix_values(&src.key_prefix, params)?;
                let mut each = |row: Vec<Value>| visit(Vid(0), RecId::NULL, row);
                match map {
                    Some(map) => tx.scan_pipeline_mapped(
                        table,
                        prefix.as_deref(),
                        &pipeline,
                        map,
                        &mut each,
                    )?,
                    None => {
                        tx.scan_pipeline_each(table, prefix.as_deref(), &pipeline, &mut each)?
                    }
                };
            }
            Access::PrimaryKey(keys) => {
                let key: Vec<Value> = keys
                    .iter()
                    .map(|k| k.eval(&[], params))
                    .collect::<Result<_, _>>()?;
                if key.iter().any(Value::is_null) {
                    return Ok(());
                }
                if let Some((vid, rid, row)) = tx.get_by_key(table, &key)? {
                    keep(vid, rid, row)?;
                }
            }
            Access::Index(ix) if ix.index.present(table) => {
                // SERIALIZABLE: an index range reads the whole table, or
                // the primary-key prefix its terms fix.
                match key_prefix_values(&src.key_prefix, params)? {
                    Some(prefix) => tx.read_key_prefix(table, &prefix)?,
                    None => tx.read_predicate(table)?,
                }
                if let Some(vids) = index_range(table, ix, params)? {
                    for vid in vids {
                        if let Some((rid, row)) = tx.get(table, vid)? {
                            keep(vid, rid, row)?;
                        }
                    }
                    return Ok(());
                }
                // The range is too wide (or the index was dropped): scan.
                tx.scan_columns(table, wanted, |vid, rid, row| {
                    keep(vid, rid, row)?;
                    Ok(true)
                })?
            }
            Access::Scan | Access::Index(_) => {
                let visit = |vid, rid, row: Vec<Value>| {
                    keep(vid, rid, row)?;
                    Ok(true)
                };
                match key_prefix_values(&src.key_prefix, params)? {
                    Some(prefix) => tx.scan_key_prefix(table, &prefix, wanted, visit)?,
                    None => tx.scan_columns(table, wanted, visit)?,
                }
            }
        }
        Ok(())
    }

    /// The joins over narrow rows, for a plain SELECT that joins tables
    /// (a FOR UPDATE plan and the filter plans of UPDATE and DELETE need
    /// whole rows; window and set-returning columns keep every column).
    fn narrow_joins(&self) -> Option<&crate::join_layout::NarrowJoins> {
        self.narrow
            .get_or_init(|| {
                if self.joins.is_empty() || self.for_update || self.extras.is_some() {
                    return None;
                }
                let after = self.columns_read_after_from();
                let own: Vec<std::collections::BTreeSet<u32>> = self
                    .sources
                    .iter()
                    .map(|s| s.filter.iter().flat_map(Program::columns).collect())
                    .collect();
                let tables: Vec<bool> = self.sources.iter().map(|s| s.table().is_some()).collect();
                crate::join_layout::narrow(&self.joins, &after, &own, &tables)
            })
            .as_ref()
    }

    /// The joined row's columns read after FROM: by WHERE, the output,
    /// ORDER BY, grouping, aggregates and per-row subqueries.
    fn columns_read_after_from(&self) -> std::collections::BTreeSet<u32> {
        let mut after = std::collections::BTreeSet::new();
        let programs = self
            .projection
            .iter()
            .chain(self.filter.iter())
            .chain(self.row_filter.iter())
            .chain(self.order.iter().filter_map(|o| match &o.key {
                SortKey::Expr(p) => Some(p),
                SortKey::Output(_) => None,
            }));
        for p in programs {
            after.extend(p.columns());
        }
        if let Some((ctx, having)) = &self.agg {
            for p in ctx.group_programs.iter().chain(having.iter()) {
                after.extend(p.columns());
            }
            for a in &ctx.aggregates {
                after.extend(a.spec.arg.iter().flat_map(Program::columns));
            }
        }
        after.extend(self.subqueries.row_columns());
        after
    }

    /// The columns a plain SELECT of one table reads (its filter's too),
    /// when fewer than all: the scan decodes only those.
    fn single_table_wanted(&self) -> Option<&[bool]> {
        self.single_wanted
            .get_or_init(|| {
                let [src] = &self.sources[..] else {
                    return None;
                };
                let table = src.table()?;
                if self.for_update || self.extras.is_some() {
                    return None;
                }
                let mut read = self.columns_read_after_from();
                read.extend(src.filter.iter().flat_map(Program::columns));
                let width = table.types.len();
                if read.len() >= width {
                    return None;
                }
                Some((0..width as u32).map(|c| read.contains(&c)).collect())
            })
            .as_deref()
    }

    /// The columns of source `k` the plan reads, when it reads fewer.
    fn wanted(&self, k: usize) -> Option<&[bool]> {
        if self.joins.is_empty() {
            return self.single_table_wanted();
        }
        self.narrow_joins()
            .and_then(|n| n.wanted.get(k))
            .and_then(Option::as_deref)
    }

    /// Rows of `(output values, sort keys)` before DISTINCT/ORDER/LIMIT.
    fn project(
        &self,
        tx: &mut Transaction,
        params: &[Value],
    ) -> Result<Vec<(Vec<Value>, Vec<Value>)>> {
        let sort_exprs: Vec<&Program> = self
            .order
            .iter()
            .filter_map(|o| match &o.key {
                SortKey::Expr(p) => Some(p),
                SortKey::Output(_) => None,
            })
            .collect();
        let subqueries = &self.subqueries;
        let emit = |tx: &mut Transaction, input: &[Value]| -> Result<(Vec<Value>, Vec<Value>)> {
            let mut out = Vec::with_capacity(self.projection.len());
            for p in &self.projection {
                out.push(subqueries.eval(Some(&mut *tx), p, input, params)?);
            }
            let mut keys = Vec::with_capacity(sort_exprs.len());
            for p in &sort_exprs {
                keys.push(subqueries.eval(Some(&mut *tx), p, input, params)?);
            }
            Ok((out, keys))
        };
        let Some((ctx, having)) = &self.agg else {
            let (rows, layout) = self.joined_rows_reading(tx, params, true, true, None)?;
            let rows = crate::select_extras::apply(&self.extras, rows, params)?;
            let mut out = Vec::with_capacity(rows.len());
            let mut scratch = layout.map_or_else(Vec::new, Widen::scratch);
            for r in rows {
                match layout {
                    Some(layout) => {
                        layout.fill(r.values, &mut scratch);
                        out.push(emit(tx, &scratch)?);
                    }
                    None => out.push(emit(tx, &r.values)?),
                }
            }
            return Ok(out);
        };
        let aggregated = match self.device_aggregate(tx, params)? {
            Some(rows) => rows,
            None => match self.host_page_aggregate(tx, ctx, params)? {
                Some(rows) => rows,
                None => {
                    let layout = self.narrow_joins().map(|n| &n.last);
                    // Joined rows are folded by the threads that join them.
                    let threads = tx.host_workers();
                    if !self.joins.is_empty() && threads > 1 && PartedAggregate::exact(ctx) {
                        let agg = PartedAggregate::new(ctx, layout, params, threads);
                        let add = |order: u64, rows: Vec<Vec<Value>>| agg.add(order, rows);
                        self.joined_rows_reading(tx, params, true, true, Some(Sink::Parts(&add)))?;
                        agg.merged()?.finish()?
                    } else {
                        let mut agg = HostAggregate::new(ctx, layout, params);
                        let mut add = |row: Vec<Value>| agg.add(row);
                        self.joined_rows_reading(
                            tx,
                            params,
                            true,
                            true,
                            Some(Sink::Each(&mut add)),
                        )?;
                        agg.finish()?
                    }
                }
            },
        };
        let mut out = Vec::with_capacity(aggregated.len());
        for row in aggregated {
            if let Some(h) = having {
                if !subqueries.eval_predicate(Some(&mut *tx), h, &row, params)? {
                    continue;
                }
            }
            out.push(emit(tx, &row)?);
        }
        Ok(out)
    }

    /// A one-table aggregate on the host through the scan core (page by
    /// page, typed kernels, `host_workers` threads): rows `[groups…,
    /// aggregates…]`; `None` for plans it does not cover (joins, primary-key
    /// lookups, FOR UPDATE), which aggregate row by row.
    fn host_page_aggregate(
        &self,
        tx: &Transaction,
        ctx: &AggContext,
        params: &[Value],
    ) -> Result<Option<Vec<Vec<Value>>>> {
        let [src] = &self.sources[..] else {
            return Ok(None);
        };
        let Some(table) = src.table() else {
            return Ok(None);
        };
        if !self.joins.is_empty()
            || self.filter.is_some()
            || !self.row_filter.is_empty()
            || self.for_update
            || !matches!(src.access, Access::Scan)
        {
            return Ok(None);
        }
        let aggs: Vec<AggSpec> = ctx.aggregates.iter().map(|a| a.spec.clone()).collect();
        let pipeline = Pipeline::new(
            &table.types,
            params,
            src.filter.as_ref(),
            PipelineOp::Aggregate {
                groups: ctx.group_programs.clone(),
                aggs: aggs.clone(),
            },
        );
        let out = match key_prefix_values(&src.key_prefix, params)? {
            Some(prefix) => tx.scan_pipeline_key_prefix(table, &prefix, &pipeline)?,
            None => tx.scan_pipeline(table, &pipeline)?,
        };
        Ok(Some(merge_groups(
            out.groups,
            !ctx.group_programs.is_empty(),
            &aggs,
        )?))
    }

    /// Whether this execution offloads (a transaction's own uncommitted
    /// writes to the table keep it on the host).
    fn offload(&self, tx: &Transaction) -> Option<&NdpPlacement> {
        let placement = self.ndp.as_ref()?;
        let table = self.sources.first()?.table()?;
        (!tx.has_writes_to(table)).then_some(placement)
    }

    /// The single table of a plan that reads one (UPDATE, DELETE, FOR UPDATE).
    pub fn target_table(&self) -> Result<&Arc<TableState>> {
        match self.sources.as_slice() {
            [src] => src
                .table()
                .ok_or_else(|| unsupported("this on a subquery in FROM")),
            _ => Err(unsupported("this with joins")),
        }
    }

    /// Whether every row the FROM items and WHERE give comes out (no
    /// aggregate, window function, LIMIT or OFFSET decides how many).
    pub(crate) fn returns_rows_as_read(&self) -> bool {
        self.agg.is_none() && self.extras.is_none() && self.limit.is_none() && self.offset.is_none()
    }

    /// Whether WHERE has terms evaluated per row with a subquery.
    pub fn has_row_filter(&self) -> bool {
        !self.row_filter.is_empty()
    }

    /// Forgets subquery answers memoized by an earlier execution.
    pub fn reset_caches(&self) {
        self.subqueries.reset();
        if let Some(shared) = &self.shared {
            shared.forget();
        }
        for src in &self.sources {
            if let Input::Derived(plan) = &src.input {
                plan.reset_caches();
            }
        }
    }

    /// The rows of this plan as a query in FROM, under the enclosing
    /// query's `params`.
    fn derived_rows(&self, tx: &mut Transaction, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        let txn = params.last().cloned().unwrap_or(Value::Null);
        let bound = self.subqueries.bind(tx, params, &[], txn)?;
        self.rows(tx, &bound)
    }

    /// The statement's parameters extended with this query's slots (see
    /// [`crate::subquery`]); `params` ends with the transaction time.
    pub fn bind_statement(&self, tx: &mut Transaction, params: &[Value]) -> Result<Vec<Value>> {
        self.reset_caches();
        let txn = params.last().cloned().unwrap_or(Value::Null);
        self.subqueries.bind(tx, params, &[], txn)
    }

    fn run_on_device(
        &self,
        tx: &mut Transaction,
        p: &NdpPlacement,
        params: &[Value],
    ) -> Result<Vec<Vec<Value>>> {
        let ts = self.target_table()?;
        let (rows, report) = if self.for_update {
            tx.ndp_lock_rows(ts, &p.request, params)?
        } else {
            tx.ndp_execute(ts, &p.request, params)?
        };
        if let Ok(mut last) = self.last_ndp.lock() {
            *last = Some(report);
        }
        Ok(rows)
    }

    fn device_scan(&self, tx: &mut Transaction, params: &[Value]) -> Result<Option<Vec<Joined>>> {
        let Some(p) = self.offload(tx).filter(|p| !p.aggregate) else {
            return Ok(None);
        };
        let width = self.target_table()?.types.len();
        let rows = self.run_on_device(tx, p, params)?;
        Ok(Some(
            rows.into_iter()
                .map(|r| {
                    let mut values = vec![Value::Null; width];
                    for (v, &c) in r.into_iter().zip(&p.columns) {
                        values[c as usize] = v;
                    }
                    Joined {
                        values,
                        ids: Vec::new(),
                    }
                })
                .collect(),
        ))
    }

    fn device_aggregate(
        &self,
        tx: &mut Transaction,
        params: &[Value],
    ) -> Result<Option<Vec<Vec<Value>>>> {
        match self.offload(tx).filter(|p| p.aggregate) {
            Some(p) => Ok(Some(self.run_on_device(tx, p, params)?)),
            None => Ok(None),
        }
    }

    /// Decides where the scan runs (DESIGN.md §9). Only single-table plans
    /// without a primary-key lookup offload; with FOR UPDATE the device
    /// also locks the rows (`NdpOp::LockRows`).
    pub fn place(&mut self, mode: NdpMode, pes: u16, preload: bool, db: &Database) {
        self.ndp = None;
        self.subqueries.place(mode, pes, preload, db);
        for src in &mut self.sources {
            if let Input::Derived(plan) = &mut src.input {
                plan.place(mode, pes, preload, db);
            }
        }
        if mode == NdpMode::Off || self.sources.len() != 1 || self.extras.is_some() {
            return;
        }
        if self.for_update && self.agg.is_some() {
            return;
        }
        // Rows that need a subquery each are aggregated on the host.
        if self.agg.is_some() && !self.row_filter.is_empty() {
            return;
        }
        let src = &self.sources[0];
        let Some(table) = src.table().cloned() else {
            return;
        };
        // A range over an index (no equality prefix) may still be a scan
        // on the device, as before the index existed; a key lookup stays.
        let index_range = matches!(&src.access, Access::Index(ix) if ix.prefix.is_empty());
        if !matches!(src.access, Access::Scan) && !index_range {
            return;
        }
        let (op, aggregate, columns) = match &self.agg {
            Some((ctx, _)) => (
                NdpOp::Aggregate {
                    groups: ctx.group_programs.clone(),
                    aggs: ctx.aggregates.iter().map(|a| a.spec.clone()).collect(),
                },
                true,
                Vec::new(),
            ),
            None => {
                let mut cols: Vec<u32> = self.projection.iter().flat_map(|p| p.columns()).collect();
                for o in &self.order {
                    if let SortKey::Expr(p) = &o.key {
                        cols.extend(p.columns());
                    }
                }
                if let Some(f) = &self.filter {
                    cols.extend(f.columns());
                }
                for f in &self.row_filter {
                    cols.extend(f.columns());
                }
                cols.extend(self.subqueries.row_columns());
                cols.sort_unstable();
                cols.dedup();
                let op = if self.for_update {
                    NdpOp::LockRows {
                        columns: cols.clone(),
                    }
                } else {
                    NdpOp::Scan {
                        columns: cols.clone(),
                    }
                };
                (op, false, cols)
            }
        };
        let reason = match mode {
            NdpMode::On => "ndp = on".to_string(),
            _ => {
                let est = crate::placement::estimate(db, &table, &op, src.filter.is_some(), pes);
                if !est.device_wins() {
                    return;
                }
                est.describe()
            }
        };
        if index_range {
            self.sources[0].access = Access::Scan;
        }
        let src = &self.sources[0];
        self.ndp = Some(NdpPlacement {
            request: NdpRequest {
                filter: src.filter.clone(),
                conjuncts: src.conjuncts.clone(),
                op,
                pes,
                preload,
            },
            aggregate,
            columns,
            reason,
        });
    }

    /// EXPLAIN lines for this plan.
    pub fn explain(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let on_device = |i: usize| i == 0 && self.ndp.is_some();
        if let Some((ctx, having)) = &self.agg {
            let side = if self.ndp.as_ref().is_some_and(|p| p.aggregate) {
                "device"
            } else {
                "host"
            };
            lines.push(format!(
                "Aggregate [{side}] groups={} aggregates={}{}",
                ctx.group_programs.len(),
                ctx.aggregates.len(),
                if having.is_some() { " having" } else { "" }
            ));
        }
        if self.joins.iter().any(|j| j.kind != JoinKind::Inner) {
            let kinds: Vec<&str> = self.joins.iter().map(|j| j.kind.explain()).collect();
            lines.push(format!(
                "{} [host] tables={}",
                kinds.join(", "),
                self.sources.len()
            ));
        } else if self.joins.iter().any(|j| !j.left_keys.is_empty()) || self.sources.len() > 1 {
            lines.push(format!("Hash Join [host] tables={}", self.sources.len()));
        }
        if !self.row_filter.is_empty() {
            lines.push(format!(
                "Filter [host] subquery conditions={}",
                self.row_filter.len()
            ));
        }
        for (i, src) in self.sources.iter().enumerate() {
            let access = match &src.input {
                Input::Derived(_) => "Subquery Scan".to_string(),
                Input::Rows(r) => r.explain().to_string(),
                Input::Table(_) => src.access.explain(),
            };
            let side = if on_device(i) { "device" } else { "host" };
            let name = match &src.input {
                Input::Table(t) => t.meta().name.clone(),
                Input::Derived(_) | Input::Rows(_) => src.alias.clone(),
            };
            lines.push(format!(
                "  {access} on {name} [{side}]{}",
                if src.filter.is_some() { " filter" } else { "" }
            ));
            if let Input::Derived(plan) = &src.input {
                if let Some(shared) = plan.shared.as_ref().filter(|s| s.references() > 1) {
                    lines.push(format!(
                        "    computed once per execution for the view's {} references",
                        shared.references()
                    ));
                }
            }
            if i == 0 && self.key_order_read.is_some() {
                lines.push("    in key order, stopping at the LIMIT".into());
            }
            if let Some(lookup) = i.checked_sub(1).and_then(|k| self.joins[k].lookup.as_ref()) {
                lines.push(format!(
                    "    or a lookup in {} per joined row, when they are few",
                    lookup.index
                ));
            }
            if let Input::Derived(plan) = &src.input {
                lines.extend(plan.explain().into_iter().map(|l| format!("    {l}")));
            }
            if on_device(i) {
                if let Some(p) = &self.ndp {
                    lines.push(format!("    placement: {}", p.reason));
                    if !p.aggregate {
                        lines.push(format!("    columns returned: {:?}", p.columns));
                    }
                    if self.for_update {
                        lines.push("    locks rows in the shared lock table (FOR UPDATE)".into());
                    }
                }
            }
        }
        lines.extend(self.subqueries.explain());
        lines
    }

    /// Runs the query: `params` are the statement's, the transaction time last.
    pub fn execute(&self, tx: &mut Transaction, params: &[Value]) -> Result<Output> {
        let bound = self.bind_statement(tx, params)?;
        let rows = self.rows(tx, &bound)?;
        Ok(Output::Rows {
            columns: self.columns.clone(),
            rows,
        })
    }

    /// The result rows handed to `visit` one at a time, in no particular
    /// order, with `params` bound. A plain read of one table on the host
    /// streams (no row list is made); other plans compute [`Self::rows`].
    pub(crate) fn each_row(
        &self,
        tx: &mut Transaction,
        params: &[Value],
        mut visit: impl FnMut(Vec<Value>) -> Result<()>,
    ) -> Result<()> {
        let plain = self.sources.len() == 1
            && self.joins.is_empty()
            && self.returns_rows_as_read()
            && !self.distinct
            && self.order.is_empty()
            && !self.for_update
            && self.row_filter.is_empty()
            && !self.subqueries.has_per_row()
            && self.ndp.is_none();
        if !plain {
            for r in self.rows(tx, params)? {
                visit(r)?;
            }
            return Ok(());
        }
        let src = &self.sources[0];
        // Columns projected as they are (a hashed subquery's keys): the
        // rows are read as projected, never widened to the table's width.
        let columns: Option<Vec<usize>> = match &self.filter {
            Some(_) => None,
            None => self.projection.iter().map(Program::single_column).collect(),
        };
        if let Some(columns) = columns.filter(|c| distinct_columns(c)) {
            let wanted = self.wanted(0);
            return self.read_source_each(tx, src, params, wanted, Some(&columns), |_, _, row| {
                visit(row)
            });
        }
        self.read_source_each(tx, src, params, self.wanted(0), None, |_, _, row| {
            if let Some(f) = &self.filter {
                if !f.eval_predicate(&row, params)? {
                    return Ok(());
                }
            }
            let mut out = Vec::with_capacity(self.projection.len());
            for p in &self.projection {
                out.push(p.eval(&row, params)?);
            }
            visit(out)
        })
    }

    /// The result rows, with `params` bound (see [`Bindings::bind`]).
    pub fn rows(&self, tx: &mut Transaction, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        let mut rows = self.project(tx, params)?;
        if self.distinct {
            let mut seen = HashSet::new();
            rows.retain(|(out, _)| seen.insert(key_of(out)));
        }
        if !self.order.is_empty() {
            let mut err = None;
            rows.sort_by(|a, b| {
                let mut e = 0;
                for o in &self.order {
                    let (x, y) = match o.key {
                        SortKey::Output(i) => (&a.0[i], &b.0[i]),
                        SortKey::Expr(_) => {
                            let r = (&a.1[e], &b.1[e]);
                            e += 1;
                            r
                        }
                    };
                    let ord = match (x.is_null(), y.is_null()) {
                        (true, true) => Ordering::Equal,
                        (true, false) => {
                            if o.nulls_first {
                                Ordering::Less
                            } else {
                                Ordering::Greater
                            }
                        }
                        (false, true) => {
                            if o.nulls_first {
                                Ordering::Greater
                            } else {
                                Ordering::Less
                            }
                        }
                        _ => {
                            let c = x.sql_cmp(y).unwrap_or_else(|| {
                                err.get_or_insert(());
                                Ordering::Equal
                            });
                            if o.desc {
                                c.reverse()
                            } else {
                                c
                            }
                        }
                    };
                    if ord != Ordering::Equal {
                        return ord;
                    }
                }
                Ordering::Equal
            });
        }
        let count = |p: &Option<Program>, what: &str| -> Result<Option<usize>> {
            let Some(p) = p else { return Ok(None) };
            match p.eval(&[], params)? {
                Value::Null => Ok(None),
                v => match v.as_i64() {
                    Some(n) if n >= 0 => Ok(Some(n as usize)),
                    Some(_) => Err(Error::new(
                        SqlState::INVALID_ROW_COUNT_IN_LIMIT_CLAUSE,
                        format!("{what} must not be negative"),
                    )),
                    None => Err(Error::new(
                        SqlState::DATATYPE_MISMATCH,
                        format!("argument of {what} must be an integer"),
                    )),
                },
            }
        };
        let offset = count(&self.offset, "OFFSET")?.unwrap_or(0);
        let limit = count(&self.limit, "LIMIT")?;
        Ok(rows
            .into_iter()
            .skip(offset)
            .take(limit.unwrap_or(usize::MAX))
            .map(|(out, _)| out)
            .collect())
    }

    /// Rows matching FROM + WHERE of a single-table plan, with their ids
    /// (used by UPDATE and DELETE). The rows are whole: a DML filter plan
    /// is never placed on the device (which returns projected columns).
    pub fn matching(
        &self,
        tx: &mut Transaction,
        params: &[Value],
    ) -> Result<Vec<(Vid, RecId, Vec<Value>)>> {
        let (rows, layout) = self.joined_rows_reading(tx, params, true, false, None)?;
        Ok(widen_all(rows, layout)
            .into_iter()
            .map(|j| (j.ids[0].0, j.ids[0].1, j.values))
            .collect())
    }

    /// Re-checks WHERE on a newer version of a row (READ COMMITTED);
    /// `params` as [`SelectPlan::bind_statement`] made them. Subqueries
    /// answer from what they computed for the first version: the
    /// statement's snapshot has not changed.
    pub fn recheck(&self, row: &[Value], params: &[Value]) -> Result<bool> {
        let a = match &self.sources[0].filter {
            Some(f) => f.eval_predicate(row, params)?,
            None => true,
        };
        let b = match &self.filter {
            Some(f) => f.eval_predicate(row, params)?,
            None => true,
        };
        if !(a && b) {
            return Ok(false);
        }
        for f in &self.row_filter {
            if !self.subqueries.eval_predicate(None, f, row, params)? {
                return Ok(false);
            }
        }
        Ok(true)
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
    let (tables, _) = plan_from(std::slice::from_ref(table), &ctx, params)?;
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
    Ok(SelectPlan {
        sources: vec![Source {
            input: Input::Table(ts),
            alias,
            access,
            key_prefix,
            filter,
            conjuncts,
        }],
        joins: Vec::new(),
        filter: None,
        row_filter,
        subqueries,
        agg: None,
        input_scope: scope,
        projection: Vec::new(),
        columns: Vec::new(),
        order: Vec::new(),
        distinct: false,
        limit: None,
        key_order_read: None,
        offset: None,
        for_update: false,
        ndp: None,
        last_ndp: Mutex::new(None),
        extras: None,
        narrow: std::sync::OnceLock::new(),
        single_wanted: std::sync::OnceLock::new(),
        last_steps: Mutex::new(Vec::new()),
        shared: None,
    })
}
