//! `JOIN … USING (c, …)`: the join condition `left.c = right.c` for each
//! named column, where `left` is the one earlier FROM item that has a
//! column `c` and `right` the item joined.
//!
//! ```text
//!  ns JOIN r USING (nspname)   ─►   ns JOIN r ON ns.nspname = r.nspname
//! ```
//!
//! PostgreSQL also merges the two columns into one (`SELECT *` shows it
//! once, an unqualified `c` names it); here both stay, so an unqualified
//! `c` is ambiguous (42702) and must be qualified. NATURAL joins are
//! not supported.

use ndpdb_formats::SqlState;
use sqlparser::ast::{BinaryOperator, Expr, Ident, ObjectName};

use crate::bind::scope::{last_ident, Scope};
use crate::{Error, Result};

/// The ON terms of `USING (columns)`; `scopes`: the FROM items so far,
/// the joined one last.
pub fn terms(columns: &[ObjectName], scopes: &[Scope]) -> Result<Vec<Expr>> {
    let Some((right, left)) = scopes.split_last() else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for c in columns {
        let name = last_ident(c);
        let owners: Vec<&str> = left
            .iter()
            .flat_map(|s| s.columns.iter())
            .filter(|col| col.name == name)
            .map(|col| col.table.as_str())
            .collect();
        let left_table = match owners.as_slice() {
            [t] => t.to_string(),
            [] => {
                return Err(Error::new(
                    SqlState::UNDEFINED_COLUMN,
                    format!(
                        "column \"{name}\" specified in USING clause does not exist in left table"
                    ),
                ))
            }
            _ => {
                return Err(Error::new(
                    SqlState::AMBIGUOUS_COLUMN,
                    format!("common column name \"{name}\" appears more than once in left table"),
                ))
            }
        };
        let Some(right_col) = right.columns.iter().find(|col| col.name == name) else {
            return Err(Error::new(
                SqlState::UNDEFINED_COLUMN,
                format!(
                    "column \"{name}\" specified in USING clause does not exist in right table"
                ),
            ));
        };
        let part = |t: &str| Ident::with_quote('"', t);
        out.push(Expr::BinaryOp {
            left: Box::new(Expr::CompoundIdentifier(vec![
                part(&left_table),
                part(&name),
            ])),
            op: BinaryOperator::Eq,
            right: Box::new(Expr::CompoundIdentifier(vec![
                part(&right_col.table),
                part(&name),
            ])),
        });
    }
    Ok(out)
}
