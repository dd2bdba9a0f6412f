//! SQL values as JSON and back: `to_json` / `to_jsonb` (PostgreSQL's
//! `datum_to_json`), the casts to and from `json` / `jsonb`, the
//! aggregates' results, and how a stored value is read back.
//!
//! ```text
//!  42, 1.50, 'x', true       42, 1.50, "x", true
//!  '2024-01-02 03:04'::ts    "2024-01-02T03:04:00"   (ISO 8601, as PostgreSQL)
//!  'NaN'::float8             "NaN"                   (not a JSON number)
//!  ARRAY[[1,2],[3,4]]        [[1,2],[3,4]]
//!  '1.5'::jsonb::int         2     '"x"'::jsonb::int  22023
//! ```

use std::fmt::Write as _;

use crate::array::ArrayValue;
use crate::codec::Writer;
use crate::error::{Error, Result, SqlState};
use crate::json::{self, escape_into, invalid, JsonNumber, Jsonb};
use crate::types::DataType;
use crate::value::{format_date, format_double, format_timestamp, Value};

/// A stored `json` / `jsonb` value's bytes.
pub fn decode_stored(ty: DataType, bytes: &[u8]) -> Result<Value> {
    let s = std::str::from_utf8(bytes).map_err(|_| Error::corrupted("invalid UTF-8 in json"))?;
    Ok(match ty {
        DataType::Json => Value::Json(s.to_string()),
        _ => Value::Jsonb(Box::new(
            Jsonb::parse(s).map_err(|_| Error::corrupted("stored jsonb does not parse"))?,
        )),
    })
}

impl Value {
    /// Casts to or from `json` / `jsonb`; `None` for other casts.
    pub fn json_cast(&self, ty: &DataType) -> Option<Result<Value>> {
        cast(self, ty)
    }
}

fn cast(v: &Value, ty: &DataType) -> Option<Result<Value>> {
    let textual = |t: &DataType| t.is_textual();
    Some(match (v, ty) {
        (Value::Text(s), DataType::Json) => json::parse(s).map(|_| Value::Json(s.clone())),
        (Value::Text(s), DataType::Jsonb) => Jsonb::parse(s).map(|j| Value::Jsonb(Box::new(j))),
        (Value::Json(s), DataType::Json) => Ok(Value::Json(s.clone())),
        (Value::Json(s), DataType::Jsonb) => Jsonb::parse(s).map(|j| Value::Jsonb(Box::new(j))),
        (Value::Jsonb(j), DataType::Json) => Ok(Value::Json(j.to_string())),
        (Value::Jsonb(j), DataType::Jsonb) => Ok(Value::Jsonb(j.clone())),
        (Value::Json(_) | Value::Jsonb(_), t) if textual(t) => return None,
        (Value::Jsonb(j), t @ (DataType::Bool | DataType::Numeric { .. })) => jsonb_scalar(j, t),
        (Value::Jsonb(j), t @ (DataType::Int | DataType::BigInt | DataType::Double)) => {
            jsonb_scalar(j, t)
        }
        (Value::Json(_) | Value::Jsonb(_), t) => Err(cannot_cast(v, t)),
        (v, t @ (DataType::Json | DataType::Jsonb)) if !v.is_null() => Err(cannot_cast(v, t)),
        _ => return None,
    })
}

fn cannot_cast(v: &Value, t: &DataType) -> Error {
    Error::sql(
        SqlState::CANNOT_COERCE,
        format!(
            "cannot cast type {} to {}",
            v.data_type().map(|t| t.sql_name()).unwrap_or_default(),
            t.sql_name()
        ),
    )
}

/// `jsonb::integer` and the like: only from a scalar of that kind.
fn jsonb_scalar(j: &Jsonb, ty: &DataType) -> Result<Value> {
    let name = match ty {
        DataType::Bool => "boolean",
        DataType::Int => "integer",
        DataType::BigInt => "bigint",
        DataType::Double => "double precision",
        _ => "numeric",
    };
    match (j, ty) {
        (Jsonb::Bool(b), DataType::Bool) => Ok(Value::Bool(*b)),
        (Jsonb::Number(n), DataType::Double) => Value::Text(n.to_string()).cast(ty),
        (Jsonb::Number(n), t) if *t != DataType::Bool => Value::Text(n.to_string())
            .cast(&DataType::Numeric {
                precision: 0,
                scale: 0,
            })?
            .cast(ty),
        (j, _) => Err(invalid(format!(
            "cannot cast jsonb {} to type {name}",
            j.type_name()
        ))),
    }
}

/// A SQL value as `json` text (PostgreSQL's `datum_to_json`).
pub fn write_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(x) => {
            let _ = write!(out, "{x}");
        }
        Value::BigInt(x) => {
            let _ = write!(out, "{x}");
        }
        Value::Numeric(d) => {
            let _ = write!(out, "{d}");
        }
        Value::Double(f) if f.is_finite() => out.push_str(&format_double(*f)),
        Value::Json(s) => out.push_str(s),
        Value::Jsonb(j) => j.write(out),
        Value::Array(a) => write_array(a, out),
        v => escape_into(out, &scalar_text(v)),
    }
}

