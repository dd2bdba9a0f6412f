//! Views: `CREATE [OR REPLACE] VIEW name [(columns)] AS query`, `DROP
//! VIEW [IF EXISTS] name, … [CASCADE | RESTRICT]`, and the rules views
//! impose on other statements (dependencies, table-only statements,
//! writes).
//!
//! A view is stored in the catalog (`host/src/catalog.rs`, section 3 of
//! `catalog.bin`) as the text of its query, its columns (names and
//! types) and the relations the query reads directly. The catalog file
//! is replaced atomically by every DDL statement, so a view survives a
//! restart or a crash as a table's definition does; and like every DDL
//! statement in ndpdb, CREATE and DROP VIEW take effect at once and for
//! good, also inside a transaction block (a ROLLBACK does not undo
//! them; PostgreSQL's would).
//!
//! ```text
//!  CREATE VIEW v (a, b) AS SELECT * FROM t
//!    1. plan the query once (unknown tables and columns fail here, with
//!       PostgreSQL's SQLSTATEs; `$n` is 42P02)
//!    2. expand the top-level `*` / `t.*` into `t.x, t.y` as PostgreSQL
//!       does, so a column added to t later does not change the view
//!    3. store the query as sqlparser prints it; plan that text again,
//!       noting every table and view it reads by name (the dependencies)
//!    4. columns: the list's names, then the query's; types as planned
//! ```
//!
//! Reading a view in FROM is `plan/view.rs`.
//!
//! CREATE OR REPLACE VIEW keeps the view's columns: the new query may
//! only add columns at the end (42P16 otherwise, with PostgreSQL's
//! messages). A definition that would read itself through other views
//! is refused (42P17). Dependencies follow PostgreSQL: DROP TABLE or
//! DROP VIEW of a relation that views read is 2BP01 unless CASCADE,
//! which drops those views and the views on them (no NOTICE is sent);
//! ALTER TABLE … DROP COLUMN is 2BP01 when a view's query names the
//! column (CASCADE drops the view), where PostgreSQL tracks the column
//! use exactly and ndpdb looks for the column's name in the query text.
//!
//! What only tables do fails on a view with PostgreSQL's 42809 (DROP
//! TABLE / SEQUENCE / INDEX, TRUNCATE, ALTER TABLE, CREATE INDEX);
//! ANALYZE and VACUUM skip it with PostgreSQL's WARNING.
//!
//! Not built: writing through a view. PostgreSQL makes simple views
//! automatically updatable; ndpdb refuses INSERT, UPDATE and DELETE on
//! every view with 0A000. Also not: materialized, temporary and
//! recursive views, `WITH CHECK OPTION`, ALTER VIEW, and the session's
//! values (`current_user`, `current_setting(…)`) in a view's query.

use std::sync::Arc;

use ndpdb_formats::{Column, DataType, SqlState};
use ndpdb_host::catalog::RelKind;
use ndpdb_host::{Database, ViewMeta};
use sqlparser::ast::{
    CreateTableOptions, CreateView, Expr, Ident, ObjectName, Query, SelectItem,
    SelectItemQualifiedWildcardKind, SetExpr, Statement, TableFactor, Visit, Visitor, With,
};

use crate::bind::scope::ident_name;
use crate::bind::scope::{table_name, USING_QUALIFIER};
use crate::output::{Notice, Output};
use crate::plan::query::{bare_query, plan_query};
use crate::plan::subquery::max_placeholder;
use crate::plan::view::{noting_reads, parse_query};
use crate::{Error, Result};

fn unsupported(what: &str) -> Error {
    Error::new(
        SqlState::FEATURE_NOT_SUPPORTED,
        format!("{what} is not supported"),
    )
}

