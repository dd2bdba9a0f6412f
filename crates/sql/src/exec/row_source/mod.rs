//! FROM items that are not stored tables: `VALUES` lists,
//! `generate_series(…)`, and the system catalog (`information_schema`
//! and `pg_catalog` relations answered from ndpdb's own catalog). Each
//! makes its rows when the statement runs; filters, joins, aggregates
//! and ORDER BY then treat them like a table's.
//!
//! ```text
//!  FROM (VALUES (1, 'a'), (2, 'b')) AS t(x, y)   ─► Values: one program per cell
//!  FROM generate_series(1, 10, 2) AS g            ─► Series: start, stop, step
//!  FROM unnest(a, b) WITH ORDINALITY AS u(x, y, n) ─► Arrays, then a counter
//!  FROM jsonb_each(j) AS e(k, v)                  ─► Json: a json value's rows
//!  FROM information_schema.columns / pg_class     ─► System: rows from the catalog
//! ```

pub mod json_rows;
mod series;
pub mod system;
mod unnest;
mod values;

use std::cell::RefCell;

use ndpdb_formats::expr::Program;
use ndpdb_formats::{DataType, Value};
use ndpdb_host::Database;
use sqlparser::ast::{FunctionArg, FunctionArgExpr, TableFunctionArgs, Values};

use crate::bind::scope::Scope;
use crate::output::ResultColumn;
use ndpdb_formats::SqlState;

use crate::{Error, Result};

pub use system::SystemTable;

/// Rows made when the statement runs.
pub struct RowSource {
    pub columns: Vec<ResultColumn>,
    kind: Kind,
    /// `WITH ORDINALITY`: a last column numbering the rows from 1.
    ordinality: bool,
}

enum Kind {
    /// One program per cell (constants, parameters, outer references).
    Values(Vec<Vec<Program>>),
    Series(series::Series),
    Arrays(unnest::ArrayRows),
    Json(json_rows::JsonSource),
    System {
        table: SystemTable,
        /// The database name clients connected with (`table_catalog`).
        catalog: String,
    },
}

impl RowSource {
    /// EXPLAIN's name of the read.
    pub fn explain(&self) -> &'static str {
        match self.kind {
            Kind::Values(_) => "Values Scan",
            Kind::Series(_) | Kind::Arrays(_) | Kind::Json(_) => "Function Scan",
            Kind::System { .. } => "Catalog Scan",
        }
    }

    /// How many rows it makes, when known before it runs (a VALUES list).
    pub fn row_count(&self) -> Option<usize> {
        match &self.kind {
            Kind::Values(rows) => Some(rows.len()),
            Kind::Series(_) | Kind::Arrays(_) | Kind::Json(_) | Kind::System { .. } => None,
        }
    }

    /// The rows, with the statement's `params`.
    pub fn rows(&self, db: &Database, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        let mut rows = match &self.kind {
            Kind::Values(rows) => rows
                .iter()
                .map(|r| r.iter().map(|p| Ok(p.eval(&[], params)?)).collect())
                .collect::<Result<Vec<Vec<Value>>>>()?,
            Kind::Series(s) => s.rows(params)?,
            Kind::Arrays(a) => a.rows(params)?,
            Kind::Json(j) => j.rows(params)?,
            Kind::System { table, catalog } => table.rows(db, catalog),
        };
        if self.ordinality {
            for (k, r) in rows.iter_mut().enumerate() {
                r.push(Value::BigInt(k as i64 + 1));
            }
        }
        Ok(rows)
    }
}

/// `VALUES (…), (…)` as rows named `column1`, `column2`, … (or `names`).
pub fn plan_values(
    values: &Values,
    alias: &str,
    names: &[String],
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<RowSource> {
    let (types, rows) = values::plan(values, scope, params)?;
    if names.len() > types.len() {
        return Err(Error::new(
            SqlState::INVALID_COLUMN_REFERENCE,
            format!(
                "table \"{alias}\" has {} columns available but {} columns specified",
                types.len(),
                names.len()
            ),
        ));
    }
    let columns = types
        .into_iter()
        .enumerate()
        .map(|(i, ty)| ResultColumn {
            name: names
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("column{}", i + 1)),
            ty,
        })
        .collect();
    Ok(RowSource {
        columns,
        kind: Kind::Values(rows),
        ordinality: false,
    })
}

