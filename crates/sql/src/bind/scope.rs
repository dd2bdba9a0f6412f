//! Column name resolution over the tables of a FROM clause, and the
//! query an expression is bound in.
//!
//! ```text
//!  Scope { columns: [t.a, t.b, u.c], ctx } ── resolve("c") ─► position 2
//!                                     │
//!                                     └─► QueryBinder (the planner's query
//!                                         context): a name of an enclosing
//!                                         query, a subquery, nextval(…)
//!                                         ─► a parameter slot
//! ```
//!
//! `JOIN … USING (c)` makes the sides' `c` one [`MergedColumn`]
//! (plan/join_using.rs): an unqualified `c` names it, `t.c` still the
//! side's column.
//!
//! [`QueryBinder`] is the one thing binding asks of planning. The planner
//! implements it (`plan/subquery`), so binding never names the planner.

use ndpdb_formats::expr::Program;
use ndpdb_formats::{DataType, SqlState};
use ndpdb_host::Database;
use sqlparser::ast::{Expr, Ident, ObjectName};
use std::sync::Arc;

use crate::bind::sequence_call::SequenceCall;
use crate::bind::types::Ty;

use crate::{Error, Result};

/// Compiles a row-side expression of a subquery in the caller's context.
pub type OperandCompiler<'a> =
    dyn FnMut(&Expr, &mut Vec<Option<DataType>>) -> Result<(Program, Ty)> + 'a;

/// The query an expression is bound in, as binding sees it: what the
/// planner's query context answers when the compiler meets a name it
/// cannot resolve locally, a subquery or a sequence function. Each answer
/// is a parameter slot (`Op::Param`), so the bytecode never knows.
pub trait QueryBinder: std::fmt::Debug + Send + Sync {
    /// The database the statement is planned against (its catalog).
    fn db(&self) -> &Database;

    /// A name this query's scope does not have: a column of an enclosing
    /// query becomes a slot (`None`: no enclosing query has it).
    fn outer_ref(&self, table: Option<&str>, name: &str) -> Result<Option<(u32, DataType)>>;

    /// Plans the subquery expression `e` (EXISTS, IN, ANY / ALL, scalar)
    /// met while compiling over `scope`; returns its slot and type.
    /// `operand` compiles the row-side expressions in the caller's
    /// context: over `scope`'s rows, or over grouped rows (`grouped`).
    fn subquery(
        self: Arc<Self>,
        e: &Expr,
        scope: &Scope,
        grouped: bool,
        params: &mut Vec<Option<DataType>>,
        operand: &mut OperandCompiler<'_>,
    ) -> Result<(u32, Ty)>;

    /// A sequence function call: its slot (evaluated per row).
    fn sequence_call(&self, call: SequenceCall) -> u32;

    /// Whether `p` names a slot evaluated per row (such a condition
    /// cannot filter a scan).
    fn row_dependent(&self, p: &Program) -> bool;
}

#[derive(Clone, Debug)]
pub struct ScopeColumn {
    /// The table's name or alias (lower case).
    pub table: String,
    pub name: String,
    pub ty: DataType,
}

/// The qualifier `*` names a USING column with: `"\0using t".c`, `t` the
/// join tree's first table (no identifier the user writes starts with a
/// NUL), so that two trees' `c` are no ambiguity.
pub const USING_QUALIFIER: &str = "\0using ";

/// The one column `JOIN … USING (c)` makes of the two sides' `c`
/// (plan/join_using.rs): what an unqualified `c` and `*` name.
#[derive(Clone, Debug)]
pub struct MergedColumn {
    pub name: String,
    /// The value: one column (INNER and LEFT: the left side's, RIGHT: the
    /// right side's) or COALESCE of them in order (FULL).
    pub parts: Vec<Expr>,
    /// The `(table, column)`s merged: still named qualified (`t1.c`),
    /// no longer by an unqualified `c` nor by `*`.
    pub hides: Vec<(String, String)>,
    /// The first table of the join tree: `*` lists the column before it.
    pub first_table: String,
}

