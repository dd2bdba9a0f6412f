//! The array set-returning functions in FROM: `unnest(a [, b …])`, each
//! array's elements in storage order (all dimensions flattened), several
//! arrays side by side padded with NULLs to the longest, as PostgreSQL's;
//! and `generate_subscripts(a, dim [, reverse])`, the subscripts of one
//! dimension.
//!
//! ```text
//!  unnest('{{1,2},{3,4}}'::int[])          1, 2, 3, 4
//!  unnest(ARRAY[1,2], ARRAY['a'])          (1, a), (2, NULL)
//!  generate_subscripts('[0:2]={7,8,9}', 1) 0, 1, 2
//! ```

use ndpdb_formats::expr::Program;
use ndpdb_formats::{DataType, SqlState, Value};
use sqlparser::ast::Expr;

use crate::bind::compile::{compile, compile_array, Ty};
use crate::bind::scope::Scope;
use crate::{Error, Result};

pub enum ArrayRows {
    Unnest(Vec<Program>),
    Subscripts {
        array: Program,
        dim: Program,
        reverse: Option<Program>,
    },
}

fn no_function(name: &str, tys: &[Ty]) -> Error {
    let names: Vec<String> = tys
        .iter()
        .map(|t| match t {
            Ty::Known(t) => t.sql_name(),
            _ => "unknown".into(),
        })
        .collect();
    Error::new(
        SqlState::UNDEFINED_FUNCTION,
        format!("function {name}({}) does not exist", names.join(", ")),
    )
    .with_hint(
        "No function matches the given name and argument types. You might need to add explicit type casts.",
    )
}

/// `unnest(args)`: the rows' programs and the column types.
pub fn plan_unnest(
    args: &[Expr],
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<(ArrayRows, Vec<DataType>)> {
    let mut programs = Vec::new();
    let mut tys = Vec::new();
    let mut elems = Vec::new();
    for a in args {
        let (p, e) = compile_array(a, scope, params)?;
        match e {
            Ok(e) => {
                tys.push(Ty::Known(DataType::Array(e)));
                elems.push(e.scalar());
            }
            Err(t) => {
                tys.push(t);
                return Err(no_function("unnest", &tys));
            }
        }
        programs.push(p);
    }
    if programs.is_empty() {
        return Err(no_function("unnest", &tys));
    }
    Ok((ArrayRows::Unnest(programs), elems))
}

/// `generate_subscripts(array, dim [, reverse])`: integer subscripts.
pub fn plan_subscripts(
    args: &[Expr],
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<ArrayRows> {
    let mut compiled = Vec::new();
    for (k, a) in args.iter().enumerate() {
        compiled.push(if k == 0 {
            let (p, e) = compile_array(a, scope, params)?;
            (p, e.map_or_else(|t| t, |e| Ty::Known(DataType::Array(e))))
        } else {
            compile(a, scope, params)?
        });
    }
    let tys: Vec<Ty> = compiled.iter().map(|c| c.1).collect();
    let ok = matches!(tys.first(), Some(Ty::Known(DataType::Array(_))))
        && matches!(
            tys.get(1),
            Some(Ty::Known(DataType::Int | DataType::BigInt) | Ty::Literal(_) | Ty::Param(_))
        )
        && (2..=3).contains(&tys.len());
    if !ok {
        return Err(no_function("generate_subscripts", &tys));
    }
    let mut it = compiled.into_iter().map(|c| c.0);
    let (Some(array), Some(dim)) = (it.next(), it.next()) else {
        return Err(no_function("generate_subscripts", &tys));
    };
    Ok(ArrayRows::Subscripts {
        array,
        dim,
        reverse: it.next(),
    })
}

impl ArrayRows {
    pub fn rows(&self, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        match self {
            ArrayRows::Unnest(programs) => {
                let arrays = programs
                    .iter()
                    .map(|p| {
                        Ok(match p.eval(&[], params)? {
                            Value::Array(a) => a.items,
                            _ => Vec::new(),
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                let n = arrays.iter().map(Vec::len).max().unwrap_or(0);
                Ok((0..n)
                    .map(|k| {
                        arrays
                            .iter()
                            .map(|a| a.get(k).cloned().unwrap_or(Value::Null))
                            .collect()
                    })
                    .collect())
            }
            ArrayRows::Subscripts {
                array,
                dim,
                reverse,
            } => {
                let (Value::Array(a), Some(d)) =
                    (array.eval(&[], params)?, dim.eval(&[], params)?.as_i64())
                else {
                    return Ok(Vec::new());
                };
                let reverse = match reverse {
                    Some(r) => r.eval(&[], params)? == Value::Bool(true),
                    None => false,
                };
                Ok(a.subscripts(d, reverse)
                    .into_iter()
                    .map(|i| vec![Value::Int(i)])
                    .collect())
            }
        }
    }
}
