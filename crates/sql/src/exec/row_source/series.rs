//! `generate_series(start, stop [, step])` over integers, bigints and
//! numerics: the values from `start` while not past `stop`, `step` apart
//! (default 1), of the arguments' widest type — as PostgreSQL's. The
//! rows are made at once, so a series is capped at [`MAX_ROWS`] rows.

use ndpdb_formats::expr::Program;
use ndpdb_formats::{DataType, Decimal, SqlState, Value};
use sqlparser::ast::{CastKind, Expr};

use crate::bind::compile::{compile, numeric_result, Ty};
use crate::bind::scope::Scope;
use crate::plan::access::ast_type_of;
use crate::{Error, Result};

/// The most rows one series makes.
pub const MAX_ROWS: u64 = 50_000_000;

pub struct Series {
    start: Program,
    stop: Program,
    step: Option<Program>,
    ty: DataType,
}

/// The series of `args` and its type.
pub fn plan(
    args: &[Expr],
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<(Series, DataType)> {
    let signature = |tys: &[Ty]| {
        let names: Vec<String> = tys
            .iter()
            .map(|t| match t {
                Ty::Known(t) => t.sql_name(),
                _ => "unknown".into(),
            })
            .collect();
        Error::new(
            SqlState::UNDEFINED_FUNCTION,
            format!("function generate_series({}) does not exist", names.join(", ")),
        )
        .with_hint(
            "No function matches the given name and argument types. You might need to add explicit type casts.",
        )
    };
    let mut tys = Vec::new();
    for a in args {
        let mut probe = params.clone();
        tys.push(compile(a, scope, &mut probe)?.1);
    }
    if !(2..=3).contains(&args.len()) {
        return Err(signature(&tys));
    }
    let mut ty: Option<DataType> = None;
    for t in &tys {
        match t {
            Ty::Known(t) => {
                ty = Some(
                    match ty {
                        None => numeric_result(*t, *t),
                        Some(have) => numeric_result(have, *t),
                    }
                    .filter(|t| *t != DataType::Double)
                    .ok_or_else(|| signature(&tys))?,
                )
            }
            Ty::Null => {}
            _ => {}
        }
    }
    if ty.is_none() && tys.iter().any(|t| matches!(t, Ty::Literal(_))) {
        let names = vec!["unknown"; tys.len()].join(", ");
        return Err(Error::new(
            SqlState::AMBIGUOUS_FUNCTION,
            format!("function generate_series({names}) is not unique"),
        )
        .with_hint(
            "Could not choose a best candidate function. You might need to add explicit type casts.",
        ));
    }
    let ty = ty.unwrap_or(DataType::Int);
    let mut cast = |e: &Expr| -> Result<Program> {
        let e = Expr::Cast {
            kind: CastKind::Cast,
            expr: Box::new(e.clone()),
            data_type: ast_type_of(ty),
            format: None,
        };
        Ok(compile(&e, scope, params)?.0)
    };
    let series = Series {
        start: cast(&args[0])?,
        stop: cast(&args[1])?,
        step: args.get(2).map(&mut cast).transpose()?,
        ty,
    };
    Ok((series, ty))
}

impl Series {
    pub fn rows(&self, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        let start = self.start.eval(&[], params)?;
        let stop = self.stop.eval(&[], params)?;
        let step = match &self.step {
            Some(p) => p.eval(&[], params)?,
            None => Value::Int(1),
        };
        if start.is_null() || stop.is_null() || step.is_null() {
            return Ok(Vec::new());
        }
        let dec = |v: &Value| v.as_decimal().unwrap_or(Decimal::from_i64(0));
        let (start, stop, step) = (dec(&start), dec(&stop), dec(&step));
        if step.mantissa == 0 {
            return Err(Error::new(
                SqlState::INVALID_PARAMETER_VALUE,
                "step size cannot equal zero",
            ));
        }
        let up = step.mantissa > 0;
        let past = |v: &Decimal| {
            let c = v.cmp_value(stop);
            if up {
                c == std::cmp::Ordering::Greater
            } else {
                c == std::cmp::Ordering::Less
            }
        };
        let mut out = Vec::new();
        let mut v = start;
        while !past(&v) {
            ndpdb_host::interrupt::tick(1)?;
            if out.len() as u64 >= MAX_ROWS {
                return Err(Error::new(
                    SqlState::PROGRAM_LIMIT_EXCEEDED,
                    format!("generate_series makes at most {MAX_ROWS} rows in ndpdb"),
                ));
            }
            out.push(vec![self.value(v)?]);
            v = match v.checked_add(step) {
                Ok(n) => n,
                Err(_) => break,
            };
        }
        Ok(out)
    }

    fn value(&self, d: Decimal) -> Result<Value> {
        let integral = || {
            d.rescale(0)
                .ok()
                .and_then(|d| i64::try_from(d.mantissa).ok())
        };
        let out_of_range = |what: &str| {
            Error::new(
                SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
                format!("{what} out of range"),
            )
        };
        Ok(match self.ty {
            DataType::Int => Value::Int(
                integral()
                    .and_then(|x| i32::try_from(x).ok())
                    .ok_or_else(|| out_of_range("integer"))?,
            ),
            DataType::BigInt => Value::BigInt(integral().ok_or_else(|| out_of_range("bigint"))?),
            _ => Value::Numeric(d),
        })
    }
}