/// PostgreSQL 15's keywords that are not unreserved (`pg_get_keywords()`
/// with `catcode <> 'U'`): the names its `quote_ident` quotes.
#[rustfmt::skip]
const PG_KEYWORDS: &[&str] = &[
    "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric",
    "authorization", "between", "bigint", "binary", "bit", "boolean", "both", "case", "cast",
    "char", "character", "check", "coalesce", "collate", "collation", "column", "concurrently",
    "constraint", "create", "cross", "current_catalog", "current_date", "current_role",
    "current_schema", "current_time", "current_timestamp", "current_user", "dec", "decimal",
    "default", "deferrable", "desc", "distinct", "do", "else", "end", "except", "exists",
    "extract", "false", "fetch", "float", "for", "foreign", "freeze", "from", "full", "grant",
    "greatest", "group", "grouping", "having", "ilike", "in", "initially", "inner", "inout",
    "int", "integer", "intersect", "interval", "into", "is", "isnull", "join", "lateral",
    "leading", "least", "left", "like", "limit", "localtime", "localtimestamp", "national",
    "natural", "nchar", "none", "normalize", "not", "notnull", "null", "nullif", "numeric",
    "offset", "on", "only", "or", "order", "out", "outer", "overlaps", "overlay", "placing",
    "position", "precision", "primary", "real", "references", "returning", "right", "row",
    "select", "session_user", "setof", "similar", "smallint", "some", "substring", "symmetric",
    "table", "tablesample", "then", "time", "timestamp", "to", "trailing", "treat", "trim",
    "true", "union", "unique", "user", "using", "values", "varchar", "variadic", "verbose",
    "when", "where", "window", "with", "xmlattributes", "xmlconcat", "xmlelement", "xmlexists",
    "xmlforest", "xmlnamespaces", "xmlparse", "xmlpi", "xmlroot", "xmlserialize", "xmltable",
];

/// An identifier as PostgreSQL prints it: quoted unless it is a plain
/// lower-case name that no reserved keyword spells.
fn ident(name: &str) -> Ident {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain && PG_KEYWORDS.binary_search(&name).is_err() {
        Ident::new(name)
    } else {
        Ident::with_quote('"', name)
    }
}

/// Replaces the top-level `*` and `t.*` of `q` by the columns they
/// stand for now (`from`: the FROM list's columns as (table, column);
/// `star`: those `*` lists, [`Scope::star_columns`]: a `JOIN … USING`
/// column once, unqualified).
///
/// [`Scope::star_columns`]: crate::bind::scope::Scope::star_columns
fn expand_wildcards(
    q: &mut Query,
    from: &[(String, String)],
    star: &[(String, String)],
) -> Result<()> {
    let SetExpr::Select(select) = q.body.as_mut() else {
        return Ok(());
    };
    let column = |(t, c): &(String, String)| match t.starts_with(USING_QUALIFIER) {
        true => SelectItem::UnnamedExpr(Expr::Identifier(ident(c))),
        false => SelectItem::UnnamedExpr(Expr::CompoundIdentifier(vec![ident(t), ident(c)])),
    };
    let mut items = Vec::with_capacity(select.projection.len());
    for item in std::mem::take(&mut select.projection) {
        match item {
            SelectItem::Wildcard(_) => items.extend(star.iter().map(column)),
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(t), _) => {
                let t = table_name(&t)?;
                items.extend(from.iter().filter(|(table, _)| *table == t).map(column));
            }
            other => items.push(other),
        }
    }
    select.projection = items;
    Ok(())
}

