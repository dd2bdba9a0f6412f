//! Declaring a FOREIGN KEY: the checks PostgreSQL makes (referenced
//! table and columns, a primary key or UNIQUE index over exactly those
//! columns, comparable types, a free name) and, for a table that has
//! rows, every row's key present in the referenced table.

use ndpdb_formats::{DataType, SqlState};

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use ndpdb_formats::codec::Writer;
use ndpdb_formats::{TxId, Value};

use super::{key_of, positions, FkAction, ForeignKeyMeta};
use crate::alter_table::when_alone;
use crate::catalog::TableMeta;
use crate::db::{Database, Engine, TableState};
use crate::error::{Error, Result};
use crate::interrupt::Interrupt;

/// Types whose values a foreign key may compare (PostgreSQL: an
/// equality operator of the referenced key's operator class, after
/// implicit casts).
fn comparable(a: &DataType, b: &DataType) -> bool {
    fn family(t: &DataType) -> u8 {
        match t {
            DataType::Int | DataType::BigInt | DataType::Numeric { .. } | DataType::Double => 0,
            DataType::Text | DataType::Varchar(_) | DataType::Char(_) => 1,
            DataType::Date | DataType::Timestamp => 2,
            DataType::Bool => 3,
            _ => 4,
        }
    }
    family(a) == family(b) && (family(a) != 4 || a == b)
}

/// A type's name without its modifier (`character varying`), as
/// PostgreSQL's messages give it.
fn bare_type_name(t: &DataType) -> String {
    let n = t.sql_name();
    match n.find('(') {
        Some(i) => n[..i].to_string(),
        None => n,
    }
}

/// PostgreSQL's name for an unnamed constraint: `<table>_<cols>_<suffix>`,
/// cut to 63 bytes.
pub fn default_constraint_name(table: &str, columns: &[String], suffix: &str) -> String {
    let mut base = format!("{table}_{}", columns.join("_"));
    let max = 63 - suffix.len() - 1;
    if base.len() > max {
        let mut cut = max;
        while !base.is_char_boundary(cut) {
            cut -= 1;
        }
        base.truncate(cut);
    }
    format!("{base}_{suffix}")
}

impl Database {
    /// Resolves and checks `fk` as a constraint of table `child` (whose
    /// columns are `child_meta`'s): an empty `parent_columns` names the
    /// referenced table's primary key; an empty `name` gets PostgreSQL's
    /// default. Returns the constraint as it will be stored.
    pub fn resolve_foreign_key(
        &self,
        child_meta: &TableMeta,
        mut fk: ForeignKeyMeta,
    ) -> Result<ForeignKeyMeta> {
        let parent: std::sync::Arc<TableMeta> = if fk.parent == child_meta.name {
            std::sync::Arc::new(child_meta.clone())
        } else {
            match self.tables().into_iter().find(|t| t.name == fk.parent) {
                Some(t) => t,
                None => {
                    return Err(Error::new(
                        SqlState::UNDEFINED_TABLE,
                        format!("relation \"{}\" does not exist", fk.parent),
                    ))
                }
            }
        };
        let missing = |c: &str| {
            Error::new(
                SqlState::UNDEFINED_COLUMN,
                format!("column \"{c}\" referenced in foreign key constraint does not exist"),
            )
        };
        for c in &fk.columns {
            if !child_meta.schema.columns.iter().any(|x| &x.name == c) {
                return Err(missing(c));
            }
        }
        if fk.parent_columns.is_empty() {
            if parent.schema.primary_key.is_empty() {
                return Err(Error::new(
                    SqlState::UNDEFINED_OBJECT,
                    format!(
                        "there is no primary key for referenced table \"{}\"",
                        parent.name
                    ),
                ));
            }
            fk.parent_columns = parent
                .schema
                .primary_key
                .iter()
                .map(|&c| parent.schema.columns[c].name.clone())
                .collect();
        }
        for c in &fk.parent_columns {
            if !parent.schema.columns.iter().any(|x| &x.name == c) {
                return Err(missing(c));
            }
        }
        if fk.columns.len() != fk.parent_columns.len() {
            return Err(Error::new(
                SqlState::INVALID_FOREIGN_KEY,
                "number of referencing and referenced columns for foreign key disagree",
            ));
        }
        let pcols = positions(&parent, &fk.parent_columns).unwrap_or_default();
        let is_key = |key: &[usize]| {
            key.len() == pcols.len()
                && key.iter().all(|c| pcols.contains(c))
                && pcols.iter().all(|c| key.contains(c))
        };
        let unique = is_key(&parent.schema.primary_key)
            || parent
                .indexes
                .iter()
                .any(|i| i.unique && is_key(&i.columns));
        if !unique {
            return Err(Error::new(
                SqlState::INVALID_FOREIGN_KEY,
                format!(
                    "there is no unique constraint matching given keys for referenced table \"{}\"",
                    parent.name
                ),
            ));
        }
        if fk.name.is_empty() {
            fk.name = default_constraint_name(&child_meta.name, &fk.columns, "fkey");
        }
        if child_meta.foreign_keys.iter().any(|f| f.name == fk.name)
            || child_meta.pk_constraint_name() == fk.name
        {
            return Err(Error::new(
                SqlState::DUPLICATE_OBJECT,
                format!(
                    "constraint \"{}\" for relation \"{}\" already exists",
                    fk.name, child_meta.name
                ),
            ));
        }
        let ccols = positions(child_meta, &fk.columns).unwrap_or_default();
        for (&c, &p) in ccols.iter().zip(&pcols) {
            let (ct, pt) = (
                &child_meta.schema.columns[c].ty,
                &parent.schema.columns[p].ty,
            );
            if !comparable(ct, pt) {
                return Err(Error::new(
                    SqlState::DATATYPE_MISMATCH,
                    format!(
                        "foreign key constraint \"{}\" cannot be implemented",
                        fk.name
                    ),
                )
                .with_detail(format!(
                    "Key columns \"{}\" and \"{}\" are of incompatible types: {} and {}.",
                    child_meta.schema.columns[c].name,
                    parent.schema.columns[p].name,
                    bare_type_name(ct),
                    bare_type_name(pt)
                )));
            }
        }
        if fk.on_delete == FkAction::SetDefault || fk.on_update == FkAction::SetDefault {
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                "ON DELETE / ON UPDATE SET DEFAULT is not supported",
            )
            .with_hint("Use SET NULL, CASCADE, RESTRICT or NO ACTION."));
        }
        Ok(fk)
    }

    /// `ALTER TABLE … ADD [CONSTRAINT name] FOREIGN KEY …`: resolved, then,
    /// while no transaction runs (waiting up to `wait`, 55P03 after, as
    /// for CREATE INDEX), every row's key is looked up among the
    /// referenced table's keys and the constraint is stored durably.
    pub fn add_foreign_key(
        &self,
        table: &str,
        fk: ForeignKeyMeta,
        wait: Duration,
        interrupt: &Interrupt,
    ) -> Result<ForeignKeyMeta> {
        let inner = &self.inner;
        inner.check_ok()?;
        let _change = inner.catalog_change();
        let ts = self.table(table)?;
        let fk = self.resolve_foreign_key(&ts.meta(), fk)?;
        let parent = if fk.parent == table {
            ts.clone()
        } else {
            self.table(&fk.parent)?
        };
        when_alone(table, wait, interrupt, || {
            inner
                .txm
                .exclusive(|next| inner.attach_foreign_key(&ts, &parent, &fk, next))
        })?;
        Ok(fk)
    }
    /// `ALTER TABLE … DROP CONSTRAINT name` of a foreign key, durably.
    pub fn drop_foreign_key(&self, table: &str, name: &str) -> Result<()> {
        self.inner.check_ok()?;
        let _change = self.inner.catalog_change();
        let ts = self.table(table)?;
        let mut all = ts.meta().foreign_keys.clone();
        all.retain(|f| f.name != name);
        let new_meta = self.inner.catalog.lock().set_foreign_keys(table, all)?;
        ts.replace_meta(new_meta);
        Ok(())
    }
}

