//! What the built-in functions compute ([`Op::Call`](super::Op::Call)):
//! the catalog's functions first (`catalog_funcs.rs`), then the ones that
//! look at NULL arguments (COALESCE, GREATEST, LEAST, NULLIF), then the
//! strict ones, whose result is NULL when any argument is.
//!
//! ```text
//!  call(func, args) ─► array_funcs::call ── Some ─► its answer
//!        │ None
//!        ├─ catalog_funcs::call ── Some ─► its answer
//!        │ None
//!        ├─ COALESCE / GREATEST / LEAST / NULLIF ─► on_nulls
//!        ├─ any argument NULL ─► NULL
//!        └─ strict: numbers (abs, round, floor, ceil), text (lower …
//!           substr), time (extract, date_part, + interval), spn_score
//! ```

use std::cmp::Ordering;

use crate::error::{Error, Result, SqlState};
use crate::value::{Decimal, Value};

use super::arith::to_decimal;
use super::compare::compare;
use super::errors::{int_overflow, type_error};
use super::func::Func;
use super::program::Op;

/// `func(args…)`.
pub(super) fn call(func: Func, args: Vec<Value>) -> Result<Value> {
    if let Some(out) = crate::json_funcs::call(func, &args) {
        return out;
    }
    if let Some(out) = crate::array_funcs::call(func, &args) {
        return out;
    }
    if let Some(out) = crate::catalog_funcs::call(func, &args) {
        return out;
    }
    if matches!(
        func,
        Func::Coalesce | Func::Greatest | Func::Least | Func::NullIf
    ) {
        return on_nulls(func, args);
    }
    if args.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    strict(func, &args)
}

/// An error unless the call has `n` arguments.
fn arity(func: Func, args: &[Value], n: usize) -> Result<()> {
    if args.len() == n {
        Ok(())
    } else {
        Err(type_error(format!(
            "function {func:?} takes {n} arguments, got {}",
            args.len()
        )))
    }
}

/// The type error of `func` called with `v`.
fn bad(func: Func, v: &Value) -> Error {
    type_error(format!(
        "function {func:?} does not exist for argument {v:?}"
    ))
}

/// The functions whose result depends on which arguments are NULL.
fn on_nulls(func: Func, mut args: Vec<Value>) -> Result<Value> {
    match func {
        Func::Coalesce => Ok(args
            .into_iter()
            .find(|v| !v.is_null())
            .unwrap_or(Value::Null)),
        Func::Greatest | Func::Least => {
            let mut best: Option<Value> = None;
            for a in args.into_iter().filter(|v| !v.is_null()) {
                best = Some(match best {
                    None => a,
                    Some(b) => {
                        let ord = a
                            .sql_cmp(&b)
                            .ok_or_else(|| type_error("incomparable arguments".into()))?;
                        let take = if func == Func::Greatest {
                            ord == Ordering::Greater
                        } else {
                            ord == Ordering::Less
                        };
                        if take {
                            a
                        } else {
                            b
                        }
                    }
                });
            }
            Ok(best.unwrap_or(Value::Null))
        }
        _ => {
            // NULLIF
            arity(func, &args, 2)?;
            let b = args.pop().unwrap_or(Value::Null);
            let a = args.pop().unwrap_or(Value::Null);
            Ok(if compare(&Op::Eq, &a, &b)? == Value::Bool(true) {
                Value::Null
            } else {
                a
            })
        }
    }
}

/// The functions that are NULL on a NULL argument, called without one.
fn strict(func: Func, args: &[Value]) -> Result<Value> {
    match func {
        Func::OctetLength => {
            arity(func, args, 1)?;
            let bytes = match &args[0] {
                Value::Text(s) => s.len(),
                Value::Bytea(b) => b.len(),
                v => return Err(bad(func, v)),
            };
            Ok(Value::Int(i32::try_from(bytes).unwrap_or(i32::MAX)))
        }
        Func::Abs => {
            arity(func, args, 1)?;
            Ok(match &args[0] {
                Value::Int(x) => {
                    Value::Int(x.checked_abs().ok_or_else(|| int_overflow("integer"))?)
                }
                Value::BigInt(x) => {
                    Value::BigInt(x.checked_abs().ok_or_else(|| int_overflow("bigint"))?)
                }
                Value::Double(x) => Value::Double(x.abs()),
                Value::Numeric(d) => Value::Numeric(Decimal::new(d.mantissa.abs(), d.scale)),
                v => return Err(bad(func, v)),
            })
        }
        Func::Lower | Func::Upper | Func::Trim | Func::Rtrim | Func::Ltrim | Func::Length => {
            arity(func, args, 1)?;
            let s = match &args[0] {
                Value::Text(s) => s,
                v => return Err(bad(func, v)),
            };
            Ok(match func {
                Func::Lower => Value::Text(s.to_lowercase()),
                Func::Upper => Value::Text(s.to_uppercase()),
                Func::Trim => Value::Text(s.trim_matches(' ').to_string()),
                Func::Rtrim => Value::Text(s.trim_end_matches(' ').to_string()),
                Func::Ltrim => Value::Text(s.trim_start_matches(' ').to_string()),
                _ => Value::Int(s.chars().count() as i32),
            })
        }
        Func::Round | Func::Floor | Func::Ceil => round(func, args),
        Func::AddInterval => {
            arity(func, args, 4)?;
            let (Value::Timestamp(t), Some(months), Some(days), Some(micros)) = (
                &args[0],
                args[1].as_i64(),
                args[2].as_i64(),
                args[3].as_i64(),
            ) else {
                return Err(bad(func, &args[0]));
            };
            crate::datetime_part::add_interval(*t, months, days, micros).map(Value::Timestamp)
        }
        Func::Extract | Func::DatePart => {
            arity(func, args, 2)?;
            crate::datetime_part::part(&args[0], &args[1], func == Func::Extract)
        }
        Func::SpnScore => {
            arity(func, args, 1)?;
            match &args[0] {
                Value::Bytea(b) => Ok(Value::Double(crate::udf::spn_score(b)?)),
                v => Err(bad(func, v)),
            }
        }
        Func::Ascii => {
            arity(func, args, 1)?;
            match &args[0] {
                Value::Text(s) => Ok(Value::Int(s.chars().next().map_or(0, |c| c as i32))),
                v => Err(bad(func, v)),
            }
        }
        Func::Chr => chr(func, args),
        Func::Strpos => {
            arity(func, args, 2)?;
            let (Value::Text(s), Value::Text(sub)) = (&args[0], &args[1]) else {
                return Err(bad(func, &args[0]));
            };
            Ok(Value::Int(match s.find(sub.as_str()) {
                Some(at) => s[..at].chars().count() as i32 + 1,
                None => 0,
            }))
        }
        Func::Substr => substr(func, args),
        _ => Err(bad(func, &Value::Null)),
    }
}