/// The wildcards of each SELECT inside a set operation, expanded over
/// that SELECT's own FROM list (planned alone, seeing `with`).
fn expand_side_wildcards(db: &Database, body: &mut SetExpr, with: &Option<With>) -> Result<()> {
    let SetExpr::SetOperation { left, right, .. } = body else {
        return Ok(());
    };
    for side in [left, right] {
        match side.as_mut() {
            SetExpr::Query(q) => {
                if q.with.is_none() {
                    q.with = with.clone();
                    expand_query_wildcards(db, q)?;
                    q.with = None;
                } else {
                    expand_query_wildcards(db, q)?;
                }
            }
            SetExpr::SetOperation { .. } => expand_side_wildcards(db, side, with)?,
            SetExpr::Select(_) => {
                let mut alone = bare_query(with.clone(), side.as_ref().clone());
                expand_query_wildcards(db, &mut alone)?;
                *side = alone.body;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Expands `q`'s top-level wildcards over its FROM list, then those of
/// the SELECTs of a set operation in its body.
fn expand_query_wildcards(db: &Database, q: &mut Query) -> Result<()> {
    if let SetExpr::Select(s) = q.body.as_ref() {
        let wildcard = s.projection.iter().any(|i| {
            matches!(
                i,
                SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
            )
        });
        if wildcard {
            let plan = plan_query(db, q, &mut Vec::new())?;
            let from: Vec<(String, String)> = plan
                .input_scope
                .columns
                .iter()
                .map(|c| (c.table.clone(), c.name.clone()))
                .collect();
            expand_wildcards(q, &from, &plan.input_scope.star_columns())?;
        }
    }
    let with = q.with.clone();
    expand_side_wildcards(db, q.body.as_mut(), &with)
}

/// `CREATE [OR REPLACE] VIEW`.
pub fn create_view(db: &Database, cv: &CreateView) -> Result<Output> {
    if cv.materialized {
        return Err(unsupported("CREATE MATERIALIZED VIEW"));
    }
    if cv.temporary {
        return Err(unsupported("CREATE TEMPORARY VIEW"));
    }
    if cv.or_alter
        || cv.secure
        || cv.if_not_exists
        || cv.to.is_some()
        || cv.params.is_some()
        || cv.comment.is_some()
        || cv.copy_grants
        || cv.with_no_schema_binding
        || !cv.cluster_by.is_empty()
        || !matches!(cv.options, CreateTableOptions::None)
    {
        return Err(unsupported("this form of CREATE VIEW"));
    }
    let name = table_name(&cv.name)?;
    let mut names = Vec::with_capacity(cv.columns.len());
    for c in &cv.columns {
        if c.data_type.is_some() || c.options.is_some() {
            return Err(Error::new(
                SqlState::SYNTAX_ERROR,
                format!("syntax error at or near \"{}\"", c.name),
            ));
        }
        names.push(ident_name(&c.name));
    }
    let existing = db.view(&name);
    if cv.or_replace && existing.is_none() && db.relation_exists(&name) {
        return Err(Error::new(
            SqlState::WRONG_OBJECT_TYPE,
            format!("\"{name}\" is not a view"),
        ));
    }
    if max_placeholder(cv.query.as_ref()) > 0 {
        return Err(Error::new(
            SqlState::UNDEFINED_PARAMETER,
            "there is no parameter $1",
        ));
    }
    // 1–2: plan once; expand the wildcards over the FROM list's columns.
    let first = plan_query(db, &cv.query, &mut Vec::new())?;
    let from: Vec<(String, String)> = first
        .input_scope
        .columns
        .iter()
        .map(|c| (c.table.clone(), c.name.clone()))
        .collect();
    let mut query = cv.query.as_ref().clone();
    expand_wildcards(&mut query, &from, &first.input_scope.star_columns())?;
    let with = query.with.clone();
    expand_side_wildcards(db, query.body.as_mut(), &with)?;
    // 3: the text stored is the text planned.
    let sql = query.to_string();
    let stored = ViewMeta {
        id: ndpdb_formats::TableId(0),
        name: name.clone(),
        sql: sql.clone(),
        columns: Vec::new(),
        depends: Vec::new(),
    };
    let reparsed = parse_query(&stored)?;
    let (plan, depends) = noting_reads(|| plan_query(db, &reparsed, &mut Vec::new()))?;
    let planned: Vec<(String, DataType)> = plan
        .columns
        .iter()
        .map(|c| (c.name.clone(), c.ty))
        .collect();
    let before: Vec<(String, DataType)> = first
        .columns
        .iter()
        .map(|c| (c.name.clone(), c.ty))
        .collect();
    if planned != before {
        return Err(Error::new(
            SqlState::INTERNAL_ERROR,
            format!("the query of view \"{name}\" does not keep its columns when stored"),
        ));
    }
    // 4: the columns.
    if names.len() > planned.len() {
        return Err(Error::new(
            SqlState::SYNTAX_ERROR,
            "CREATE VIEW specifies more column names than columns",
        ));
    }
    let columns: Vec<Column> = planned
        .iter()
        .enumerate()
        .map(|(i, (n, ty))| Column {
            name: names.get(i).cloned().unwrap_or_else(|| n.clone()),
            ty: *ty,
            nullable: true,
        })
        .collect();
    for (i, c) in columns.iter().enumerate() {
        if columns[..i].iter().any(|o| o.name == c.name) {
            return Err(Error::new(
                SqlState::DUPLICATE_COLUMN,
                format!("column \"{}\" specified more than once", c.name),
            ));
        }
    }
    if let (Some(old), true) = (&existing, cv.or_replace) {
        keeps_columns(old, &columns)?;
    }
    db.create_view(&name, sql, columns, depends, cv.or_replace)?;
    Ok(Output::command("CREATE VIEW"))
}

/// CREATE OR REPLACE VIEW: the new columns begin with the old ones.
fn keeps_columns(old: &ViewMeta, new: &[Column]) -> Result<()> {
    let refuse = |msg: String| Error::new(SqlState::INVALID_TABLE_DEFINITION, msg);
    if new.len() < old.columns.len() {
        return Err(refuse("cannot drop columns from view".into()));
    }
    for (o, n) in old.columns.iter().zip(new) {
        if o.name != n.name {
            return Err(refuse(format!(
                "cannot change name of view column \"{}\" to \"{}\"",
                o.name, n.name
            ))
            .with_hint(
                "Use ALTER VIEW ... RENAME COLUMN ... to change name of view column instead.",
            ));
        }
        if o.ty != n.ty {
            return Err(refuse(format!(
                "cannot change data type of view column \"{}\" from {} to {}",
                o.name,
                o.ty.sql_name(),
                n.ty.sql_name()
            )));
        }
    }
    Ok(())
}

/// What a relation of the wrong kind is told to use instead.
fn drop_hint(kind: RelKind) -> &'static str {
    match kind {
        RelKind::Table => "Use DROP TABLE to remove a table.",
        RelKind::View => "Use DROP VIEW to remove a view.",
    }
}

/// Whether `name` is a table or a view (or neither).
pub(crate) fn kind_of(db: &Database, name: &str) -> Option<RelKind> {
    if db.view(name).is_some() {
        Some(RelKind::View)
    } else if db.table(name).is_ok() {
        Some(RelKind::Table)
    } else {
        None
    }
}

/// `DROP TABLE` and `DROP VIEW` (`want`): every name is checked first
/// (missing: 42P01 unless IF EXISTS; the other kind: 42809), then the
/// relations go together, with the views on them if `cascade`.
pub fn drop_relations(
    db: &Database,
    want: RelKind,
    if_exists: bool,
    names: &[ObjectName],
    cascade: bool,
    notices: &mut Vec<Notice>,
) -> Result<Output> {
    let mut found = Vec::new();
    for n in names {
        let name = table_name(n)?;
        match kind_of(db, &name) {
            Some(k) if k == want => {
                if !found.contains(&name) {
                    found.push(name);
                }
            }
            Some(k) => {
                return Err(Error::new(
                    SqlState::WRONG_OBJECT_TYPE,
                    format!("\"{name}\" is not a {}", want.word()),
                )
                .with_hint(drop_hint(k)))
            }
            None if if_exists => notices.push(Notice::info(format!(
                "{} \"{name}\" does not exist, skipping",
                want.word()
            ))),
            None => {
                return Err(Error::new(
                    SqlState::UNDEFINED_TABLE,
                    format!("{} \"{name}\" does not exist", want.word()),
                ))
            }
        }
    }
    if !found.is_empty() {
        let others = db.drop_relations(&found, cascade)?;
        match others.as_slice() {
            [] => {}
            [one] => notices.push(Notice::info(format!("drop cascades to {one}"))),
            many => notices.push(
                Notice::info(format!("drop cascades to {} other objects", many.len())).with_detail(
                    many.iter()
                        .map(|o| format!("drop cascades to {o}"))
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
            ),
        }
    }
    Ok(Output::command(match want {
        RelKind::Table => "DROP TABLE",
        RelKind::View => "DROP VIEW",
    }))
}

/// DROP SEQUENCE / DROP INDEX (`what`) naming a view: 42809.
pub fn refuse_other_drop(db: &Database, what: &str, names: &[ObjectName]) -> Result<()> {
    for n in names {
        if let Ok(name) = table_name(n) {
            if db.view(&name).is_some() {
                return Err(Error::new(
                    SqlState::WRONG_OBJECT_TYPE,
                    format!("\"{name}\" is not {what}"),
                )
                .with_hint(drop_hint(RelKind::View)));
            }
        }
    }
    Ok(())
}

/// INSERT / UPDATE / DELETE whose target is a view: 0A000.
pub(crate) fn refuse_write(db: &Database, stmt: &Statement) -> Result<()> {
    use sqlparser::ast::{FromTable, TableObject};
    let (verb, target) = match stmt {
        Statement::Insert(i) => match &i.table {
            TableObject::TableName(n) => ("insert into", Some(n)),
            _ => return Ok(()),
        },
        Statement::Update(u) => ("update", relation_name(&u.table.relation)),
        Statement::Delete(d) => match &d.from {
            FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => (
                "delete from",
                t.first().and_then(|t| relation_name(&t.relation)),
            ),
        },
        _ => return Ok(()),
    };
    let Some(name) = target.and_then(|n| table_name(n).ok()) else {
        return Ok(());
    };
    if db.view(&name).is_none() {
        return Ok(());
    }
    Err(Error::new(
        SqlState::FEATURE_NOT_SUPPORTED,
        format!("cannot {verb} view \"{name}\""),
    )
    .with_detail("ndpdb does not support writing through views.")
    .with_hint("Write to the tables the view reads instead."))
}

fn relation_name(tf: &TableFactor) -> Option<&ObjectName> {
    match tf {
        TableFactor::Table { name, .. } => Some(name),
        _ => None,
    }
}

/// An error for a table-only statement (`what`) that names view `name`,
/// if it is one: PostgreSQL's 42809 with its DETAIL.
pub fn not_for_views(db: &Database, name: &str, what: &str) -> Option<Error> {
    db.view(name).map(|_| {
        Error::new(SqlState::WRONG_OBJECT_TYPE, what.to_string())
            .with_detail("This operation is not supported for views.")
    })
}

/// Whether a view's query names column `column` (as `column` or
/// `x.column`): ALTER TABLE … DROP COLUMN keeps such views' columns.
fn names_column(view: &ViewMeta, column: &str) -> bool {
    struct Find<'a>(&'a str, bool);
    impl Visitor for Find<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> std::ops::ControlFlow<()> {
            let hit = match e {
                Expr::Identifier(id) => ident_name(id) == self.0,
                Expr::CompoundIdentifier(parts) => {
                    parts.last().is_some_and(|p| ident_name(p) == self.0)
                }
                _ => false,
            };
            if hit {
                self.1 = true;
                return std::ops::ControlFlow::Break(());
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    // A stored query that no longer parses counts as naming it.
    let Ok(q) = parse_query(view) else {
        return true;
    };
    let mut f = Find(column, false);
    let _ = q.visit(&mut f);
    f.1
}

/// ALTER TABLE `table` DROP COLUMN `column`: the views whose query names
/// it are 2BP01 unless `cascade`, which drops them (and the views on
/// them) first.
pub fn drop_column_dependents(
    db: &Database,
    table: &str,
    column: &str,
    cascade: bool,
) -> Result<()> {
    let mut direct: Vec<Arc<ViewMeta>> = db
        .views()
        .into_iter()
        .filter(|v| v.depends.iter().any(|d| d == table) && names_column(v, column))
        .collect();
    if direct.is_empty() {
        return Ok(());
    }
    direct.sort_by_key(|v| v.id.0);
    let names: Vec<String> = direct.iter().map(|v| v.name.clone()).collect();
    if cascade {
        db.drop_relations(&names, true)?;
        return Ok(());
    }
    let mut detail = Vec::new();
    for v in &direct {
        detail.push(format!(
            "view {} depends on column {column} of table {table}",
            v.name
        ));
        for d in db.view_dependents(std::slice::from_ref(&v.name)) {
            detail.push(format!(
                "view {} depends on {} {}",
                d.view,
                d.on_kind.word(),
                d.on
            ));
        }
    }
    Err(Error::new(
        SqlState::DEPENDENT_OBJECTS_STILL_EXIST,
        format!("cannot drop column {column} of table {table} because other objects depend on it"),
    )
    .with_detail(detail.join("\n"))
    .with_hint("Use DROP ... CASCADE to drop the dependent objects too."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_quoted_where_postgres_would() {
        assert_eq!(ident("amount").to_string(), "amount");
        assert_eq!(ident("Amount").to_string(), "\"Amount\"");
        assert_eq!(ident("select").to_string(), "\"select\"");
        assert_eq!(ident("user").to_string(), "\"user\"");
        assert_eq!(ident("id").to_string(), "id");
        assert_eq!(ident("value").to_string(), "value");
        assert_eq!(ident("*VALUES*").to_string(), "\"*VALUES*\"");
        assert_eq!(ident("a b").to_string(), "\"a b\"");
    }

    #[test]
    fn wildcards_expand_to_the_from_lists_columns() {
        let parse = |sql: &str| match crate::parse::parse(sql).unwrap().pop() {
            Some(Statement::Query(q)) => *q,
            _ => panic!("not a query"),
        };
        let from = vec![
            ("t".to_string(), "a".to_string()),
            ("t".to_string(), "Order".to_string()),
            ("u".to_string(), "c".to_string()),
        ];
        let mut q = parse("SELECT *, 1 AS one FROM t, u");
        expand_wildcards(&mut q, &from, &from).unwrap();
        assert_eq!(
            q.to_string(),
            "SELECT t.a, t.\"Order\", u.c, 1 AS one FROM t, u"
        );
        let mut q = parse("SELECT u.*, t.a FROM t, u");
        expand_wildcards(&mut q, &from, &from).unwrap();
        assert_eq!(q.to_string(), "SELECT u.c, t.a FROM t, u");
    }
}
