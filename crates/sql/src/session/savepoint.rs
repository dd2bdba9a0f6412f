//! `SAVEPOINT name`, `ROLLBACK TO [SAVEPOINT] name`, `RELEASE [SAVEPOINT]
//! name` with PostgreSQL's rules:
//!
//! ```text
//!   outside a block (or in an implicit one) ─► 25P01 "… can only be used
//!                                               in transaction blocks"
//!   unknown name                             ─► 3B001, the block fails
//!   in a failed block: ROLLBACK TO a known savepoint makes it usable
//!   again; SAVEPOINT and RELEASE get 25P02
//!   the same name twice: the newer one hides the older
//! ```
//!
//! The names live here, the marks in the host transaction
//! (`ndpdb_host::transaction::savepoint`), one per stack position.

use ndpdb_formats::SqlState;
use ndpdb_host::SavepointId;
use sqlparser::ast::Ident;

use super::{Block, Session};
use crate::output::Output;
use crate::{Error, Result};

/// A savepoint name as PostgreSQL folds it.
fn folded(name: &Ident) -> String {
    match name.quote_style {
        Some(_) => name.value.clone(),
        None => name.value.to_lowercase(),
    }
}

fn only_in_blocks(what: &str) -> Error {
    Error::new(
        SqlState::NO_ACTIVE_SQL_TRANSACTION,
        format!("{what} can only be used in transaction blocks"),
    )
}

impl Session {
    /// The names of the open transaction's savepoints, oldest first.
    fn savepoint_names(&mut self) -> &mut Vec<String> {
        let depth = self.tx.as_ref().map_or(0, |t| t.savepoint_count());
        self.savepoint_names.truncate(depth);
        &mut self.savepoint_names
    }

    fn find_savepoint(&mut self, name: &str) -> Result<SavepointId> {
        self.savepoint_names()
            .iter()
            .rposition(|n| n == name)
            .map(SavepointId)
            .ok_or_else(|| {
                Error::new(
                    SqlState::INVALID_SAVEPOINT_SPECIFICATION,
                    format!("savepoint \"{name}\" does not exist"),
                )
            })
    }

    pub(super) fn savepoint(&mut self, name: &Ident) -> Result<Output> {
        if matches!(self.block, Block::None | Block::Implicit) {
            return self.guarded(|_| Err(only_in_blocks("SAVEPOINT")));
        }
        self.guarded(|s| {
            let name = folded(name);
            s.savepoint_names();
            let Some(tx) = s.tx.as_mut() else {
                return Err(Error::new(SqlState::INTERNAL_ERROR, "no transaction"));
            };
            tx.savepoint();
            s.savepoint_names.push(name);
            Ok(Output::command("SAVEPOINT"))
        })
    }

    pub(super) fn release_savepoint(&mut self, name: &Ident) -> Result<Output> {
        if matches!(self.block, Block::None | Block::Implicit) {
            return self.guarded(|_| Err(only_in_blocks("RELEASE SAVEPOINT")));
        }
        self.guarded(|s| {
            let id = s.find_savepoint(&folded(name))?;
            if let Some(tx) = s.tx.as_mut() {
                tx.release_savepoint(id);
            }
            s.savepoint_names();
            Ok(Output::command("RELEASE"))
        })
    }

    pub(super) fn rollback_to_savepoint(&mut self, name: &Ident) -> Result<Output> {
        if matches!(self.block, Block::None | Block::Implicit) {
            return self.guarded(|_| Err(only_in_blocks("ROLLBACK TO SAVEPOINT")));
        }
        let r = self.find_savepoint(&folded(name)).and_then(|id| {
            match self.tx.as_mut() {
                Some(tx) => tx.rollback_to_savepoint(id)?,
                None => return Err(Error::new(SqlState::INTERNAL_ERROR, "no transaction")),
            }
            self.savepoint_names();
            self.block = Block::Active;
            Ok(Output::command("ROLLBACK"))
        });
        if r.is_err() {
            self.fail_transaction();
        }
        r
    }
}
