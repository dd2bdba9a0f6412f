//! `READ ONLY` transactions: `BEGIN READ ONLY`, `SET TRANSACTION READ
//! ONLY`, `default_transaction_read_only`. As in PostgreSQL, a read-only
//! transaction refuses every statement that writes (25006), and under
//! SERIALIZABLE it lets SSI order it before the writers it overlaps
//! (fewer serialization failures).

use ndpdb_formats::SqlState;
use sqlparser::ast::{ObjectType, Statement, TransactionAccessMode, TransactionMode};

use crate::{Error, Result};

/// The access mode `modes` set, if any (`true`: READ ONLY).
pub fn access_of(modes: &[TransactionMode]) -> Option<bool> {
    modes.iter().rev().find_map(|m| match m {
        TransactionMode::AccessMode(TransactionAccessMode::ReadOnly) => Some(true),
        TransactionMode::AccessMode(TransactionAccessMode::ReadWrite) => Some(false),
        _ => None,
    })
}

/// The command name PostgreSQL reports for a statement a read-only
/// transaction refuses (`None`: the statement only reads).
pub fn writing_command(stmt: &Statement) -> Option<&'static str> {
    Some(match stmt {
        Statement::Insert(_) => "INSERT",
        Statement::Update(_) => "UPDATE",
        Statement::Delete(_) => "DELETE",
        Statement::Query(q) if !q.locks.is_empty() => "SELECT FOR UPDATE",
        Statement::CreateTable(_) => "CREATE TABLE",
        Statement::CreateIndex(_) => "CREATE INDEX",
        Statement::CreateSequence { .. } => "CREATE SEQUENCE",
        Statement::CreateView(_) => "CREATE VIEW",
        Statement::AlterTable(_) => "ALTER TABLE",
        Statement::Truncate(_) => "TRUNCATE TABLE",
        Statement::Comment { .. } => "COMMENT",
        Statement::Drop { object_type, .. } => match object_type {
            ObjectType::Table => "DROP TABLE",
            ObjectType::Index => "DROP INDEX",
            ObjectType::Sequence => "DROP SEQUENCE",
            ObjectType::View => "DROP VIEW",
            _ => return None,
        },
        _ => return None,
    })
}

/// PostgreSQL's refusal of `command` in a read-only transaction.
pub fn refused(command: &str) -> Error {
    Error::new(
        SqlState::READ_ONLY_SQL_TRANSACTION,
        format!("cannot execute {command} in a read-only transaction"),
    )
}

/// Parses `on`/`off` for `default_transaction_read_only` and
/// `transaction_read_only`.
pub fn parse_flag(name: &str, value: &str) -> Result<bool> {
    match value.trim().to_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("parameter \"{name}\" requires a Boolean value"),
        )),
    }
}
