//! `VALUES` rows: each column gets one type for all rows (PostgreSQL's
//! rule for a VALUES list: numbers widen to the widest number type,
//! untyped literals become text unless a row gives the column a type),
//! and every cell is cast to it.

use ndpdb_formats::expr::Program;
use ndpdb_formats::{DataType, SqlState};
use sqlparser::ast::{CastKind, Expr, Values};

use crate::bind::compile::{compile, numeric_result, Ty};
use crate::bind::scope::Scope;
use crate::plan::access::ast_type_of;
use crate::{Error, Result};

/// The column types and one program per cell.
pub fn plan(
    values: &Values,
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<(Vec<DataType>, Vec<Vec<Program>>)> {
    let width = values.rows.first().map_or(0, |r| r.len());
    if values.rows.iter().any(|r| r.len() != width) {
        return Err(Error::new(
            SqlState::SYNTAX_ERROR,
            "VALUES lists must all be the same length",
        ));
    }
    let mut types = Vec::with_capacity(width);
    for c in 0..width {
        let mut ty: Option<DataType> = None;
        for row in &values.rows {
            let mut probe = params.clone();
            let Ty::Known(t) = compile(&row[c], scope, &mut probe)?.1 else {
                continue;
            };
            ty = Some(match ty {
                None => t,
                Some(have) if have == t => have,
                Some(have) => match numeric_result(have, t) {
                    Some(n) => n,
                    None if have.is_textual() && t.is_textual() => DataType::Text,
                    None => {
                        return Err(Error::new(
                            SqlState::DATATYPE_MISMATCH,
                            format!(
                                "VALUES types {} and {} cannot be matched",
                                have.sql_name(),
                                t.sql_name()
                            ),
                        ))
                    }
                },
            });
        }
        types.push(ty.unwrap_or(DataType::Text));
    }
    let mut rows = Vec::with_capacity(values.rows.len());
    for row in &values.rows {
        let mut cells = Vec::with_capacity(width);
        for (e, ty) in row.iter().zip(&types) {
            let mut probe = params.clone();
            let same = compile(e, scope, &mut probe)?.1 == Ty::Known(*ty);
            let e = if same {
                e.clone()
            } else {
                Expr::Cast {
                    kind: CastKind::Cast,
                    expr: Box::new(e.clone()),
                    data_type: ast_type_of(*ty),
                    format: None,
                }
            };
            cells.push(compile(&e, scope, params)?.0);
        }
        rows.push(cells);
    }
    Ok((types, rows))
}
