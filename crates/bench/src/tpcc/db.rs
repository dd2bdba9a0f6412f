//! Typed statement execution for TPC-C on a [`Conn`]: parameters and
//! result cells are [`Value`]s on every target. Over the wire a value is
//! encoded as the type the server declared for its parameter (NUMERIC and
//! TIMESTAMP included, in binary), and every result column is decoded
//! from its binary form, so DECIMAL money is exact on both sides.

use std::error::Error as StdError;

use bytes::{BufMut, BytesMut};
use postgres::types::{FromSql, IsNull, ToSql, Type};

use ndpdb_formats::{Decimal, SqlState, Value};
use ndpdb_sql::Output;

use crate::target::{Conn, Stmt};

/// A failed statement: its SQLSTATE and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbError {
    pub code: String,
    pub message: String,
}

impl DbError {
    pub fn new(code: &str, message: impl Into<String>) -> DbError {
        DbError {
            code: code.to_string(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

fn wire_db_error(e: postgres::Error) -> DbError {
    match e.as_db_error() {
        Some(db) => DbError::new(db.code().code(), db.message()),
        None => DbError::new(SqlState::CONNECTION_FAILURE.0, e.to_string()),
    }
}

fn engine_error(e: ndpdb_host::Error) -> DbError {
    DbError::new(&e.code.to_string(), e.message)
}

pub type Rows = Vec<Vec<Value>>;

/// Prepares `sql` on `conn`.
pub fn prepare(conn: &mut Conn, sql: &str) -> Result<Stmt, DbError> {
    match conn {
        Conn::Embedded(s) => s
            .prepare(sql)
            .map(|p| Stmt::Embedded(Box::new(p)))
            .map_err(engine_error),
        Conn::Wire(c) => c.prepare(sql).map(Stmt::Wire).map_err(wire_db_error),
    }
}

/// Runs a prepared statement that returns rows.
pub fn query(conn: &mut Conn, stmt: &Stmt, params: &[Value]) -> Result<Rows, DbError> {
    match (conn, stmt) {
        (Conn::Embedded(s), Stmt::Embedded(p)) => match s.execute_prepared(p, params) {
            Ok(Output::Rows { rows, .. }) => Ok(rows),
            Ok(Output::Command { tag }) => Err(DbError::new(
                SqlState::INTERNAL_ERROR.0,
                format!("expected rows, got the command tag {tag}"),
            )),
            Err(e) => Err(engine_error(e)),
        },
        (Conn::Wire(c), Stmt::Wire(st)) => {
            let args: Vec<Arg> = params.iter().map(Arg).collect();
            let refs: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a as _).collect();
            let rows = c.query(st, &refs).map_err(wire_db_error)?;
            rows.iter()
                .map(|row| {
                    (0..row.len())
                        .map(|i| {
                            row.try_get::<_, Cell>(i).map(|c| c.0).map_err(|e| {
                                DbError::new(SqlState::INTERNAL_ERROR.0, format!("column {i}: {e}"))
                            })
                        })
                        .collect()
                })
                .collect()
        }
        _ => Err(DbError::new(
            SqlState::INTERNAL_ERROR.0,
            "statement of another session kind",
        )),
    }
}

/// Runs a prepared statement without rows; returns the rows it affected.
pub fn exec(conn: &mut Conn, stmt: &Stmt, params: &[Value]) -> Result<u64, DbError> {
    match (conn, stmt) {
        (Conn::Embedded(s), Stmt::Embedded(p)) => match s.execute_prepared(p, params) {
            Ok(Output::Rows { rows, .. }) => Ok(rows.len() as u64),
            Ok(Output::Command { tag }) => Ok(tag
                .rsplit(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)),
            Err(e) => Err(engine_error(e)),
        },
        (Conn::Wire(c), Stmt::Wire(st)) => {
            let args: Vec<Arg> = params.iter().map(Arg).collect();
            let refs: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a as _).collect();
            c.execute(st, &refs).map_err(wire_db_error)
        }
        _ => Err(DbError::new(
            SqlState::INTERNAL_ERROR.0,
            "statement of another session kind",
        )),
    }
}

/// An integer cell.
pub fn int(v: &Value) -> Result<i64, DbError> {
    match v {
        Value::Int(i) => Ok(*i as i64),
        Value::BigInt(i) => Ok(*i),
        Value::Numeric(d) if d.scale == 0 => Ok(d.mantissa as i64),
        other => Err(DbError::new(
            SqlState::INTERNAL_ERROR.0,
            format!("expected an integer, got {other:?}"),
        )),
    }
}

/// An exact decimal cell (integers as scale 0).
pub fn decimal(v: &Value) -> Result<Decimal, DbError> {
    match v {
        Value::Numeric(d) => Ok(*d),
        Value::Int(i) => Ok(Decimal::from_i64(*i as i64)),
        Value::BigInt(i) => Ok(Decimal::from_i64(*i)),
        other => Err(DbError::new(
            SqlState::INTERNAL_ERROR.0,
            format!("expected a decimal, got {other:?}"),
        )),
    }
}

/// A money cell in cents (a DECIMAL(n,2) or any exact number).
pub fn cents(v: &Value) -> Result<i64, DbError> {
    decimal(v)?
        .rescale(2)
        .map(|d| d.mantissa as i64)
        .map_err(|e| DbError::new(SqlState::INTERNAL_ERROR.0, e.to_string()))
}

/// A text cell without CHAR(n)'s padding blanks ("" for NULL).
pub fn text(v: &Value) -> &str {
    match v {
        Value::Text(s) => s.trim_end_matches(' '),
        _ => "",
    }
}

/// An amount in cents as a DECIMAL parameter.
pub fn money(cents: i64) -> Value {
    Value::Numeric(Decimal::new(cents as i128, 2))
}

/// The current time as a TIMESTAMP parameter (µs since 1970).
pub fn now() -> Value {
    Value::Timestamp(now_micros())
}

pub fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// Microseconds between 1970-01-01 and 2000-01-01 (PostgreSQL's epoch).
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

type BoxError = Box<dyn StdError + Sync + Send>;

/// A parameter encoded as the type the server declared for it.
#[derive(Debug)]
struct Arg<'a>(&'a Value);

impl ToSql for Arg<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        let v = self.0;
        if matches!(v, Value::Null) {
            return Ok(IsNull::Yes);
        }
        match *ty {
            Type::INT2 => i16::try_from(whole(v)?)?.to_sql(ty, out),
            Type::INT4 => i32::try_from(whole(v)?)?.to_sql(ty, out),
            Type::INT8 => whole(v)?.to_sql(ty, out),
            Type::FLOAT8 => v.as_f64().ok_or_else(|| mismatch(v, ty))?.to_sql(ty, out),
            Type::FLOAT4 => (v.as_f64().ok_or_else(|| mismatch(v, ty))? as f32).to_sql(ty, out),
            Type::NUMERIC => {
                let d = match v {
                    Value::Numeric(d) => *d,
                    Value::Int(i) => Decimal::from_i64(*i as i64),
                    Value::BigInt(i) => Decimal::from_i64(*i),
                    _ => return Err(mismatch(v, ty)),
                };
                ndpdb_server::types::put_numeric(out, d);
                Ok(IsNull::No)
            }
            Type::TIMESTAMP | Type::TIMESTAMPTZ => match v {
                Value::Timestamp(us) => (us - PG_EPOCH_MICROS).to_sql(&Type::INT8, out),
                _ => Err(mismatch(v, ty)),
            },
            Type::BOOL => match v {
                Value::Bool(b) => b.to_sql(ty, out),
                _ => Err(mismatch(v, ty)),
            },
            // Text types (and parameters whose type the server left
            // open): the value's text form.
            _ => {
                let s = match v {
                    Value::Text(s) => s.clone(),
                    other => other.to_pg_text().unwrap_or_default(),
                };
                out.put_slice(s.as_bytes());
                Ok(IsNull::No)
            }
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

fn whole(v: &Value) -> Result<i64, BoxError> {
    match v {
        Value::Int(i) => Ok(*i as i64),
        Value::BigInt(i) => Ok(*i),
        Value::Numeric(d) if d.scale == 0 => Ok(i64::try_from(d.mantissa)?),
        other => Err(format!("{other:?} is not an integer").into()),
    }
}

fn mismatch(v: &Value, ty: &Type) -> BoxError {
    format!("cannot send {v:?} as {ty}").into()
}

/// A result cell decoded from its binary form.
struct Cell(Value);

impl<'a> FromSql<'a> for Cell {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Cell, BoxError> {
        Ok(Cell(match *ty {
            Type::BOOL => Value::Bool(bool::from_sql(ty, raw)?),
            Type::INT2 => Value::Int(i16::from_sql(ty, raw)? as i32),
            Type::INT4 => Value::Int(i32::from_sql(ty, raw)?),
            Type::INT8 => Value::BigInt(i64::from_sql(ty, raw)?),
            Type::FLOAT4 => Value::Double(f32::from_sql(ty, raw)? as f64),
            Type::FLOAT8 => Value::Double(f64::from_sql(ty, raw)?),
            Type::NUMERIC => Value::Numeric(ndpdb_server::types::decode_numeric(raw)?),
            Type::TIMESTAMP | Type::TIMESTAMPTZ => {
                Value::Timestamp(i64::from_sql(&Type::INT8, raw)? + PG_EPOCH_MICROS)
            }
            Type::DATE => Value::Date(i32::from_sql(&Type::INT4, raw)? + 10_957),
            Type::BYTEA => Value::Bytea(raw.to_vec()),
            _ => Value::Text(std::str::from_utf8(raw)?.to_string()),
        }))
    }

    fn from_sql_null(_: &Type) -> Result<Cell, BoxError> {
        Ok(Cell(Value::Null))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(m: i128, scale: u8) {
        let mut out = BytesMut::new();
        ndpdb_server::types::put_numeric(&mut out, Decimal::new(m, scale));
        let back = ndpdb_server::types::decode_numeric(&out).unwrap();
        assert_eq!((back.mantissa, back.scale), (m, scale), "{m} scale {scale}");
    }

    #[test]
    fn numeric_binary_form_round_trips() {
        for (m, s) in [
            (0, 0),
            (0, 2),
            (1, 2),
            (-1000, 2),
            (30_000_000, 2),
            (123_456_789, 4),
            (1234, 4),
            (5, 0),
            (10_000, 0),
            (-99_999_999_999, 2),
            (100_000_000, 0),
            (7, 6),
        ] {
            round_trip(m, s);
        }
        // 300000.00 as PostgreSQL sends it: one digit 30, weight 1, dscale 2.
        let mut out = BytesMut::new();
        ndpdb_server::types::put_numeric(&mut out, Decimal::new(30_000_000, 2));
        assert_eq!(&out[..], &[0, 1, 0, 1, 0, 0, 0, 2, 0, 30]);
    }
}
