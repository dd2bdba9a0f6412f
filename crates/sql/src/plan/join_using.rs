//! `JOIN … USING (c, …)`: the join condition `left.c = right.c` for each
//! named column, where `left` is the one earlier item of the join tree
//! that has a column `c` (or the USING column `c` of an earlier join of
//! the tree) and `right` the item joined.
//!
//! ```text
//!  ns JOIN r USING (nspname)   ─►   ns JOIN r ON ns.nspname = r.nspname
//!  a FULL JOIN b USING (c) JOIN d USING (c)
//!                              ─►   … JOIN d ON COALESCE(a.c, b.c) = d.c
//! ```
//!
//! As in PostgreSQL the columns become one ([`MergedColumn`]): `SELECT *`
//! shows it once, before the tree's columns (the newest join's USING
//! columns first), and an unqualified `c` names it — the left side's
//! value for INNER and LEFT joins, the right side's for RIGHT, COALESCE
//! of both for FULL, at the type the columns share (bind/compile). `t1.c`
//! and `t2.c` still name the sides' columns. NATURAL joins are not
//! supported.

use ndpdb_formats::SqlState;
use sqlparser::ast::{BinaryOperator, Expr, Ident, ObjectName};

use crate::bind::scope::{last_ident, MergedColumn, Scope};
use crate::plan::join_plan::JoinKind;
use crate::{Error, Result};

/// The ON terms of `USING (columns)`; `scopes`: the FROM items of this
/// join tree so far (`first_table` first), the joined one last;
/// `merged`: the tree's USING columns so far, in the order `*` lists them
/// (this join's go first; a column merged again moves).
pub fn terms(
    columns: &[ObjectName],
    scopes: &[Scope],
    first_table: &str,
    kind: JoinKind,
    merged: &mut Vec<MergedColumn>,
) -> Result<Vec<Expr>> {
    let Some((right, left)) = scopes.split_last() else {
        return Ok(Vec::new());
    };
    let part = |t: &str| Ident::with_quote('"', t);
    let column = |t: &str, n: &str| Expr::CompoundIdentifier(vec![part(t), part(n)]);
    let mut out = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for c in columns {
        let name = last_ident(c);
        if names.contains(&name) {
            return Err(Error::new(
                SqlState::DUPLICATE_COLUMN,
                format!("column name \"{name}\" appears more than once in USING clause"),
            ));
        }
        names.push(name.clone());
        // The left side's `c`: a USING column of an earlier join of the
        // tree, or the one other column of that name.
        let owners: Vec<String> = left
            .iter()
            .flat_map(|s| s.columns.iter())
            .filter(|col| col.name == name)
            .filter(|col| {
                !merged
                    .iter()
                    .any(|m| m.hides.iter().any(|(t, n)| *t == col.table && *n == name))
            })
            .map(|col| col.table.clone())
            .collect();
        let earlier = merged.iter().position(|m| m.name == name);
        let (left_parts, mut hides) = match (earlier, owners.as_slice()) {
            (Some(i), []) => {
                let m = merged.remove(i);
                (m.parts, m.hides)
            }
            (None, [t]) => (vec![column(t, &name)], vec![(t.clone(), name.clone())]),
            (None, []) => {
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
        let mut right_cols = right.columns.iter().filter(|col| col.name == name);
        let Some(right_col) = right_cols.next() else {
            return Err(Error::new(
                SqlState::UNDEFINED_COLUMN,
                format!(
                    "column \"{name}\" specified in USING clause does not exist in right table"
                ),
            ));
        };
        if right_cols.next().is_some() {
            return Err(Error::new(
                SqlState::AMBIGUOUS_COLUMN,
                format!("common column name \"{name}\" appears more than once in right table"),
            ));
        }
        let right_expr = column(&right_col.table, &name);
        // `l = r` for one left column; COALESCE(l1, l2, …) = r otherwise.
        let left_expr = match left_parts.as_slice() {
            [one] => one.clone(),
            _ => coalesce(&left_parts),
        };
        out.push(Expr::BinaryOp {
            left: Box::new(left_expr),
            op: BinaryOperator::Eq,
            right: Box::new(right_expr.clone()),
        });
        hides.push((right_col.table.clone(), name.clone()));
        let parts = match kind {
            JoinKind::Inner | JoinKind::Left => left_parts,
            JoinKind::Right => vec![right_expr],
            JoinKind::Full => left_parts.into_iter().chain([right_expr]).collect(),
        };
        // This join's USING columns first, in their order.
        merged.insert(
            names.len() - 1,
            MergedColumn {
                name,
                parts,
                hides,
                first_table: first_table.to_string(),
            },
        );
    }
    Ok(out)
}

/// `COALESCE(parts…)` as an expression.
fn coalesce(parts: &[Expr]) -> Expr {
    use sqlparser::ast::{
        Function, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments,
    };
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new("coalesce")]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: parts
                .iter()
                .map(|p| FunctionArg::Unnamed(FunctionArgExpr::Expr(p.clone())))
                .collect(),
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}