/// `round(x [, digits])`, `floor(x)`, `ceil(x)`: DOUBLE stays DOUBLE,
/// integers and NUMERIC become NUMERIC.
fn round(func: Func, args: &[Value]) -> Result<Value> {
    let digits = if args.len() == 2 && func == Func::Round {
        args[1].as_i64().ok_or_else(|| bad(func, &args[1]))?
    } else {
        arity(func, args, 1)?;
        0
    };
    Ok(match &args[0] {
        Value::Double(x) => Value::Double(match func {
            Func::Round => {
                let f = 10f64.powi(digits as i32);
                (x * f).round() / f
            }
            Func::Floor => x.floor(),
            _ => x.ceil(),
        }),
        v @ (Value::Int(_) | Value::BigInt(_) | Value::Numeric(_)) => {
            let d = to_decimal(v);
            let s = digits.clamp(0, 30) as u8;
            Value::Numeric(match func {
                Func::Round => d.rescale(s)?,
                Func::Floor | Func::Ceil => {
                    let r = d.rescale(0)?;
                    let back = r.rescale(d.scale)?;
                    let adj = match (func, back.mantissa.cmp(&d.mantissa)) {
                        (Func::Floor, Ordering::Greater) => -1,
                        (Func::Ceil, Ordering::Less) => 1,
                        _ => 0,
                    };
                    Decimal::new(r.mantissa + adj, 0)
                }
                _ => d,
            })
        }
        v => return Err(bad(func, v)),
    })
}

/// `chr(code)`: the character of a code point.
fn chr(func: Func, args: &[Value]) -> Result<Value> {
    arity(func, args, 1)?;
    let code = args[0].as_i64().ok_or_else(|| bad(func, &args[0]))?;
    match code {
        0 => Err(Error::sql(
            SqlState::PROGRAM_LIMIT_EXCEEDED,
            "null character not permitted",
        )),
        c if c < 0 => Err(Error::sql(
            SqlState::INVALID_PARAMETER_VALUE,
            "character number must be positive",
        )),
        c => u32::try_from(c)
            .ok()
            .and_then(char::from_u32)
            .map(|ch| Value::Text(ch.to_string()))
            .ok_or_else(|| {
                Error::sql(
                    SqlState::PROGRAM_LIMIT_EXCEEDED,
                    format!("requested character too large for encoding: {c}"),
                )
            }),
    }
}

/// `substr(s, start [, len])`, 1-based over characters.
fn substr(func: Func, args: &[Value]) -> Result<Value> {
    if !(2..=3).contains(&args.len()) {
        return Err(type_error(format!(
            "function {func:?} takes 2 or 3 arguments, got {}",
            args.len()
        )));
    }
    let s = match &args[0] {
        Value::Text(s) => s.clone(),
        v => return Err(bad(func, v)),
    };
    let start = args
        .get(1)
        .and_then(Value::as_i64)
        .ok_or_else(|| bad(func, &args[0]))?;
    let chars: Vec<char> = s.chars().collect();
    let len = match args.get(2) {
        Some(v) => {
            let l = v.as_i64().ok_or_else(|| bad(func, v))?;
            if l < 0 {
                return Err(Error::sql(
                    SqlState::SUBSTRING_ERROR,
                    "negative substring length not allowed",
                ));
            }
            l
        }
        None => i64::MAX / 4,
    };
    let from = (start - 1).max(0);
    let to = (start - 1).saturating_add(len).max(0);
    let out: String = chars
        .iter()
        .skip(from as usize)
        .take((to - from).max(0) as usize)
        .collect();
    Ok(Value::Text(out))
}