/// The string a non-numeric scalar becomes in JSON (dates and times in
/// ISO 8601, as PostgreSQL's JSON output writes them).
pub(crate) fn scalar_text(v: &Value) -> String {
    match v {
        Value::Date(d) => format_date(*d),
        Value::Timestamp(t) => format_timestamp(*t).replacen(' ', "T", 1),
        v => v.to_pg_text().unwrap_or_default(),
    }
}

fn write_array(a: &ArrayValue, out: &mut String) {
    fn level(a: &ArrayValue, dim: usize, at: &mut usize, out: &mut String) {
        out.push('[');
        let len = a.dims[dim].len.max(0) as usize;
        for k in 0..len {
            if k > 0 {
                out.push(',');
            }
            if dim + 1 < a.dims.len() {
                level(a, dim + 1, at, out);
            } else {
                write_json(a.items.get(*at).unwrap_or(&Value::Null), out);
                *at += 1;
            }
        }
        out.push(']');
    }
    if a.dims.is_empty() {
        out.push_str("[]");
    } else {
        level(a, 0, &mut 0, out);
    }
}

pub fn to_json(v: &Value) -> String {
    let mut s = String::new();
    write_json(v, &mut s);
    s
}

/// A SQL value as `jsonb`.
pub fn to_jsonb(v: &Value) -> Result<Jsonb> {
    Ok(match v {
        Value::Null => Jsonb::Null,
        Value::Bool(b) => Jsonb::Bool(*b),
        Value::Int(_) | Value::BigInt(_) | Value::Numeric(_) => {
            Jsonb::Number(JsonNumber::parse(&v.to_pg_text().unwrap_or_default())?)
        }
        Value::Double(f) if f.is_finite() => Jsonb::Number(JsonNumber::parse(&format_double(*f))?),
        Value::Json(s) => Jsonb::parse(s)?,
        Value::Jsonb(j) => (**j).clone(),
        Value::Array(a) => {
            fn level(a: &ArrayValue, dim: usize, at: &mut usize) -> Result<Jsonb> {
                let len = a.dims[dim].len.max(0) as usize;
                let mut items = Vec::with_capacity(len);
                for _ in 0..len {
                    items.push(if dim + 1 < a.dims.len() {
                        level(a, dim + 1, at)?
                    } else {
                        *at += 1;
                        to_jsonb(a.items.get(*at - 1).unwrap_or(&Value::Null))?
                    });
                }
                Ok(Jsonb::Array(items))
            }
            if a.dims.is_empty() {
                Jsonb::Array(Vec::new())
            } else {
                level(a, 0, &mut 0)?
            }
        }
        v => Jsonb::String(scalar_text(v)),
    })
}

/// The aggregates' results: `json_agg` (`[1, 2]`; arrays after the first
/// on a new line, as PostgreSQL), `jsonb_agg`, `json_object_agg`
/// (`{ "a" : 1 }`), `jsonb_object_agg`; `pairs` are (key, value) in order.
pub fn json_agg(values: &[Value]) -> String {
    let mut s = String::from("[");
    for (k, v) in values.iter().enumerate() {
        if k > 0 {
            s.push_str(", ");
            if matches!(v, Value::Array(_)) {
                s.push_str("\n ");
            }
        }
        write_json(v, &mut s);
    }
    s.push(']');
    s
}

pub fn jsonb_agg(values: &[Value]) -> Result<Jsonb> {
    Ok(Jsonb::Array(
        values.iter().map(to_jsonb).collect::<Result<Vec<_>>>()?,
    ))
}

fn object_key(k: &Value) -> Result<String> {
    match k {
        Value::Null => Err(invalid("field name must not be null")),
        v => Ok(scalar_text(v)),
    }
}

pub fn json_object_agg(pairs: &[(Value, Value)]) -> Result<String> {
    let mut s = String::from("{ ");
    for (k, (key, v)) in pairs.iter().enumerate() {
        if k > 0 {
            s.push_str(", ");
        }
        escape_into(&mut s, &object_key(key)?);
        s.push_str(" : ");
        write_json(v, &mut s);
    }
    s.push_str(" }");
    Ok(s)
}

pub fn jsonb_object_agg(pairs: &[(Value, Value)]) -> Result<Jsonb> {
    Ok(Jsonb::object(
        pairs
            .iter()
            .map(|(k, v)| Ok((object_key(k)?, to_jsonb(v)?)))
            .collect::<Result<Vec<_>>>()?,
    ))
}

/// The hashing key of a jsonb value: equal values (`1.0`, `1`) agree.
impl Jsonb {
    pub fn key_bytes(&self, w: &mut Writer) {
        let j = self;
        match j {
            Jsonb::Null => {
                w.u8(0);
            }
            Jsonb::Bool(b) => {
                w.u8(1).bool(*b);
            }
            Jsonb::Number(n) => {
                let s = n.to_string();
                let s = if s.contains('.') {
                    s.trim_end_matches('0').trim_end_matches('.')
                } else {
                    &s
                };
                w.u8(2).str(s);
            }
            Jsonb::String(s) => {
                w.u8(3).str(s);
            }
            Jsonb::Array(items) => {
                w.u8(4).u32(items.len() as u32);
                for i in items {
                    i.key_bytes(w);
                }
            }
            Jsonb::Object(fields) => {
                w.u8(5).u32(fields.len() as u32);
                for (k, v) in fields {
                    w.str(k);
                    v.key_bytes(w);
                }
            }
        }
    }
}
