//! Prepared statements and portals of the extended query protocol.
//!
//! ```text
//!  Parse ─► Statement { plan, declared parameter types }     (by name)
//!  Bind  ─► Portal { statement, parameter values, result formats,
//!                    state: Ready ─Execute─► Rows (suspended) ─► Done }
//! ```
//!
//! A portal holds the rows its statement returned and hands them out
//! `max_rows` at a time (`max_rows ≤ 0`: all of them); nothing is
//! allocated by the client's `max_rows`. Portals end with their
//! transaction; statements live until Close, DEALLOCATE or the end of
//! the connection.

use std::sync::Arc;

use pgwire::api::Type;
use sqlparser::ast::Statement as Ast;

use ndpdb_formats::{DataType, Value};
use ndpdb_sql::session::Prepared;
use ndpdb_sql::ResultColumn;

use crate::copy::{CopyOutSpec, CopySpec};
use crate::types::{pg_type, Format};

/// What a prepared statement runs.
pub(crate) enum Plan {
    /// A planned statement; `tag` names row results (SELECT, SHOW, EXPLAIN).
    Query {
        prepared: Arc<Prepared>,
        columns: Vec<ResultColumn>,
        tag: &'static str,
    },
    Copy(CopySpec),
    /// `COPY … TO STDOUT`: its rows go out as CopyData.
    CopyOut(CopyOutSpec),
    /// DEALLOCATE name (`None`: ALL); `tag` is the command's.
    Deallocate {
        name: Option<String>,
        tag: &'static str,
    },
    /// An empty query string.
    Empty,
}

pub(crate) struct Statement {
    pub plan: Plan,
    /// Parameter type OIDs the client declared in Parse (0: unspecified).
    pub declared: Vec<u32>,
    /// COMMIT or ROLLBACK: allowed in a failed transaction block.
    pub transaction_exit: bool,
}

impl Statement {
    fn inferred(&self) -> &[Option<DataType>] {
        match &self.plan {
            Plan::Query { prepared, .. } => &prepared.param_types,
            _ => &[],
        }
    }

    /// How many parameters a Bind must supply.
    pub fn param_count(&self) -> usize {
        self.declared.len().max(self.inferred().len())
    }

    /// The declared type of parameter `i`, if the client named one.
    pub fn declared_type(&self, i: usize) -> Option<Type> {
        self.declared
            .get(i)
            .filter(|oid| **oid != 0)
            .and_then(|oid| Type::from_oid(*oid))
            .filter(|t| *t != Type::UNKNOWN)
    }

    /// The type ndpdb inferred for parameter `i` from its context.
    pub fn inferred_type(&self, i: usize) -> Option<DataType> {
        self.inferred().get(i).copied().flatten()
    }

    /// Parameter type OIDs for ParameterDescription: the declared type,
    /// else the inferred one, else text.
    pub fn param_oids(&self) -> Vec<u32> {
        (0..self.param_count())
            .map(|i| match self.declared_type(i) {
                Some(t) => t.oid(),
                None => self
                    .inferred_type(i)
                    .map_or(Type::TEXT.oid(), |t| pg_type(&t).oid()),
            })
            .collect()
    }

    /// Result columns (empty for commands).
    pub fn columns(&self) -> &[ResultColumn] {
        match &self.plan {
            Plan::Query { columns, .. } => columns,
            _ => &[],
        }
    }
}

/// How far a portal's execution got.
pub(crate) enum PortalState {
    Ready,
    /// Rows not yet sent (Execute with a row limit suspended it).
    Rows {
        rows: std::vec::IntoIter<Vec<Value>>,
        tag: &'static str,
    },
    /// Ran to its end; `rows` if it returned rows (running it again
    /// returns none), otherwise it cannot run again.
    Done {
        rows: Option<&'static str>,
    },
}

pub(crate) struct Portal {
    pub statement: Arc<Statement>,
    pub params: Vec<Value>,
    pub formats: Format,
    pub state: PortalState,
}

/// The command tag of a statement's row results, PostgreSQL's way.
pub(crate) fn rows_tag(stmt: &Ast) -> &'static str {
    match stmt {
        Ast::ShowVariable { .. } => "SHOW",
        Ast::Explain { .. } => "EXPLAIN",
        // Rows of INSERT/UPDATE/DELETE … RETURNING.
        Ast::Insert(_) => "INSERT",
        Ast::Update { .. } => "UPDATE",
        Ast::Delete(_) => "DELETE",
        _ => "SELECT",
    }
}

/// A command tag for `n` rows: `SELECT n`, but `SHOW` and `EXPLAIN`
/// carry no count.
pub(crate) fn rows_complete(tag: &str, n: usize) -> String {
    match tag {
        "SELECT" => format!("SELECT {n}"),
        "INSERT" => format!("INSERT 0 {n}"),
        "UPDATE" | "DELETE" => format!("{tag} {n}"),
        other => other.to_owned(),
    }
}