/// The columns visible to an expression, in row order.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub columns: Vec<ScopeColumn>,
    /// The query being planned: enclosing queries' columns, subqueries
    /// (`None`: an expression outside a query, where neither exists).
    pub ctx: Option<Arc<dyn QueryBinder>>,
    /// USING columns of the joins over these columns, in the order `*`
    /// lists them (plan/join_using.rs).
    pub merged: Vec<MergedColumn>,
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

/// The unqualified, folded name of a table (`public.t` → `t`).
pub fn table_name(name: &ObjectName) -> Result<String> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| match p {
            sqlparser::ast::ObjectNamePart::Identifier(id) => Ok(ident_name(id)),
            _ => Err(Error::new(
                SqlState::SYNTAX_ERROR,
                format!("invalid name {name}"),
            )),
        })
        .collect::<Result<_>>()?;
    match parts.as_slice() {
        [t] => Ok(t.clone()),
        [schema, t] if schema == "public" => Ok(t.clone()),
        _ => Err(Error::new(
            SqlState::UNDEFINED_SCHEMA,
            format!("schema of \"{name}\" does not exist"),
        )),
    }
}

impl Scope {
    /// A scope with no columns in query `ctx`.
    pub fn within<C: QueryBinder + 'static>(ctx: &Arc<C>) -> Scope {
        Scope {
            columns: Vec::new(),
            ctx: Some(ctx.clone() as Arc<dyn QueryBinder>),
            merged: Vec::new(),
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
            merged: Vec::new(),
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

    /// What `*` lists, as `(table, column)`: the columns in order, but a
    /// USING column once (qualified by [`USING_QUALIFIER`]), before its
    /// join tree's columns, and not the sides' columns it merges.
    pub fn star_columns(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut listed: Vec<&str> = Vec::new();
        for c in &self.columns {
            if !listed.contains(&c.table.as_str()) {
                listed.push(&c.table);
                for m in self.merged.iter().filter(|m| m.first_table == c.table) {
                    let tree = format!("{USING_QUALIFIER}{}", m.first_table);
                    out.push((tree, m.name.clone()));
                }
            }
            if !self.hidden(c) {
                out.push((c.table.clone(), c.name.clone()));
            }
        }
        out
    }

    /// Whether `c` is one side of a USING column (only named qualified).
    pub fn hidden(&self, c: &ScopeColumn) -> bool {
        self.merged
            .iter()
            .any(|m| m.hides.iter().any(|(t, n)| *t == c.table && *n == c.name))
    }

    /// The USING column an unqualified `name` names, if any (42702 if
    /// another column or USING column has that name too).
    pub fn merged_column(&self, name: &str) -> Result<Option<&MergedColumn>> {
        let mut found = self.merged.iter().filter(|m| m.name == name);
        let Some(m) = found.next() else {
            return Ok(None);
        };
        let other = self
            .columns
            .iter()
            .any(|c| c.name == name && !self.hidden(c));
        if other || found.next().is_some() {
            return Err(Error::new(
                SqlState::AMBIGUOUS_COLUMN,
                format!("column reference \"{name}\" is ambiguous"),
            ));
        }
        Ok(Some(m))
    }

    /// The USING column `name` names unqualified, or `table.name` with
    /// [`USING_QUALIFIER`].
    pub fn merged_by(&self, table: Option<&str>, name: &str) -> Result<Option<&MergedColumn>> {
        let Some(t) = table else {
            return self.merged_column(name);
        };
        let first = t.strip_prefix(USING_QUALIFIER);
        Ok(self
            .merged
            .iter()
            .find(|m| Some(m.first_table.as_str()) == first && m.name == name))
    }

    /// Whether `name` or `table.name` names a column here.
    pub fn knows(&self, table: Option<&str>, name: &str) -> bool {
        self.resolve(table, name).is_ok()
            || match table {
                // Known even where ambiguous (the error is this query's).
                None => self.merged.iter().any(|m| m.name == name),
                Some(_) => self.merged_by(table, name).is_ok_and(|m| m.is_some()),
            }
    }

    /// Resolves `name` or `table.name` to a column position (a USING
    /// column: [`Scope::merged_column`]).
    pub fn resolve(&self, table: Option<&str>, name: &str) -> Result<usize> {
        let mut found = None;
        for (i, c) in self.columns.iter().enumerate() {
            if table.is_none() && self.hidden(c) {
                continue;
            }
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
