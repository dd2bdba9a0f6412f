//! `CREATE [UNIQUE] INDEX` and `DROP INDEX` in PostgreSQL's grammar: B-tree
//! indexes on columns (`host/src/storage/secondary_index/`). Expressions, partial
//! indexes (WHERE), INCLUDE and other access methods are refused with
//! 0A000; an unnamed index gets PostgreSQL's name (`t_a_b_idx`, then
//! `t_a_b_idx1`, …). The build waits until no other transaction runs; it
//! runs inside a transaction block that has changed no rows (0A000 in one
//! that has), and the block's ROLLBACK drops it (`session/ddl_undo.rs`).

use std::time::Duration;

use ndpdb_formats::SqlState;
use ndpdb_host::catalog::IndexMeta;
use ndpdb_host::interrupt::Interrupt;
use ndpdb_host::{Database, Transaction};
use sqlparser::ast::{CreateIndex, Expr, IndexType, ObjectName};

use crate::bind::scope::ident_name;
use crate::bind::scope::table_name;
use crate::output::Output;
use crate::{Error, Result};

fn unsupported(what: &str) -> Error {
    Error::new(
        SqlState::FEATURE_NOT_SUPPORTED,
        format!("{what} is not supported"),
    )
}

fn relation_exists(db: &Database, name: &str) -> bool {
    db.relation_exists(name)
}

/// PostgreSQL's name for an unnamed index: `table_col…_idx[N]`.
fn default_name(db: &Database, table: &str, columns: &[String]) -> String {
    let base = format!("{table}_{}_idx", columns.join("_"));
    let mut name = base.clone();
    let mut n = 0;
    while relation_exists(db, &name) {
        n += 1;
        name = format!("{base}{n}");
    }
    name
}

pub fn create_index(
    db: &Database,
    ci: &CreateIndex,
    wait: Duration,
    interrupt: &Interrupt,
    own: Option<&Transaction>,
) -> Result<Output> {
    if ci.predicate.is_some() {
        return Err(unsupported("a partial index (CREATE INDEX … WHERE)"));
    }
    if !ci.include.is_empty() {
        return Err(unsupported("INCLUDE"));
    }
    if ci.concurrently {
        return Err(unsupported("CREATE INDEX CONCURRENTLY"));
    }
    match &ci.using {
        None | Some(IndexType::BTree) => {}
        Some(t) => return Err(unsupported(&format!("index access method {t}"))),
    }
    let table = table_name(&ci.table_name)?;
    if let Some(e) = crate::ddl::view::not_for_views(
        db,
        &table,
        &format!("cannot create index on relation \"{table}\""),
    ) {
        return Err(e);
    }
    let ts = db.table(&table)?;
    let meta = ts.meta();
    let mut names = Vec::new();
    let mut columns = Vec::new();
    for c in &ci.columns {
        let name = match &c.column.expr {
            Expr::Identifier(id) => ident_name(id),
            _ => return Err(unsupported("an index on an expression")),
        };
        let pos = meta
            .schema
            .columns
            .iter()
            .position(|col| col.name == name)
            .ok_or_else(|| {
                Error::new(
                    SqlState::UNDEFINED_COLUMN,
                    format!("column \"{name}\" does not exist"),
                )
            })?;
        names.push(name);
        columns.push(pos);
    }
    let name = match &ci.name {
        Some(n) => index_name(n)?,
        None => default_name(db, &table, &names),
    };
    if relation_exists(db, &name) {
        if ci.if_not_exists {
            return Ok(Output::command("CREATE INDEX"));
        }
        return Err(Error::new(
            SqlState::DUPLICATE_TABLE,
            format!("relation \"{name}\" already exists"),
        ));
    }
    let index = IndexMeta {
        name,
        columns,
        unique: ci.unique,
        constraint: false,
    };
    db.create_index(&table, index, wait, interrupt, own)?;
    Ok(Output::command("CREATE INDEX"))
}

fn index_name(n: &ObjectName) -> Result<String> {
    table_name(n)
}

pub fn drop_index(
    db: &Database,
    if_exists: bool,
    names: &[ObjectName],
    notices: &mut Vec<crate::output::Notice>,
) -> Result<Output> {
    for n in names {
        let name = index_name(n)?;
        match db.drop_index(&name, false) {
            Ok(()) => {}
            Err(e) if if_exists && e.code == SqlState::UNDEFINED_OBJECT => notices.push(
                crate::output::Notice::info(format!("index \"{name}\" does not exist, skipping")),
            ),
            Err(e) => return Err(e),
        }
    }
    Ok(Output::command("DROP INDEX"))
}
