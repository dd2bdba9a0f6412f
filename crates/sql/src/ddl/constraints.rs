//! Table constraints beyond the primary key: FOREIGN KEY (enforced by
//! the host, see `ndpdb_host::foreign_key`) and UNIQUE (a unique index
//! named as PostgreSQL names the constraint's index), in CREATE TABLE
//! and in ALTER TABLE … ADD / DROP CONSTRAINT.

use ndpdb_formats::SqlState;
use sqlparser::ast::{
    ConstraintCharacteristics, ConstraintReferenceMatchKind, Expr, ForeignKeyConstraint, Ident,
    ReferentialAction, UniqueConstraint,
};

use crate::bind::scope::ident_name;
use crate::bind::scope::table_name;
use crate::output::Notice;
use crate::{Error, Result};
use ndpdb_host::catalog::{IndexMeta, TableMeta};
use ndpdb_host::foreign_key::{default_constraint_name, FkAction, ForeignKeyMeta};
use ndpdb_host::Database;

fn action(a: Option<ReferentialAction>) -> FkAction {
    match a {
        None | Some(ReferentialAction::NoAction) => FkAction::NoAction,
        Some(ReferentialAction::Restrict) => FkAction::Restrict,
        Some(ReferentialAction::Cascade) => FkAction::Cascade,
        Some(ReferentialAction::SetNull) => FkAction::SetNull,
        Some(ReferentialAction::SetDefault) => FkAction::SetDefault,
    }
}

fn not_deferrable(c: &Option<ConstraintCharacteristics>) -> Result<()> {
    if c.as_ref().is_some_and(|c| c.deferrable == Some(true)) {
        return Err(Error::new(
            SqlState::FEATURE_NOT_SUPPORTED,
            "DEFERRABLE constraints are not supported",
        ));
    }
    Ok(())
}

/// A FOREIGN KEY clause as the host stores it; `column` for the column
/// form (`c int REFERENCES p`). The referenced key is resolved later.
pub fn foreign_key(fk: &ForeignKeyConstraint, column: Option<&Ident>) -> Result<ForeignKeyMeta> {
    not_deferrable(&fk.characteristics)?;
    let match_full = match fk.match_kind {
        None | Some(ConstraintReferenceMatchKind::Simple) => false,
        Some(ConstraintReferenceMatchKind::Full) => true,
        Some(ConstraintReferenceMatchKind::Partial) => {
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                "MATCH PARTIAL not yet implemented",
            ))
        }
    };
    let columns: Vec<String> = match column {
        Some(c) => vec![ident_name(c)],
        None => fk.columns.iter().map(ident_name).collect(),
    };
    Ok(ForeignKeyMeta {
        name: fk.name.as_ref().map(ident_name).unwrap_or_default(),
        columns,
        parent: table_name(&fk.foreign_table)?,
        parent_columns: fk.referred_columns.iter().map(ident_name).collect(),
        on_delete: action(fk.on_delete),
        on_update: action(fk.on_update),
        match_full,
    })
}

/// A UNIQUE clause's columns (by name) and its constraint name, if given;
/// `column` for the column form.
pub fn unique(
    u: &UniqueConstraint,
    column: Option<&Ident>,
) -> Result<(Option<String>, Vec<String>)> {
    not_deferrable(&u.characteristics)?;
    let columns = match column {
        Some(c) => vec![ident_name(c)],
        None => u
            .columns
            .iter()
            .map(|c| match &c.column.expr {
                Expr::Identifier(id) => Ok(ident_name(id)),
                e => Err(Error::new(
                    SqlState::FEATURE_NOT_SUPPORTED,
                    format!("UNIQUE on expression {e} is not supported"),
                )),
            })
            .collect::<Result<_>>()?,
    };
    Ok((u.name.as_ref().map(ident_name), columns))
}

/// The unique index that implements a UNIQUE constraint of `table`:
/// named as given, else `<table>_<cols>_key` (numbered past names in use,
/// as PostgreSQL does).
pub fn unique_index(
    db: &Database,
    table: &TableMeta,
    name: Option<String>,
    columns: &[String],
    taken: &[String],
) -> Result<IndexMeta> {
    let mut positions = Vec::new();
    for c in columns {
        let p = table
            .schema
            .columns
            .iter()
            .position(|x| &x.name == c)
            .ok_or_else(|| {
                Error::new(
                    SqlState::UNDEFINED_COLUMN,
                    format!("column \"{c}\" named in key does not exist"),
                )
            })?;
        positions.push(p);
    }
    let name = match name {
        Some(n) => n,
        None => {
            let base = default_constraint_name(&table.name, columns, "key");
            let mut n = base.clone();
            let mut i = 0;
            while db.relation_exists(&n) || taken.contains(&n) {
                i += 1;
                n = format!("{}{i}", base);
            }
            n
        }
    };
    Ok(IndexMeta {
        name,
        columns: positions,
        unique: true,
        constraint: true,
    })
}

/// `ALTER TABLE t DROP CONSTRAINT [IF EXISTS] name`: a foreign key, or
/// the index of a UNIQUE constraint. A missing one with IF EXISTS gives
/// PostgreSQL's notice.
pub fn drop_constraint(
    db: &Database,
    table: &str,
    name: &Ident,
    if_exists: bool,
) -> Result<Option<Notice>> {
    let name = ident_name(name);
    let ts = db.table(table)?;
    let meta = ts.meta();
    if meta.foreign_keys.iter().any(|f| f.name == name) {
        db.drop_foreign_key(table, &name)?;
        return Ok(None);
    }
    if meta.indexes.iter().any(|i| i.name == name && i.constraint) {
        db.drop_index(&name, true)?;
        return Ok(None);
    }
    if if_exists {
        return Ok(Some(Notice::info(format!(
            "constraint \"{name}\" of relation \"{table}\" does not exist, skipping"
        ))));
    }
    Err(Error::new(
        SqlState::UNDEFINED_OBJECT,
        format!("constraint \"{name}\" of relation \"{table}\" does not exist"),
    ))
}

/// TRUNCATE of `names`: every table that refers to one of them must be
/// emptied too — added with CASCADE (returned, for the notices), else
/// 0A000 as in PostgreSQL.
pub fn truncate_closure(
    db: &Database,
    names: &mut Vec<String>,
    cascade: bool,
) -> Result<Vec<String>> {
    let mut added = Vec::new();
    let mut i = 0;
    while i < names.len() {
        for (child, _) in db.referencing(&names[i]) {
            if names.contains(&child.name) {
                continue;
            }
            if !cascade {
                return Err(Error::new(
                    SqlState::FEATURE_NOT_SUPPORTED,
                    "cannot truncate a table referenced in a foreign key constraint",
                )
                .with_detail(format!(
                    "Table \"{}\" references \"{}\".",
                    child.name, names[i]
                ))
                .with_hint(format!(
                    "Truncate table \"{}\" at the same time, or use TRUNCATE ... CASCADE.",
                    child.name
                )));
            }
            names.push(child.name.clone());
            added.push(child.name.clone());
        }
        i += 1;
    }
    Ok(added)
}
