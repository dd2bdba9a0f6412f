//! `INSERT … ON CONFLICT`: which conflict the clause names and what the
//! insert does about it (the doing is `ndpdb_host::transaction::insert`).
//!
//! ```text
//!  ON CONFLICT [ (col, …) | ON CONSTRAINT name ] DO NOTHING
//!     (col, …)            must be exactly the primary key's columns
//!                         (42P10 otherwise; ndpdb's only unique index)
//!     ON CONSTRAINT name  must name the primary key (42704 otherwise)
//!     no target           any key conflict
//!  ON CONFLICT … DO UPDATE  needs a target (42601); not built (0A000)
//! ```

use std::collections::BTreeSet;

use ndpdb_formats::SqlState;
use ndpdb_host::database::TableState;
use ndpdb_host::OnConflict;
use sqlparser::ast::{ConflictTarget, OnConflictAction, OnInsert};

use crate::scope::ident_name;
use crate::{Error, Result};

/// What an INSERT with clause `on` does when a row's key is taken.
pub fn plan_on_conflict(table: &TableState, on: Option<&OnInsert>) -> Result<OnConflict> {
    let clause = match on {
        None => return Ok(OnConflict::Error),
        Some(OnInsert::OnConflict(c)) => c,
        Some(_) => {
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                "this ON clause of INSERT is not supported",
            ))
        }
    };
    if let Some(target) = &clause.conflict_target {
        check_target(table, target)?;
    }
    match &clause.action {
        OnConflictAction::DoNothing => Ok(OnConflict::DoNothing),
        OnConflictAction::DoUpdate(_) if clause.conflict_target.is_none() => Err(Error::new(
            SqlState::SYNTAX_ERROR,
            "ON CONFLICT DO UPDATE requires inference specification or constraint name",
        )),
        OnConflictAction::DoUpdate(_) => Err(Error::new(
            SqlState::FEATURE_NOT_SUPPORTED,
            "ON CONFLICT DO UPDATE is not supported",
        )),
    }
}

fn check_target(table: &TableState, target: &ConflictTarget) -> Result<()> {
    let meta = table.meta();
    match target {
        ConflictTarget::Columns(cols) => {
            let mut named = BTreeSet::new();
            for c in cols {
                let name = ident_name(c);
                let at = meta.schema.column_index(&name).ok_or_else(|| {
                    Error::new(
                        SqlState::UNDEFINED_COLUMN,
                        format!("column \"{name}\" does not exist"),
                    )
                })?;
                named.insert(at);
            }
            let key: BTreeSet<usize> = meta.schema.primary_key.iter().copied().collect();
            if key.is_empty() || named != key {
                return Err(Error::new(
                    SqlState("42P10"),
                    "there is no unique or exclusion constraint matching the ON CONFLICT specification",
                ));
            }
        }
        ConflictTarget::OnConstraint(name) => {
            let name = name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .map(ident_name)
                .unwrap_or_default();
            if meta.schema.primary_key.is_empty() || name != meta.pk_constraint_name() {
                return Err(Error::new(
                    SqlState::UNDEFINED_OBJECT,
                    format!(
                        "constraint \"{name}\" for table \"{}\" does not exist",
                        meta.name
                    ),
                ));
            }
        }
    }
    Ok(())
}
