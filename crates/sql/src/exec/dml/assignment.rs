//! Naming columns in INSERT target lists and SET clauses (UPDATE, ON
//! CONFLICT DO UPDATE): the position of a named column (42703 if the table
//! has none), and one assignment compiled with PostgreSQL's checks.

use ndpdb_formats::expr::Program;
use ndpdb_formats::{DataType, SqlState};
use ndpdb_host::database::TableState;
use sqlparser::ast::{Assignment, AssignmentTarget, ObjectName};

use crate::bind::compile::{compile, Ty};
use crate::bind::scope::{last_ident, Scope};
use crate::{Error, Result};

pub(crate) fn column_position(ts: &TableState, name: &ObjectName) -> Result<usize> {
    let col = last_ident(name);
    ts.meta().schema.column_index(&col).ok_or_else(|| {
        Error::new(
            SqlState::UNDEFINED_COLUMN,
            format!(
                "column \"{col}\" of relation \"{}\" does not exist",
                ts.meta().name
            ),
        )
    })
}

/// One `SET col = expr` of UPDATE or of ON CONFLICT DO UPDATE: the
/// column's position and its value compiled over `scope` (a parameter
/// takes the column's type). `taken` says which columns earlier
/// assignments set (PostgreSQL refuses a second one).
pub(crate) fn plan_assignment(
    ts: &TableState,
    a: &Assignment,
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
    taken: &dyn Fn(usize) -> bool,
) -> Result<(usize, Program, Ty)> {
    let col = match &a.target {
        AssignmentTarget::ColumnName(n) => column_position(ts, n)?,
        AssignmentTarget::Tuple(_) => {
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                "tuple assignment is not supported",
            ))
        }
    };
    let meta = ts.meta();
    if taken(col) {
        return Err(Error::new(
            SqlState::SYNTAX_ERROR,
            format!(
                "multiple assignments to same column \"{}\"",
                meta.schema.columns[col].name
            ),
        ));
    }
    let (p, ty) = compile(&a.value, scope, params)?;
    if let Ty::Param(i) = ty {
        params[i as usize].get_or_insert(meta.schema.columns[col].ty);
    }
    Ok((col, p, ty))
}
