//! `INSERT … ON CONFLICT`: which conflict the clause names and what the
//! insert does about it (the conflict is found by
//! `ndpdb_host::transaction::insert`, the update runs in `dml.rs`).
//!
//! ```text
//!  ON CONFLICT [ (col, …) | ON CONSTRAINT name ] DO NOTHING
//!     (col, …)            must be exactly the primary key's columns
//!                         (42P10 otherwise; ndpdb's only unique index)
//!     ON CONSTRAINT name  must name the primary key (42704 otherwise)
//!     no target           any key conflict
//!  ON CONFLICT target DO UPDATE SET col = expr, … [WHERE cond]
//!     expr and cond see the row holding the key (by the table's name or
//!     alias) and the proposed row as EXCLUDED; a row the command already
//!     inserted or updated is 21000; without a target 42601
//! ```

use std::collections::BTreeSet;

use ndpdb_formats::expr::Program;
use ndpdb_formats::{DataType, SqlState};
use ndpdb_host::database::TableState;
use ndpdb_host::OnConflict;
use sqlparser::ast::{ConflictTarget, DoUpdate, OnConflictAction, OnInsert};

use crate::bind::compile::compile_predicate;
use crate::bind::scope::{ident_name, last_ident, Scope};
use crate::exec::dml::assignment::plan_assignment;
use crate::{Error, Result};

/// What an INSERT does when a row's key is taken.
pub enum ConflictAction {
    /// 23505.
    Error,
    DoNothing,
    DoUpdate(DoUpdatePlan),
}

/// `DO UPDATE SET … [WHERE …]`, over the row holding the key followed by
/// the proposed row (EXCLUDED).
pub struct DoUpdatePlan {
    /// Column position and its new value.
    pub sets: Vec<(usize, Program)>,
    pub filter: Option<Program>,
}

impl ConflictAction {
    /// What the transaction's insert does on a conflict.
    pub fn on_conflict(&self) -> OnConflict {
        match self {
            ConflictAction::Error => OnConflict::Error,
            ConflictAction::DoNothing => OnConflict::DoNothing,
            ConflictAction::DoUpdate(_) => OnConflict::Report,
        }
    }
}

/// What an INSERT into `table` (named `alias` in the statement) with
/// clause `on` does when a row's key is taken.
pub fn plan_on_conflict(
    table: &TableState,
    alias: &str,
    on: Option<&OnInsert>,
    params: &mut Vec<Option<DataType>>,
) -> Result<ConflictAction> {
    let clause = match on {
        None => return Ok(ConflictAction::Error),
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
        OnConflictAction::DoNothing => Ok(ConflictAction::DoNothing),
        OnConflictAction::DoUpdate(_) if clause.conflict_target.is_none() => Err(Error::new(
            SqlState::SYNTAX_ERROR,
            "ON CONFLICT DO UPDATE requires inference specification or constraint name",
        )
        .with_hint("For example, ON CONFLICT (column_name).")),
        OnConflictAction::DoUpdate(u) => {
            plan_do_update(table, alias, u, params).map(ConflictAction::DoUpdate)
        }
    }
}

fn plan_do_update(
    table: &TableState,
    alias: &str,
    u: &DoUpdate,
    params: &mut Vec<Option<DataType>>,
) -> Result<DoUpdatePlan> {
    let meta = table.meta();
    let columns = || meta.schema.columns.iter().map(|c| (c.name.clone(), c.ty));
    let mut scope = Scope::default();
    scope.add_table(alias, columns());
    scope.add_table("excluded", columns());
    let mut sets: Vec<(usize, Program)> = Vec::new();
    for a in &u.assignments {
        let taken = |col: usize| sets.iter().any(|(c, _)| *c == col);
        let (col, p, _) = plan_assignment(table, a, &scope, params, &taken)?;
        sets.push((col, p));
    }
    let filter = match &u.selection {
        Some(w) => Some(compile_predicate(w, &scope, params)?),
        None => None,
    };
    Ok(DoUpdatePlan { sets, filter })
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
                    SqlState::INVALID_COLUMN_REFERENCE,
                    "there is no unique or exclusion constraint matching the ON CONFLICT specification",
                ));
            }
        }
        ConflictTarget::OnConstraint(name) => {
            let name = last_ident(name);
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
