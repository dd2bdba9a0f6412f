//! Column name resolution over the tables of a FROM clause.

use ndpdb_formats::{DataType, SqlState};
use sqlparser::ast::Ident;
use std::sync::Arc;

use crate::plan::subquery::QueryContext;

use crate::{Error, Result};

#[derive(Clone, Debug)]
pub struct ScopeColumn {
    /// The table's name or alias (lower case).
    pub table: String,
    pub name: String,
    pub ty: DataType,
}

/// The columns visible to an expression, in row order.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub columns: Vec<ScopeColumn>,
    /// The query being planned: enclosing queries' columns, subqueries
    /// (`None`: an expression outside a query, where neither exists).
    pub ctx: Option<Arc<QueryContext>>,
}

/// PostgreSQL folds unquoted identifiers to lower case.
pub fn ident_name(id: &Ident) -> String {
    if id.quote_style.is_some() {
        id.value.clone()
    } else {
        id.value.to_lowercase()
    }
}

/// The last part of a possibly qualified name (`s.t.col` → `col`), folded
/// as [`ident_name`] folds it.
pub fn last_ident(name: &sqlparser::ast::ObjectName) -> String {
    name.0
        .last()
        .and_then(|p| p.as_ident())
        .map(ident_name)
        .unwrap_or_default()
}

impl Scope {
    /// A scope with no columns in query `ctx`.
    pub fn within(ctx: &Arc<QueryContext>) -> Scope {
        Scope {
            columns: Vec::new(),
            ctx: Some(ctx.clone()),
        }
    }

    pub fn add_table(
        &mut self,
        table: &str,
        columns: impl IntoIterator<Item = (String, DataType)>,
    ) {
        for (name, ty) in columns {
            self.columns.push(ScopeColumn {
                table: table.to_string(),
                name,
                ty,
            });
        }
    }

    /// A scope with no columns in the same query.
    pub fn no_columns(&self) -> Scope {
        Scope {
            columns: Vec::new(),
            ctx: self.ctx.clone(),
        }
    }

    pub fn len(&self) -> usize {
        self.columns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    pub fn has_table(&self, table: &str) -> bool {
        self.columns.iter().any(|c| c.table == table)
    }

    /// Resolves `name` or `table.name` to a column position.
    pub fn resolve(&self, table: Option<&str>, name: &str) -> Result<usize> {
        let mut found = None;
        for (i, c) in self.columns.iter().enumerate() {
            if c.name == name && table.is_none_or(|t| t == c.table) {
                if found.is_some() {
                    return Err(Error::new(
                        SqlState::AMBIGUOUS_COLUMN,
                        format!("column reference \"{name}\" is ambiguous"),
                    ));
                }
                found = Some(i);
            }
        }
        found.ok_or_else(|| match table {
            Some(t) if !self.has_table(t) => Error::new(
                SqlState::UNDEFINED_TABLE,
                format!("missing FROM-clause entry for table \"{t}\""),
            ),
            Some(t) => Error::new(
                SqlState::UNDEFINED_COLUMN,
                format!("column {t}.{name} does not exist"),
            ),
            None => Error::new(
                SqlState::UNDEFINED_COLUMN,
                format!("column \"{name}\" does not exist"),
            ),
        })
    }
}
