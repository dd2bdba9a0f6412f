//! Reading a view: a FROM item that names a view is its stored query,
//! parsed again and planned as a query in FROM (a derived table).
//!
//! ```text
//!  SELECT … FROM v x (p)
//!    relation(db, "v") ─► Relation::View(ViewRead: the parsed query,
//!                         its columns named `p`, then the view's names)
//!    plan/query/from.rs plans it as a derived table one view deeper
//!    (`inside_view`, at most 100), seeing none of the statement's WITH
//!    queries ─► ViewRead::check: the planned types must still be the
//!    stored ones (XX000 otherwise: the view must be created again)
//! ```
//!
//! So a view is planned anew in every statement that reads it, like a
//! subquery written in its place: each reference is its own derived
//! table (a view read twice is computed twice), placed on the device or
//! the host as any query in FROM is (`SET ndp`), and EXPLAIN shows its
//! plan under `Subquery Scan on v`.
//!
//! While CREATE VIEW plans its query (`ddl/view.rs`), `noting_reads`
//! collects the relations its FROM items name: the view's dependencies.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use ndpdb_formats::{DataType, SqlState};
use ndpdb_host::database::TableState;
use ndpdb_host::{Database, ViewMeta};
use sqlparser::ast::{Query, Statement};

use crate::{Error, Result};

/// Views read inside views, at most (a chain longer than this is
/// refused as PostgreSQL refuses a too-deep statement).
const MAX_NESTING: u32 = 100;

thread_local! {
    /// While CREATE VIEW plans its query: the relations its FROM items
    /// name (not those inside the views it reads).
    static READS: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
    /// How many views are being planned inside one another.
    static NESTING: Cell<u32> = const { Cell::new(0) };
}

/// Notes that the query being planned reads relation `name`.
fn note_read(name: &str) {
    READS.with(|r| {
        if let Some(list) = r.borrow_mut().as_mut() {
            if !list.iter().any(|n| n == name) {
                list.push(name.to_string());
            }
        }
    });
}

/// Runs `f`, noting the relations its FROM items name.
pub(crate) fn noting_reads<T>(f: impl FnOnce() -> Result<T>) -> Result<(T, Vec<String>)> {
    struct Reset(Option<Vec<String>>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let saved = self.0.take();
            READS.with(|r| *r.borrow_mut() = saved);
        }
    }
    let saved = READS.with(|r| r.borrow_mut().replace(Vec::new()));
    let reset = Reset(saved);
    let out = f();
    let reads = READS.with(|r| r.borrow_mut().take()).unwrap_or_default();
    drop(reset);
    Ok((out?, reads))
}

/// Runs `f` (planning a view's query) one view deeper, noting nothing.
pub(crate) fn inside_view<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    struct Leave(Option<Vec<String>>);
    impl Drop for Leave {
        fn drop(&mut self) {
            NESTING.with(|n| n.set(n.get().saturating_sub(1)));
            let saved = self.0.take();
            READS.with(|r| *r.borrow_mut() = saved);
        }
    }
    if NESTING.with(|n| n.get()) >= MAX_NESTING {
        return Err(Error::new(
            SqlState::STATEMENT_TOO_COMPLEX,
            "stack depth limit exceeded",
        )
        .with_hint("Views are nested too deeply."));
    }
    NESTING.with(|n| n.set(n.get() + 1));
    let _leave = Leave(READS.with(|r| r.borrow_mut().take()));
    f()
}

/// A view's stored query, parsed.
pub(crate) fn parse_query(view: &ViewMeta) -> Result<Query> {
    let mut stmts = crate::parse::parse(&view.sql)?;
    match (stmts.pop(), stmts.is_empty()) {
        (Some(Statement::Query(q)), true) => Ok(*q),
        _ => Err(Error::new(
            SqlState::DATA_CORRUPTED,
            format!("the stored query of view \"{}\" is not a query", view.name),
        )),
    }
}

/// What a FROM item's name stands for (not a WITH query).
pub(crate) enum Relation {
    Table(Arc<TableState>),
    View(Box<ViewRead>),
}

/// A view read in FROM: its query, to be planned as a derived table.
pub(crate) struct ViewRead {
    pub(crate) meta: Arc<ViewMeta>,
    pub(crate) query: Query,
    /// The result's column names: the FROM item's aliases, then the
    /// view's own names.
    pub(crate) columns: Vec<String>,
}

/// The table or view `name` (noted as read while CREATE VIEW plans).
pub(crate) fn relation(db: &Database, name: &str, alias_columns: Vec<String>) -> Result<Relation> {
    let view = match db.table(name) {
        Ok(table) => {
            note_read(name);
            return Ok(Relation::Table(table));
        }
        Err(e) => match db.view(name) {
            Some(view) if e.code == SqlState::UNDEFINED_TABLE => view,
            _ => return Err(e),
        },
    };
    note_read(name);
    let query = parse_query(&view)?;
    let mut columns = alias_columns;
    if columns.len() < view.columns.len() {
        columns.extend(view.columns[columns.len()..].iter().map(|c| c.name.clone()));
    }
    Ok(Relation::View(Box::new(ViewRead {
        meta: view,
        query,
        columns,
    })))
}

impl ViewRead {
    /// Whether the view's query, planned now with result types `types`,
    /// still gives the types stored with the view.
    pub(crate) fn check(&self, types: &[DataType]) -> Result<()> {
        let stored: Vec<DataType> = self.meta.columns.iter().map(|c| c.ty).collect();
        if types == stored.as_slice() {
            return Ok(());
        }
        Err(Error::new(
            SqlState::INTERNAL_ERROR,
            format!(
                "view \"{}\" no longer matches the relations it reads",
                self.meta.name
            ),
        )
        .with_hint("Drop the view and create it again."))
    }
}
