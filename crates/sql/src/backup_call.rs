//! `SELECT ndpdb_backup('/path/to/new/dir')`: an online base backup from
//! any session (simple or extended protocol), so that a database served by `ndpdb serve` can be backed
//! up without stopping it (`ndpdb backup --server` sends this). One row
//! comes back: the checkpoint LSN a restore replays from, the pages and
//! the bytes copied. Like VACUUM it runs outside transaction blocks.

use ndpdb_formats::{DataType, SqlState, Value};
use ndpdb_host::Database;
use sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, SelectItem, SetExpr, Statement,
};

use crate::{Error, Output, Result, ResultColumn};

const NAME: &str = "ndpdb_backup";

/// Whether `stmt` is `SELECT ndpdb_backup(…)` (and nothing else).
pub fn is_backup_call(stmt: &Statement) -> bool {
    call_args(stmt).is_some()
}

/// The arguments of the call, if `stmt` is one.
fn call_args(stmt: &Statement) -> Option<Vec<&Expr>> {
    lone_call(stmt, &[NAME])
}

/// The positional arguments of `f(…)` if `stmt` is `SELECT f(…)` and
/// nothing else (no FROM, no WHERE, one item), `f` one of `names`
/// (lower case, as written or schema-qualified).
pub(crate) fn lone_call<'a>(stmt: &'a Statement, names: &[&str]) -> Option<Vec<&'a Expr>> {
    let Statement::Query(q) = stmt else {
        return None;
    };
    let SetExpr::Select(s) = q.body.as_ref() else {
        return None;
    };
    if !s.from.is_empty() || s.selection.is_some() || s.projection.len() != 1 {
        return None;
    }
    let (SelectItem::UnnamedExpr(Expr::Function(f))
    | SelectItem::ExprWithAlias {
        expr: Expr::Function(f),
        ..
    }) = &s.projection[0]
    else {
        return None;
    };
    let name = f.name.to_string().to_lowercase();
    if !names.contains(&name.as_str()) {
        return None;
    }
    Some(unnamed_args(f))
}

/// The positional arguments of a function call (named ones and `*` left
/// out).
pub(crate) fn unnamed_args(f: &Function) -> Vec<&Expr> {
    match &f.args {
        FunctionArguments::List(l) => l
            .args
            .iter()
            .filter_map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The columns of the call's one row.
pub fn columns() -> Vec<ResultColumn> {
    ["checkpoint_lsn", "pages", "bytes"]
        .into_iter()
        .map(|name| ResultColumn {
            name: name.into(),
            ty: DataType::BigInt,
        })
        .collect()
}

/// Runs the backup `stmt` asks for; `in_block`: a transaction block is
/// open in the session.
pub fn run(db: &Database, stmt: &Statement, in_block: bool) -> Result<Output> {
    if in_block {
        return Err(Error::new(
            SqlState::ACTIVE_SQL_TRANSACTION,
            "ndpdb_backup() cannot run inside a transaction block",
        ));
    }
    let args = call_args(stmt).unwrap_or_default();
    let target = match args.as_slice() {
        [Expr::Value(v)] => match &v.value {
            sqlparser::ast::Value::SingleQuotedString(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    };
    let Some(target) = target else {
        return Err(Error::new(
            SqlState::UNDEFINED_FUNCTION,
            "function ndpdb_backup takes one argument: the backup directory as a string literal",
        ));
    };
    let report = db.backup(std::path::Path::new(&target), &|_, _| {})?;
    Ok(Output::Rows {
        columns: columns(),
        rows: vec![vec![
            Value::BigInt(report.label.checkpoint.0 as i64),
            Value::BigInt(report.label.pages as i64),
            Value::BigInt(report.bytes as i64),
        ]],
    })
}
