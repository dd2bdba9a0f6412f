//! Column defaults at INSERT (and `SET col = DEFAULT`): the catalog keeps
//! each default as SQL text; a plan compiles it in its query context, so
//! `nextval('t_id_seq')` is a per-row sequence call and `now()` the
//! transaction's time.

use ndpdb_formats::expr::{Op, Program};
use ndpdb_formats::{DataType, SqlState, Value};
use ndpdb_host::catalog::{Identity, TableMeta};
use sqlparser::ast::Expr;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use crate::bind::compile::compile;
use crate::bind::scope::Scope;
use crate::{Error, Result};

/// `DEFAULT` where a value may stand (VALUES, SET).
pub fn is_default_keyword(e: &Expr) -> bool {
    matches!(e, Expr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"))
}

/// The stored text of a default as an expression.
pub fn parse_default(text: &str) -> Result<Expr> {
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| {
            Error::new(
                SqlState::DATA_CORRUPTED,
                format!("column default \"{text}\" does not parse: {e}"),
            )
        })
}

/// The value of column `col` when no value names it: its default
/// compiled over `scope` (no columns), or NULL.
pub fn default_program(
    meta: &TableMeta,
    col: usize,
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<Program> {
    match meta.default_of(col) {
        Some(d) => Ok(compile(&parse_default(&d.expr)?, scope, params)?.0),
        None => Ok(Program {
            consts: vec![Value::Null],
            ops: vec![Op::Const(0)],
        }),
    }
}

/// An explicit value for a `GENERATED ALWAYS AS IDENTITY` column is
/// refused, as in PostgreSQL (428C9).
pub fn check_explicit_value(meta: &TableMeta, col: usize) -> Result<()> {
    match meta.default_of(col) {
        Some(d) if d.identity == Identity::Always => {
            let name = &meta.schema.columns[col].name;
            Err(Error::new(
                SqlState::GENERATED_ALWAYS,
                format!("cannot insert a non-DEFAULT value into column \"{name}\""),
            )
            .with_detail(format!(
                "Column \"{name}\" is an identity column defined as GENERATED ALWAYS."
            ))
            .with_hint("Use OVERRIDING SYSTEM VALUE to override."))
        }
        _ => Ok(()),
    }
}