/// A set-returning function in FROM: `name(args)` under `alias` with
/// column names `names`, and a row number last `WITH ORDINALITY`.
pub fn plan_function(
    name: &str,
    args: &TableFunctionArgs,
    alias: &str,
    names: &[String],
    ordinality: bool,
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<RowSource> {
    let exprs = args
        .args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(e.clone()),
            _ => Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                format!("this argument of {name} is not supported"),
            )),
        })
        .collect::<Result<Vec<_>>>()?;
    plan_call(name, &exprs, alias, names, ordinality, scope, params)
}

/// [`plan_function`] with its arguments as expressions (`unnest(…)`
/// comes from the parser apart from other functions).
pub fn plan_call(
    name: &str,
    exprs: &[sqlparser::ast::Expr],
    alias: &str,
    names: &[String],
    ordinality: bool,
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<RowSource> {
    let base = name.trim_start_matches("pg_catalog.");
    let mut own_names: Vec<&str> = Vec::new();
    let (kind, types) = match base {
        b if b.starts_with("json") => match json_rows::plan(b, exprs, scope, params)? {
            Some((source, columns)) => {
                if source.named_columns() {
                    own_names = columns.iter().map(|c| c.0).collect();
                }
                (Kind::Json(source), columns.iter().map(|c| c.1).collect())
            }
            None => {
                return Err(Error::new(
                    SqlState::UNDEFINED_FUNCTION,
                    format!("function {b} does not exist"),
                ))
            }
        },
        "generate_series" => {
            let (series, ty) = series::plan(exprs, scope, params)?;
            (Kind::Series(series), vec![ty])
        }
        "unnest" => {
            let (rows, types) = unnest::plan_unnest(exprs, scope, params)?;
            (Kind::Arrays(rows), types)
        }
        "generate_subscripts" => (
            Kind::Arrays(unnest::plan_subscripts(exprs, scope, params)?),
            vec![DataType::Int],
        ),
        other => {
            return Err(Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!("function {other} does not exist"),
            ))
        }
    };
    let available = types.len() + ordinality as usize;
    if names.len() > available {
        return Err(Error::new(
            SqlState::INVALID_COLUMN_REFERENCE,
            format!(
                "table \"{alias}\" has {available} columns available but {} columns specified",
                names.len()
            ),
        ));
    }
    // A function of one column names it after the alias; several are
    // named after the function.
    let mut columns: Vec<ResultColumn> = types
        .iter()
        .enumerate()
        .map(|(k, ty)| ResultColumn {
            name: names.get(k).cloned().unwrap_or_else(|| {
                if let Some(own) = own_names.get(k) {
                    own.to_string()
                } else if types.len() == 1 {
                    alias.to_string()
                } else {
                    base.to_string()
                }
            }),
            ty: *ty,
        })
        .collect();
    if ordinality {
        columns.push(ResultColumn {
            name: names
                .get(types.len())
                .cloned()
                .unwrap_or_else(|| "ordinality".into()),
            ty: DataType::BigInt,
        });
    }
    Ok(RowSource {
        columns,
        kind,
        ordinality,
    })
}

thread_local! {
    static CATALOG: RefCell<String> = RefCell::new("postgres".into());
}

/// Runs `f` (a statement's planning) with `name` as the database name the
/// catalog relations report.
pub fn with_catalog_name<T>(name: &str, f: impl FnOnce() -> T) -> T {
    let before = CATALOG.with(|c| c.replace(name.to_string()));
    let out = f();
    CATALOG.with(|c| *c.borrow_mut() = before);
    out
}

/// The catalog relation `schema.name` names (no schema: a `pg_catalog`
/// relation, which comes first on the search path), if any.
pub fn system_relation(schema: Option<&str>, name: &str) -> Option<RowSource> {
    let table = SystemTable::find(schema, name)?;
    Some(RowSource {
        columns: table.columns(),
        kind: Kind::System {
            table,
            catalog: CATALOG.with(|c| c.borrow().clone()),
        },
        ordinality: false,
    })
}
