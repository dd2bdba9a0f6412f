//! `ALTER TABLE … ADD COLUMN` and `DROP COLUMN`: the table is rewritten
//! into its new layout (`host/src/storage/rewrite.rs`) while no transaction runs.
//!
//! ADD COLUMN fills existing rows with the column's default, evaluated
//! once (as PostgreSQL does for a non-volatile default), or NULL; `NOT
//! NULL` without a default fails on a non-empty table (23502). DROP
//! COLUMN drops the indexes that use the column, as PostgreSQL does.
//! Not built: SERIAL / identity / volatile defaults in ADD COLUMN, and
//! dropping a primary-key column (0A000).

use std::time::Duration;

use ndpdb_formats::{Column, Schema, SqlState, Value};
use ndpdb_host::catalog::{ColumnDefault, Identity, TableMeta};
use ndpdb_host::interrupt::Interrupt;
use ndpdb_host::storage::rewrite::{NewColumn, Rewrite};
use ndpdb_host::Database;
use sqlparser::ast::{ColumnDef, ColumnOption, Ident};

use crate::bind::compile::compile;
use crate::bind::scope::{ident_name, Scope};
use crate::bind::types::convert_type;
use crate::ddl::defaults::check_default;
use crate::ddl::sequence::serial_type;
use crate::plan::subquery::QueryContext;
use crate::{Error, Result};

fn unsupported(what: &str) -> Error {
    Error::new(
        SqlState::FEATURE_NOT_SUPPORTED,
        format!("{what} is not supported"),
    )
}

/// The rewrite that keeps every column of `meta` as it is.
fn identity_rewrite(meta: &TableMeta) -> Rewrite {
    Rewrite {
        schema: meta.schema.clone(),
        columns: (0..meta.schema.len()).map(NewColumn::Old).collect(),
        indexes: meta.indexes.clone(),
        defaults: meta.defaults.clone(),
        moved: (0..meta.schema.len()).map(|i| (i, Some(i))).collect(),
    }
}

pub fn add_column(
    db: &Database,
    table: &str,
    def: &ColumnDef,
    if_not_exists: bool,
    wait: Duration,
    interrupt: &Interrupt,
) -> Result<()> {
    let meta = db.table(table)?.meta();
    let name = ident_name(&def.name);
    if meta.schema.columns.iter().any(|c| c.name == name) {
        if if_not_exists {
            return Ok(());
        }
        return Err(Error::new(
            SqlState::DUPLICATE_COLUMN,
            format!("column \"{name}\" of relation \"{table}\" already exists"),
        ));
    }
    if serial_type(&def.data_type).is_some() {
        return Err(unsupported("ADD COLUMN of a serial column"));
    }
    let ty = convert_type(&def.data_type)?;
    let mut nullable = true;
    let mut default = None;
    for o in &def.options {
        match &o.option {
            ColumnOption::NotNull => nullable = false,
            ColumnOption::Null => nullable = true,
            ColumnOption::Default(e) => default = Some(e.clone()),
            other => return Err(unsupported(&format!("ADD COLUMN … {other}"))),
        }
    }
    let mut fill = Value::Null;
    if let Some(e) = &default {
        check_default(db, e)?;
        let ctx = QueryContext::new(db, 0, None, std::sync::Arc::new(Vec::new()));
        let mut params = Vec::new();
        let (p, _) = compile(e, &Scope::within(&ctx), &mut params)?;
        if !ctx.finish().is_empty() {
            return Err(unsupported("ADD COLUMN with a volatile default"));
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        fill = p.eval(&[], &[Value::Timestamp(now)])?.cast(&ty)?;
    }
    let mut r = identity_rewrite(&meta);
    let mut columns = meta.schema.columns.clone();
    columns.push(Column {
        name: name.clone(),
        ty,
        nullable,
    });
    r.schema = Schema::new(columns, meta.schema.primary_key.clone());
    r.columns.push(NewColumn::Value(fill));
    if let Some(e) = default {
        r.defaults.push(ColumnDefault {
            column: meta.schema.len(),
            expr: e.to_string(),
            identity: Identity::None,
        });
    }
    db.rewrite_table(table, r, wait, interrupt)
}

pub fn drop_columns(
    db: &Database,
    table: &str,
    names: &[Ident],
    if_exists: bool,
    cascade: bool,
    wait: Duration,
    interrupt: &Interrupt,
) -> Result<()> {
    for n in names {
        let meta = db.table(table)?.meta();
        let name = ident_name(n);
        let Some(gone) = meta.schema.columns.iter().position(|c| c.name == name) else {
            if if_exists {
                continue;
            }
            return Err(Error::new(
                SqlState::UNDEFINED_COLUMN,
                format!("column \"{name}\" of relation \"{table}\" does not exist"),
            ));
        };
        if meta.schema.primary_key.contains(&gone) {
            return Err(unsupported("dropping a primary-key column"));
        }
        if meta.schema.len() == 1 {
            return Err(unsupported("dropping the only column of a table"));
        }
        crate::ddl::view::drop_column_dependents(db, table, &name, cascade)?;
        let shift = |c: usize| if c > gone { c - 1 } else { c };
        let columns: Vec<Column> = meta
            .schema
            .columns
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != gone)
            .map(|(_, c)| c.clone())
            .collect();
        let pk = meta.schema.primary_key.iter().map(|&c| shift(c)).collect();
        let mut indexes = meta.indexes.clone();
        indexes.retain(|i| !i.columns.contains(&gone));
        for i in &mut indexes {
            i.columns = i.columns.iter().map(|&c| shift(c)).collect();
        }
        let defaults = meta
            .defaults
            .iter()
            .filter(|d| d.column != gone)
            .map(|d| ColumnDefault {
                column: shift(d.column),
                ..d.clone()
            })
            .collect();
        let r = Rewrite {
            schema: Schema::new(columns, pk),
            columns: (0..meta.schema.len())
                .filter(|&i| i != gone)
                .map(NewColumn::Old)
                .collect(),
            indexes,
            defaults,
            moved: (0..meta.schema.len())
                .map(|i| (i, (i != gone).then(|| shift(i))))
                .collect(),
        };
        db.rewrite_table(table, r, wait, interrupt)?;
    }
    Ok(())
}