/// The bytes a key is compared by (values cast to the referenced
/// columns' types first).
fn key_bytes(key: &[Value]) -> Vec<u8> {
    let mut w = Writer::new();
    for v in key {
        v.key_bytes(&mut w);
    }
    w.as_slice().to_vec()
}

impl Engine {
    /// The check and the catalog write of a new foreign key of `ts`, with
    /// no transaction running below `next`: every referenced key of
    /// `parent`, then every referencing row's key among them.
    fn attach_foreign_key(
        &self,
        ts: &TableState,
        parent: &TableState,
        fk: &ForeignKeyMeta,
        next: TxId,
    ) -> Result<()> {
        let meta = ts.meta();
        let pmeta = parent.meta();
        let ccols = positions(&meta, &fk.columns).unwrap_or_default();
        let pcols = positions(&pmeta, &fk.parent_columns).unwrap_or_default();
        let mut keys: HashSet<Vec<u8>> = HashSet::new();
        self.latest_rows(parent, next, |_, row| {
            let key: Vec<Value> = pcols.iter().map(|&c| row[c].clone()).collect();
            if !key.iter().any(Value::is_null) {
                keys.insert(key_bytes(&key));
            }
            Ok(())
        })?;
        let violation = || {
            Error::new(
                SqlState::FOREIGN_KEY_VIOLATION,
                format!(
                    "insert or update on table \"{}\" violates foreign key constraint \"{}\"",
                    meta.name, fk.name
                ),
            )
        };
        self.latest_rows(ts, next, |_, row| {
            let key = match key_of(&row, &ccols, fk.match_full) {
                Ok(Some(key)) => key,
                Ok(None) => return Ok(()),
                Err(()) => {
                    return Err(violation().with_detail(
                        "MATCH FULL does not allow mixing of null and nonnull key values.",
                    ))
                }
            };
            let cast: Option<Vec<Value>> = key
                .iter()
                .zip(&pcols)
                .map(|(v, &c)| v.cast(&pmeta.schema.columns[c].ty).ok())
                .collect();
            if cast.is_some_and(|k| keys.contains(&key_bytes(&k))) {
                return Ok(());
            }
            let shown: Vec<String> = key
                .iter()
                .map(|v| v.to_pg_text().unwrap_or_else(|| "null".into()))
                .collect();
            Err(violation().with_detail(format!(
                "Key ({})=({}) is not present in table \"{}\".",
                fk.columns.join(", "),
                shown.join(", "),
                fk.parent
            )))
        })?;
        let mut all = meta.foreign_keys.clone();
        all.push(fk.clone());
        let new_meta: Arc<TableMeta> = self.catalog.lock().set_foreign_keys(&meta.name, all)?;
        ts.replace_meta(new_meta);
        Ok(())
    }
}
