//! Arithmetic on values: unary minus, `+ - * / %` with PostgreSQL's
//! promotion (int → bigint → numeric → double), date ± days, and text
//! concatenation, every overflow and division by zero an SQL error.
//!
//! ```text
//!  Int(7) + Numeric(1.50) ─ num_class 0, 2 ─► max 2 ─► Numeric(8.50)
//!  Date(d) - Int(3)       ─────────────────────────► Date(d - 3)
//! ```

use crate::error::{Error, Result, SqlState};
use crate::value::{Decimal, Value};

use super::errors::{div_zero, int_overflow, type_error};
use super::program::Op;

/// `-v`, overflow-checked.
pub(super) fn negate(v: Value) -> Result<Value> {
    Ok(match v {
        Value::Null => Value::Null,
        Value::Int(x) => Value::Int(x.checked_neg().ok_or_else(|| int_overflow("integer"))?),
        Value::BigInt(x) => Value::BigInt(x.checked_neg().ok_or_else(|| int_overflow("bigint"))?),
        Value::Double(x) => Value::Double(-x),
        Value::Numeric(d) => Value::Numeric(d.checked_neg()?),
        v => return Err(type_error(format!("operator does not exist: - {v:?}"))),
    })
}

/// Numeric promotion class: 0 int, 1 bigint, 2 numeric, 3 double.
fn num_class(v: &Value) -> Option<u8> {
    match v {
        Value::Int(_) => Some(0),
        Value::BigInt(_) => Some(1),
        Value::Numeric(_) => Some(2),
        Value::Double(_) => Some(3),
        _ => None,
    }
}

/// An integer or NUMERIC as a [`Decimal`] (0 for anything else).
pub(super) fn to_decimal(v: &Value) -> Decimal {
    match v {
        Value::Int(x) => Decimal::from_i64(*x as i64),
        Value::BigInt(x) => Decimal::from_i64(*x),
        Value::Numeric(d) => *d,
        _ => Decimal::from_i64(0),
    }
}

/// `a op b` for `+ - * / %` and `||`: date arithmetic, then the numeric
/// type both promote to (int, bigint, numeric, double), overflow-checked.
pub(super) fn arith(op: &Op, a: Value, b: Value) -> Result<Value> {
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    if let Op::Concat = op {
        let s = |v: &Value| v.to_pg_text().unwrap_or_default();
        return Ok(Value::Text(s(&a) + &s(&b)));
    }
    let opname = match op {
        Op::Add => "+",
        Op::Sub => "-",
        Op::Mul => "*",
        Op::Div => "/",
        _ => "%",
    };
    // Date arithmetic.
    match (op, &a, &b) {
        (Op::Add, Value::Date(d), x) | (Op::Add, x, Value::Date(d)) if x.as_i64().is_some() => {
            let r = (*d as i64) + x.as_i64().unwrap_or(0);
            return Ok(Value::Date(
                i32::try_from(r).map_err(|_| int_overflow("date"))?,
            ));
        }
        (Op::Sub, Value::Date(d), x) if x.as_i64().is_some() => {
            let r = (*d as i64) - x.as_i64().unwrap_or(0);
            return Ok(Value::Date(
                i32::try_from(r).map_err(|_| int_overflow("date"))?,
            ));
        }
        (Op::Sub, Value::Date(x), Value::Date(y)) => return Ok(Value::Int(x - y)),
        _ => {}
    }
    let (ca, cb) = match (num_class(&a), num_class(&b)) {
        (Some(x), Some(y)) => (x, y),
        _ => {
            return Err(type_error(format!(
                "operator does not exist: {} {opname} {}",
                a.data_type().map(|t| t.sql_name()).unwrap_or_default(),
                b.data_type().map(|t| t.sql_name()).unwrap_or_default()
            )))
        }
    };
    match ca.max(cb) {
        0 => {
            let (x, y) = (
                a.as_i64().unwrap_or(0) as i32,
                b.as_i64().unwrap_or(0) as i32,
            );
            let r = match op {
                Op::Add => x.checked_add(y),
                Op::Sub => x.checked_sub(y),
                Op::Mul => x.checked_mul(y),
                Op::Div => {
                    if y == 0 {
                        return Err(div_zero());
                    }
                    x.checked_div(y)
                }
                _ => {
                    if y == 0 {
                        return Err(div_zero());
                    }
                    Some(x.wrapping_rem(y))
                }
            };
            Ok(Value::Int(r.ok_or_else(|| int_overflow("integer"))?))
        }
        1 => {
            let (x, y) = (a.as_i64().unwrap_or(0), b.as_i64().unwrap_or(0));
            let r = match op {
                Op::Add => x.checked_add(y),
                Op::Sub => x.checked_sub(y),
                Op::Mul => x.checked_mul(y),
                Op::Div => {
                    if y == 0 {
                        return Err(div_zero());
                    }
                    x.checked_div(y)
                }
                _ => {
                    if y == 0 {
                        return Err(div_zero());
                    }
                    Some(x.wrapping_rem(y))
                }
            };
            Ok(Value::BigInt(r.ok_or_else(|| int_overflow("bigint"))?))
        }
        2 => {
            let (x, y) = (to_decimal(&a), to_decimal(&b));
            Ok(Value::Numeric(match op {
                Op::Add => x.checked_add(y)?,
                Op::Sub => x.checked_sub(y)?,
                Op::Mul => x.checked_mul(y)?,
                Op::Div => x.checked_div(y)?,
                _ => {
                    if y.mantissa == 0 {
                        return Err(div_zero());
                    }
                    let s = x.scale.max(y.scale);
                    let (xm, ym) = (x.rescale(s)?.mantissa, y.rescale(s)?.mantissa);
                    Decimal::new(xm % ym, s)
                }
            }))
        }
        _ => {
            let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
            let r = match op {
                Op::Add => x + y,
                Op::Sub => x - y,
                Op::Mul => x * y,
                Op::Div => {
                    if y == 0.0 {
                        return Err(div_zero());
                    }
                    x / y
                }
                _ => {
                    if y == 0.0 {
                        return Err(div_zero());
                    }
                    x % y
                }
            };
            if r.is_infinite() && x.is_finite() && y.is_finite() {
                return Err(Error::sql(
                    SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
                    "value out of range: overflow",
                ));
            }
            Ok(Value::Double(r))
        }
    }
}
