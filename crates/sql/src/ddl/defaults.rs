//! A column's `DEFAULT` expression checked when a table is created or
//! altered, as PostgreSQL checks it: no column reference (0A000), no
//! subquery (0A000), no parameter (42P02); sequence functions are fine.
//!
//! ```text
//!  DEFAULT nextval('s')   compiles in an empty scope ─► accepted
//!  DEFAULT a + 1          42703 from the compiler  ─► 0A000
//! ```
//!
//! The expression is compiled in a query context of its own and thrown
//! away; INSERT compiles it again where it is used (exec/dml/column_default.rs).

use ndpdb_formats::SqlState;
use ndpdb_host::Database;
use sqlparser::ast::Expr;

use crate::bind::compile::{compile, has_subquery};
use crate::bind::scope::Scope;
use crate::plan::subquery::QueryContext;
use crate::{Error, Result};

/// A `DEFAULT` expression: no column may appear in it; it must compile
/// (sequence functions and subqueries included).
pub fn check_default(db: &Database, e: &Expr) -> Result<()> {
    if has_subquery(e) {
        return Err(Error::new(
            SqlState::FEATURE_NOT_SUPPORTED,
            "cannot use subquery in DEFAULT expression",
        ));
    }
    let ctx = QueryContext::new(db, 0, None, std::sync::Arc::new(Vec::new()));
    let mut params = Vec::new();
    match compile(e, &Scope::within(&ctx), &mut params) {
        Err(err) if err.code == SqlState::UNDEFINED_COLUMN => Err(Error::new(
            SqlState::FEATURE_NOT_SUPPORTED,
            "cannot use column reference in DEFAULT expression",
        )),
        Err(err) => Err(err),
        Ok(_) if !params.is_empty() => Err(Error::new(
            SqlState::UNDEFINED_PARAMETER,
            "there is no parameter $1",
        )),
        Ok(_) => {
            ctx.finish();
            Ok(())
        }
    }
}
