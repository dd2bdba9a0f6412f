//! SQL values, exact decimals, and their PostgreSQL text forms.
//!
//! Dates are days since 1970-01-01, timestamps microseconds since
//! 1970-01-01 00:00:00 (no time zone), NUMERIC a scaled `i128`.

use std::cmp::Ordering;
use std::fmt::Write as _;

use chrono::{DateTime, NaiveDate, NaiveDateTime, Timelike};

use crate::codec::Writer;
use crate::error::{Error, Result, SqlState};
use crate::json::Jsonb;
use crate::types::{DataType, ElemType, MAX_NUMERIC_PRECISION};

/// Largest scale a NUMERIC value carries.
pub const MAX_SCALE: u8 = 30;

/// An exact decimal: `mantissa × 10^-scale`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Decimal {
    pub mantissa: i128,
    pub scale: u8,
}

fn pow10(n: u8) -> Option<i128> {
    10i128.checked_pow(n as u32)
}

fn overflow() -> Error {
    Error::sql(
        SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
        "numeric value out of range",
    )
}

impl Decimal {
    pub fn new(mantissa: i128, scale: u8) -> Decimal {
        Decimal { mantissa, scale }
    }

    pub fn from_i64(v: i64) -> Decimal {
        Decimal::new(v as i128, 0)
    }

    /// Changes the scale, rounding half away from zero (as PostgreSQL does).
    pub fn rescale(self, scale: u8) -> Result<Decimal> {
        match scale.cmp(&self.scale) {
            Ordering::Equal => Ok(self),
            Ordering::Greater => {
                let f = pow10(scale - self.scale).ok_or_else(overflow)?;
                let m = self.mantissa.checked_mul(f).ok_or_else(overflow)?;
                Ok(Decimal::new(m, scale))
            }
            Ordering::Less => {
                let f = pow10(self.scale - scale).ok_or_else(overflow)?;
                let q = self.mantissa / f;
                let r = self.mantissa % f;
                let q = if r.abs() * 2 >= f {
                    q + self.mantissa.signum()
                } else {
                    q
                };
                Ok(Decimal::new(q, scale))
            }
        }
    }

    fn align(a: Decimal, b: Decimal) -> Result<(i128, i128, u8)> {
        let s = a.scale.max(b.scale);
        Ok((a.rescale(s)?.mantissa, b.rescale(s)?.mantissa, s))
    }

    pub fn checked_add(self, o: Decimal) -> Result<Decimal> {
        let (a, b, s) = Decimal::align(self, o)?;
        Ok(Decimal::new(a.checked_add(b).ok_or_else(overflow)?, s))
    }

    pub fn checked_sub(self, o: Decimal) -> Result<Decimal> {
        let (a, b, s) = Decimal::align(self, o)?;
        Ok(Decimal::new(a.checked_sub(b).ok_or_else(overflow)?, s))
    }

    pub fn checked_mul(self, o: Decimal) -> Result<Decimal> {
        let m = self.mantissa.checked_mul(o.mantissa).ok_or_else(overflow)?;
        let d = Decimal::new(m, self.scale + o.scale);
        if d.scale > MAX_SCALE {
            d.rescale(MAX_SCALE)
        } else {
            Ok(d)
        }
    }

    /// Division with the result scale PostgreSQL would pick for typical
    /// operands: at least 16 fractional digits, at least the operands' scales.
    pub fn checked_div(self, o: Decimal) -> Result<Decimal> {
        if o.mantissa == 0 {
            return Err(Error::sql(SqlState::DIVISION_BY_ZERO, "division by zero"));
        }
        let target = self.scale.max(o.scale).max(Decimal::div_scale(self, o));
        // self / o = (a·10^-sa) / (b·10^-sb); compute with one extra digit, then round.
        let extra = target + 1;
        let shift = extra as i32 + o.scale as i32 - self.scale as i32;
        let (num, den) = if shift >= 0 {
            let f = pow10(shift as u8).ok_or_else(overflow)?;
            (
                self.mantissa.checked_mul(f).ok_or_else(overflow)?,
                o.mantissa,
            )
        } else {
            let f = pow10((-shift) as u8).ok_or_else(overflow)?;
            (
                self.mantissa,
                o.mantissa.checked_mul(f).ok_or_else(overflow)?,
            )
        };
        let q = num / den;
        Decimal::new(q, extra).rescale(target)
    }

    /// PostgreSQL's select_div_scale: at least 16 significant digits,
    /// computed on base-10000 digit weights as PostgreSQL does.
    fn div_scale(a: Decimal, b: Decimal) -> u8 {
        let weight_and_first = |d: Decimal| -> (i32, i128) {
            let m = d.mantissa.abs();
            let Some(l) = m.checked_ilog10() else {
                return (0, 0);
            };
            let e10 = l as i32 - d.scale as i32;
            let w = e10.div_euclid(4);
            let p = d.scale as i32 + 4 * w;
            let first = if p >= 0 {
                m / pow10(p as u8).unwrap_or(1)
            } else {
                m * pow10((-p) as u8).unwrap_or(1)
            };
            (w, first)
        };
        let (w1, f1) = weight_and_first(a);
        let (w2, f2) = weight_and_first(b);
        let mut qweight = w1 - w2;
        if f1 <= f2 {
            qweight -= 1;
        }
        let rscale = 16 - qweight * 4;
        rscale.clamp(0, MAX_SCALE as i32) as u8
    }

    pub fn checked_neg(self) -> Result<Decimal> {
        Ok(Decimal::new(
            self.mantissa.checked_neg().ok_or_else(overflow)?,
            self.scale,
        ))
    }

    pub fn cmp_value(self, o: Decimal) -> Ordering {
        match Decimal::align(self, o) {
            Ok((a, b, _)) => a.cmp(&b),
            // Alignment overflowed: compare as floats (only for huge magnitudes).
            Err(_) => self.to_f64().total_cmp(&o.to_f64()),
        }
    }

    pub fn to_f64(self) -> f64 {
        self.mantissa as f64 / 10f64.powi(self.scale as i32)
    }

    pub fn from_f64(v: f64, scale: u8) -> Result<Decimal> {
        if !v.is_finite() {
            return Err(Error::sql(
                SqlState::FEATURE_NOT_SUPPORTED,
                "cannot convert infinity or NaN to numeric",
            ));
        }
        let s = format!("{:.*}", scale as usize, v);
        Decimal::parse(&s)
    }

    /// Rounds to the integer part (half away from zero).
    pub fn round_to_i128(self) -> i128 {
        self.rescale(0).map(|d| d.mantissa).unwrap_or(0)
    }

    /// The same value with trailing fractional zeros removed.
    pub fn normalized(self) -> Decimal {
        let mut d = self;
        while d.scale > 0 && d.mantissa % 10 == 0 {
            d.mantissa /= 10;
            d.scale -= 1;
        }
        d
    }

    pub fn parse(s: &str) -> Result<Decimal> {
        let bad = || {
            Error::sql(
                SqlState::INVALID_TEXT_REPRESENTATION,
                format!("invalid input syntax for type numeric: \"{s}\""),
            )
        };
        let t = s.trim();
        let (neg, t) = match t.as_bytes().first() {
            Some(b'-') => (true, &t[1..]),
            Some(b'+') => (false, &t[1..]),
            _ => (false, t),
        };
        let (mant, exp) = match t.find(['e', 'E']) {
            Some(i) => (&t[..i], t[i + 1..].parse::<i32>().map_err(|_| bad())?),
            None => (t, 0),
        };
        let (int, frac) = match mant.find('.') {
            Some(i) => (&mant[..i], &mant[i + 1..]),
            None => (mant, ""),
        };
        if (int.is_empty() && frac.is_empty())
            || !int.bytes().all(|b| b.is_ascii_digit())
            || !frac.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(bad());
        }
        let mut m: i128 = 0;
        for b in int.bytes().chain(frac.bytes()) {
            m = m
                .checked_mul(10)
                .and_then(|m| m.checked_add((b - b'0') as i128))
                .ok_or_else(overflow)?;
        }
        let mut scale = frac.len() as i32 - exp;
        if scale < 0 {
            m = m
                .checked_mul(pow10((-scale) as u8).ok_or_else(overflow)?)
                .ok_or_else(overflow)?;
            scale = 0;
        }
        let mut d = if scale > MAX_SCALE as i32 {
            let extra = (scale - MAX_SCALE as i32).min(60) as u8;
            Decimal::new(m, 0).rescale_down_by(extra, MAX_SCALE)
        } else {
            Decimal::new(m, scale as u8)
        };
        if neg {
            d.mantissa = -d.mantissa;
        }
        Ok(d)
    }

    fn rescale_down_by(self, extra: u8, scale: u8) -> Decimal {
        let f = pow10(extra.min(38)).unwrap_or(i128::MAX);
        let q = self.mantissa / f;
        let r = self.mantissa % f;
        let q = if r.abs() >= f / 2 { q + 1 } else { q };
        Decimal::new(q, scale)
    }

    /// Digits before the point (0 for |x| < 1).
    pub fn integer_digits(self) -> u32 {
        let f = pow10(self.scale).unwrap_or(i128::MAX);
        let ip = (self.mantissa / f).unsigned_abs();
        ip.checked_ilog10().map_or(0, |l| l + 1)
    }
}

impl std::fmt::Display for Decimal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let digits = self.mantissa.unsigned_abs().to_string();
        let s = self.scale as usize;
        if self.mantissa < 0 {
            f.write_str("-")?;
        }
        if s == 0 {
            return f.write_str(&digits);
        }
        if digits.len() <= s {
            write!(f, "0.{}{}", "0".repeat(s - digits.len()), digits)
        } else {
            let (i, fr) = digits.split_at(digits.len() - s);
            write!(f, "{i}.{fr}")
        }
    }
}

/// A SQL value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i32),
    BigInt(i64),
    Double(f64),
    Numeric(Decimal),
    /// Days since 1970-01-01.
    Date(i32),
    /// Microseconds since 1970-01-01 00:00:00.
    Timestamp(i64),
    Text(String),
    Bytea(Vec<u8>),
    Array(Box<ArrayValue>),
    /// A `json` value: its text as written.
    Json(String),
    Jsonb(Box<Jsonb>),
}

/// One dimension: its length and the subscript of its first element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim {
    pub len: i32,
    pub lower: i32,
}

/// An array value.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayValue {
    pub elem: ElemType,
    /// Outermost first; empty for the empty array.
    pub dims: Vec<Dim>,
    /// Row-major; as many as the product of the lengths.
    pub items: Vec<Value>,
}

fn invalid_text(ty: &str, s: &str) -> Error {
    Error::sql(
        SqlState::INVALID_TEXT_REPRESENTATION,
        format!("invalid input syntax for type {ty}: \"{s}\""),
    )
}

const UNIX_EPOCH_DAYS_CE: i32 = 719_163;

pub fn date_from_days(days: i32) -> Option<NaiveDate> {
    NaiveDate::from_num_days_from_ce_opt(days.checked_add(UNIX_EPOCH_DAYS_CE)?)
}

pub fn days_from_date(d: NaiveDate) -> i32 {
    d.num_days_from_ce() - UNIX_EPOCH_DAYS_CE
}

use chrono::Datelike;

/// Drops a trailing time-zone offset (`+00`, `-05:30`, `Z`, `UTC`), which
/// PostgreSQL ignores for DATE and TIMESTAMP (without time zone) input —
/// drivers such as JDBC send one.
fn strip_zone(t: &str) -> &str {
    for suffix in ["Z", " UTC", " GMT"] {
        if let Some(rest) = t.strip_suffix(suffix) {
            return rest.trim_end();
        }
    }
    // The offset sign comes after the date part (YYYY-MM-DD).
    if let Some(p) = t.rfind(['+', '-']).filter(|p| *p >= 10) {
        let zone = &t[p + 1..];
        if (2..=5).contains(&zone.len())
            && zone.bytes().all(|b| b.is_ascii_digit() || b == b':')
            && zone.as_bytes()[0].is_ascii_digit()
        {
            return t[..p].trim_end();
        }
    }
    t
}

pub fn parse_date(s: &str) -> Result<i32> {
    let t = strip_zone(s.trim());
    // A time of day after the date is read and dropped, as PostgreSQL's
    // date input does ('2024-01-01 10:00:00'::date = '2024-01-01').
    let with_time = || {
        [
            "%Y-%m-%d %H:%M:%S%.f",
            "%Y-%m-%dT%H:%M:%S%.f",
            "%Y-%m-%d %H:%M",
            "%Y-%m-%dT%H:%M",
        ]
        .iter()
        .find_map(|fmt| NaiveDateTime::parse_from_str(t, fmt).ok())
        .map(|dt| dt.date())
    };
    NaiveDate::parse_from_str(t, "%Y-%m-%d")
        .ok()
        .or_else(with_time)
        .map(days_from_date)
        .ok_or(())
        .map_err(|_| {
            Error::sql(
                SqlState::INVALID_DATETIME_FORMAT,
                format!("invalid input syntax for type date: \"{s}\""),
            )
        })
}

pub fn parse_timestamp(s: &str) -> Result<i64> {
    let t = strip_zone(s.trim());
    for fmt in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(dt) = NaiveDateTime::parse_from_str(t, fmt) {
            return Ok(dt.and_utc().timestamp_micros());
        }
    }
    if let Ok(d) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        return Ok(days_from_date(d) as i64 * 86_400_000_000);
    }
    Err(Error::sql(
        SqlState::INVALID_DATETIME_FORMAT,
        format!("invalid input syntax for type timestamp: \"{s}\""),
    ))
}

pub fn format_date(days: i32) -> String {
    match date_from_days(days) {
        Some(d) => d.format("%Y-%m-%d").to_string(),
        None => format!("<invalid date {days}>"),
    }
}

pub fn format_timestamp(micros: i64) -> String {
    match DateTime::from_timestamp_micros(micros) {
        Some(dt) => {
            let dt = dt.naive_utc();
            let mut s = dt.format("%Y-%m-%d %H:%M:%S").to_string();
            let us = dt.nanosecond() / 1000;
            if us != 0 {
                let frac = format!("{us:06}");
                s.push('.');
                s.push_str(frac.trim_end_matches('0'));
            }
            s
        }
        None => format!("<invalid timestamp {micros}>"),
    }
}

/// PostgreSQL's float8 output (shortest round-trip digits, exponent form
/// outside 1e-4 ≤ |x| < 1e15).
pub fn format_double(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let e = format!("{v:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..15).contains(&exp) {
        format!("{v}")
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    }
}

/// DOUBLE PRECISION input: NaN and the infinities by name; a number
/// beyond the type's range (`1e400`, or a non-zero one that would round
/// to zero, `1e-400`) is an error (22003), as PostgreSQL's `float8in`.
pub fn parse_double(s: &str) -> Result<f64> {
    let t = s.trim();
    let v = match t.to_ascii_lowercase().as_str() {
        "nan" | "+nan" | "-nan" => return Ok(f64::NAN),
        "infinity" | "inf" | "+infinity" | "+inf" => return Ok(f64::INFINITY),
        "-infinity" | "-inf" => return Ok(f64::NEG_INFINITY),
        _ => t
            .parse::<f64>()
            .map_err(|_| invalid_text("double precision", s))?,
    };
    let mantissa = t.split(['e', 'E']).next().unwrap_or("");
    let nonzero = mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b));
    if v.is_infinite() || (v == 0.0 && nonzero) {
        return Err(Error::sql(
            SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            format!("\"{t}\" is out of range for type double precision"),
        ));
    }
    Ok(v)
}

pub fn parse_bool(s: &str) -> Result<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "t" | "true" | "yes" | "y" | "on" | "1" => Ok(true),
        "f" | "false" | "no" | "n" | "off" | "0" => Ok(false),
        _ => Err(invalid_text("boolean", s)),
    }
}

fn parse_bytea(s: &str) -> Result<Vec<u8>> {
    if let Some(hex) = s.strip_prefix("\\x") {
        if hex.len() % 2 != 0 {
            return Err(invalid_text("bytea", s));
        }
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).map_err(|_| invalid_text("bytea", s)))
            .collect()
    } else {
        Ok(s.as_bytes().to_vec())
    }
}

/// A string as `CHAR(n)` stores it (PostgreSQL's `bpcharin` on
/// assignment): blank-padded to `n` characters; a longer string is an
/// error unless what goes beyond `n` is blanks only, which are cut.
pub fn pad_bpchar(s: &str, n: u32) -> Result<String> {
    let n = n as usize;
    let len = s.chars().count();
    if len <= n {
        let mut out = String::with_capacity(s.len() + n - len);
        out.push_str(s);
        out.extend(std::iter::repeat_n(' ', n - len));
        return Ok(out);
    }
    let cut = s.char_indices().nth(n).map_or(s.len(), |(i, _)| i);
    if s[cut..].bytes().all(|b| b == b' ') {
        return Ok(s[..cut].to_string());
    }
    Err(Error::sql(
        SqlState::STRING_DATA_RIGHT_TRUNCATION,
        format!("value too long for type character({n})"),
    ))
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The natural type of a non-null value (NUMERIC unconstrained).
    pub fn data_type(&self) -> Option<DataType> {
        Some(match self {
            Value::Null => return None,
            Value::Bool(_) => DataType::Bool,
            Value::Int(_) => DataType::Int,
            Value::BigInt(_) => DataType::BigInt,
            Value::Double(_) => DataType::Double,
            Value::Numeric(_) => DataType::Numeric {
                precision: 0,
                scale: 0,
            },
            Value::Date(_) => DataType::Date,
            Value::Timestamp(_) => DataType::Timestamp,
            Value::Text(_) => DataType::Text,
            Value::Bytea(_) => DataType::Bytea,
            Value::Array(a) => DataType::Array(a.elem),
            Value::Json(_) => DataType::Json,
            Value::Jsonb(_) => DataType::Jsonb,
        })
    }

    /// The value in PostgreSQL's text output format; `None` for NULL.
    pub fn to_pg_text(&self) -> Option<String> {
        Some(match self {
            Value::Null => return None,
            Value::Bool(b) => if *b { "t" } else { "f" }.into(),
            Value::Int(v) => v.to_string(),
            Value::BigInt(v) => v.to_string(),
            Value::Double(v) => format_double(*v),
            Value::Numeric(d) => d.to_string(),
            Value::Date(d) => format_date(*d),
            Value::Timestamp(t) => format_timestamp(*t),
            Value::Text(s) => s.clone(),
            Value::Bytea(b) => {
                let mut s = String::with_capacity(2 + b.len() * 2);
                s.push_str("\\x");
                for x in b {
                    let _ = write!(s, "{x:02x}");
                }
                s
            }
            Value::Array(a) => a.to_pg_text(),
            Value::Json(s) => s.clone(),
            Value::Jsonb(j) => j.to_string(),
        })
    }

    pub fn as_decimal(&self) -> Option<Decimal> {
        match self {
            Value::Int(v) => Some(Decimal::from_i64(*v as i64)),
            Value::BigInt(v) => Some(Decimal::from_i64(*v)),
            Value::Numeric(d) => Some(*d),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(v) => Some(*v as f64),
            Value::BigInt(v) => Some(*v as f64),
            Value::Double(v) => Some(*v),
            Value::Numeric(d) => Some(d.to_f64()),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(*v as i64),
            Value::BigInt(v) => Some(*v),
            _ => None,
        }
    }

    /// Explicit or implicit conversion to `ty` (CAST semantics; VARCHAR(n)
    /// too long is an error, as on assignment).
    /// [`Value::cast`] taking the value: text cast to a text type keeps
    /// its string (a bulk load casts every field).
    pub fn cast_into(self, ty: &DataType) -> Result<Value> {
        match (self, ty) {
            (Value::Text(s), DataType::Text) => Ok(Value::Text(s)),
            (Value::Text(s), DataType::Varchar(n)) if s.len() <= *n as usize => Ok(Value::Text(s)),
            (v, ty) => v.cast(ty),
        }
    }

    pub fn cast(&self, ty: &DataType) -> Result<Value> {
        if self.is_null() {
            return Ok(Value::Null);
        }
        let out_of_range = |t: &str| {
            Error::sql(
                SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
                format!("{t} out of range"),
            )
        };
        let cannot = || {
            Error::sql(
                SqlState::DATATYPE_MISMATCH,
                format!(
                    "cannot cast type {} to {}",
                    self.data_type().map(|t| t.sql_name()).unwrap_or_default(),
                    ty.sql_name()
                ),
            )
        };
        if let Some(v) = self.json_cast(ty) {
            return v;
        }
        Ok(match (self, ty) {
            (Value::Text(s), DataType::Array(e)) => {
                Value::Array(Box::new(ArrayValue::parse(s, *e)?))
            }
            (Value::Array(a), DataType::Array(e)) => Value::Array(Box::new(a.cast(*e)?)),
            (Value::Text(s), DataType::Text) => Value::Text(s.clone()),
            // The cast (not the output format) spells booleans out.
            (Value::Bool(b), DataType::Text | DataType::Varchar(_) | DataType::Char(_)) => {
                Value::Text(if *b { "true" } else { "false" }.into()).cast(ty)?
            }
            (v, DataType::Text) => Value::Text(v.to_pg_text().unwrap_or_default()),
            (v, DataType::Varchar(n)) => {
                let s = match v {
                    Value::Text(s) => s.clone(),
                    v => v.to_pg_text().unwrap_or_default(),
                };
                if s.chars().count() > *n as usize {
                    return Err(Error::sql(
                        SqlState::STRING_DATA_RIGHT_TRUNCATION,
                        format!("value too long for type character varying({n})"),
                    ));
                }
                Value::Text(s)
            }
            (v, DataType::Char(n)) => {
                let s = match v {
                    Value::Text(s) => s.as_str(),
                    v => &v.to_pg_text().unwrap_or_default(),
                };
                Value::Text(pad_bpchar(s, *n)?)
            }
            (Value::Text(s), DataType::Bool) => Value::Bool(parse_bool(s)?),
            (Value::Bool(b), DataType::Bool) => Value::Bool(*b),
            (Value::Bool(b), DataType::Int) => Value::Int(*b as i32),
            (Value::Text(s), DataType::Int) => Value::Int(s.trim().parse::<i32>().map_err(
                |_| match s.trim().parse::<i128>() {
                    Ok(_) => out_of_range("integer"),
                    Err(_) => invalid_text("integer", s),
                },
            )?),
            (Value::Text(s), DataType::BigInt) => Value::BigInt(s.trim().parse::<i64>().map_err(
                |_| match s.trim().parse::<i128>() {
                    Ok(_) => out_of_range("bigint"),
                    Err(_) => invalid_text("bigint", s),
                },
            )?),
            (Value::Text(s), DataType::Double) => Value::Double(parse_double(s)?),
            (Value::Text(s), DataType::Numeric { .. }) => {
                Value::Numeric(Decimal::parse(s)?).cast(ty)?
            }
            (Value::Text(s), DataType::Date) => Value::Date(parse_date(s)?),
            (Value::Text(s), DataType::Timestamp) => Value::Timestamp(parse_timestamp(s)?),
            (Value::Text(s), DataType::Bytea) => Value::Bytea(parse_bytea(s)?),
            (Value::Bytea(b), DataType::Bytea) => Value::Bytea(b.clone()),
            (Value::Date(d), DataType::Date) => Value::Date(*d),
            (Value::Date(d), DataType::Timestamp) => Value::Timestamp(*d as i64 * 86_400_000_000),
            (Value::Timestamp(t), DataType::Timestamp) => Value::Timestamp(*t),
            (Value::Timestamp(t), DataType::Date) => {
                Value::Date(t.div_euclid(86_400_000_000) as i32)
            }
            (v @ (Value::Int(_) | Value::BigInt(_)), DataType::Int) => {
                let x = v.as_i64().unwrap_or(0);
                Value::Int(i32::try_from(x).map_err(|_| out_of_range("integer"))?)
            }
            (v @ (Value::Int(_) | Value::BigInt(_)), DataType::BigInt) => {
                Value::BigInt(v.as_i64().unwrap_or(0))
            }
            (Value::Double(f), DataType::Int) => {
                let r = f.round_ties_even();
                if !(i32::MIN as f64..=i32::MAX as f64).contains(&r) {
                    return Err(out_of_range("integer"));
                }
                Value::Int(r as i32)
            }
            (Value::Double(f), DataType::BigInt) => {
                let r = f.round_ties_even();
                if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&r) {
                    return Err(out_of_range("bigint"));
                }
                Value::BigInt(r as i64)
            }
            (Value::Numeric(d), DataType::Int) => {
                Value::Int(i32::try_from(d.round_to_i128()).map_err(|_| out_of_range("integer"))?)
            }
            (Value::Numeric(d), DataType::BigInt) => {
                Value::BigInt(i64::try_from(d.round_to_i128()).map_err(|_| out_of_range("bigint"))?)
            }
            (v, DataType::Double) if v.as_f64().is_some() => {
                Value::Double(v.as_f64().unwrap_or(0.0))
            }
            (v, DataType::Numeric { precision, scale }) if v.as_f64().is_some() => {
                let d = match v {
                    Value::Double(f) => {
                        Decimal::from_f64(*f, if *precision == 0 { 15 } else { *scale })?
                    }
                    v => v.as_decimal().unwrap_or(Decimal::from_i64(0)),
                };
                Value::Numeric(constrain_numeric(d, *precision, *scale)?)
            }
            _ => return Err(cannot()),
        })
    }

    /// SQL comparison; `None` if either side is NULL or the types do not compare.
    pub fn sql_cmp(&self, other: &Value) -> Option<Ordering> {
        use Value::*;
        Some(match (self, other) {
            (Null, _) | (_, Null) => return None,
            (Bool(a), Bool(b)) => a.cmp(b),
            (Int(a), Int(b)) => a.cmp(b),
            (Int(_) | BigInt(_), Int(_) | BigInt(_)) => self.as_i64()?.cmp(&other.as_i64()?),
            (Double(_), _) | (_, Double(_)) => {
                let (a, b) = (self.as_f64()?, other.as_f64()?);
                // PostgreSQL orders NaN above every other value.
                a.partial_cmp(&b)
                    .unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
            }
            (Int(_) | BigInt(_) | Numeric(_), Int(_) | BigInt(_) | Numeric(_)) => {
                self.as_decimal()?.cmp_value(other.as_decimal()?)
            }
            (Date(a), Date(b)) => a.cmp(b),
            (Timestamp(a), Timestamp(b)) => a.cmp(b),
            (Date(a), Timestamp(b)) => (*a as i64 * 86_400_000_000).cmp(b),
            (Timestamp(a), Date(b)) => a.cmp(&(*b as i64 * 86_400_000_000)),
            (Text(a), Text(b)) => a.cmp(b),
            (Bytea(a), Bytea(b)) => a.cmp(b),
            (Array(a), Array(b)) => a.sql_cmp(b)?,
            (Jsonb(a), Jsonb(b)) => a.cmp_jsonb(b),
            _ => return None,
        })
    }

    /// Total order for sorting: NULLs last, then [`Value::sql_cmp`].
    pub fn sort_cmp(&self, other: &Value) -> Ordering {
        match (self.is_null(), other.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => self.sql_cmp(other).unwrap_or(Ordering::Equal),
        }
    }

    /// A byte key equal for values that compare equal (for hashing:
    /// GROUP BY, DISTINCT, hash joins, primary-key index).
    pub fn key_bytes(&self, w: &mut Writer) {
        match self {
            Value::Null => {
                w.u8(0);
            }
            Value::Bool(b) => {
                w.u8(1).bool(*b);
            }
            Value::Int(_) | Value::BigInt(_) | Value::Numeric(_) => {
                let d = self
                    .as_decimal()
                    .unwrap_or(Decimal::from_i64(0))
                    .normalized();
                w.u8(2).i128(d.mantissa).u8(d.scale);
            }
            Value::Double(f) => {
                let f = if *f == 0.0 { 0.0 } else { *f };
                let f = if f.is_nan() { f64::NAN } else { f };
                w.u8(3).f64(f);
            }
            Value::Date(d) => {
                w.u8(4).i32(*d);
            }
            Value::Timestamp(t) => {
                w.u8(5).i64(*t);
            }
            Value::Text(s) => {
                w.u8(6).str(s);
            }
            Value::Bytea(b) => {
                w.u8(7).bytes(b);
            }
            Value::Array(a) => {
                w.u8(8);
                a.key_bytes(w);
            }
            Value::Json(s) => {
                w.u8(9).str(s);
            }
            Value::Jsonb(j) => {
                // Equal values (1.0 and 1) share a key: numbers by value.
                w.u8(10);
                j.key_bytes(w);
            }
        }
    }
}

/// Rounds `d` to the column's scale and checks its precision.
pub fn constrain_numeric(d: Decimal, precision: u8, scale: u8) -> Result<Decimal> {
    if precision == 0 {
        return Ok(d);
    }
    let d = d.rescale(scale)?;
    if d.integer_digits() > (precision - scale) as u32 || precision > MAX_NUMERIC_PRECISION {
        return Err(Error::sql(
            SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            format!(
                "numeric field overflow: a field with precision {precision}, scale {scale} must round to an absolute value less than 10^{}",
                precision - scale
            ),
        ));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_timestamps_ignore_a_time_zone_offset() {
        let d = parse_date("2024-01-11").unwrap();
        assert_eq!(parse_date("2024-01-11 +00").unwrap(), d);
        assert_eq!(parse_date("2024-01-11+05:30").unwrap(), d);
        let t = parse_timestamp("2024-01-01 12:00:01").unwrap();
        assert_eq!(parse_timestamp("2024-01-01 12:00:01+00").unwrap(), t);
        assert_eq!(
            parse_timestamp("2024-01-01 12:00:01.000000-0800").unwrap(),
            t
        );
        assert_eq!(parse_timestamp("2024-01-01T12:00:01Z").unwrap(), t);
        assert!(parse_date("2024-01-1x").is_err());
        assert!(parse_timestamp("2024-01-01 12:00:01+ab").is_err());
    }

    #[test]
    fn a_date_reads_and_drops_a_time_of_day() {
        let d = parse_date("2007-01-02").unwrap();
        assert_eq!(parse_date("2007-01-02 00:00:00.000000").unwrap(), d);
        assert_eq!(parse_date("2007-01-02 23:59:59").unwrap(), d);
        assert_eq!(parse_date("2007-01-02T10:30").unwrap(), d);
        assert!(parse_date("2007-01-02 25:00:00").is_err());
        assert!(parse_date("2007-01-02 10:00:00 junk").is_err());
    }

    #[test]
    fn decimal_text_and_arithmetic() {
        let a = Decimal::parse("10.5").unwrap();
        assert_eq!(a.rescale(2).unwrap().to_string(), "10.50");
        assert_eq!(Decimal::parse("-0.05").unwrap().to_string(), "-0.05");
        assert_eq!(
            Decimal::parse("1.005")
                .unwrap()
                .rescale(2)
                .unwrap()
                .to_string(),
            "1.01"
        );
        assert_eq!(
            Decimal::parse("-1.005")
                .unwrap()
                .rescale(2)
                .unwrap()
                .to_string(),
            "-1.01"
        );
        let b = Decimal::parse("3").unwrap();
        assert_eq!(a.checked_add(b).unwrap().to_string(), "13.5");
        assert_eq!(a.checked_mul(b).unwrap().to_string(), "31.5");
        assert_eq!(
            Decimal::parse("1")
                .unwrap()
                .checked_div(b)
                .unwrap()
                .to_string(),
            "0.33333333333333333333"
        );
        assert!(a.checked_div(Decimal::from_i64(0)).is_err());
        assert!(Decimal::parse("abc").is_err());
        assert_eq!(Decimal::parse("1.5e2").unwrap().to_string(), "150");
    }

    #[test]
    fn double_output_matches_postgres() {
        assert_eq!(format_double(1.5), "1.5");
        assert_eq!(format_double(1e20), "1e+20");
        assert_eq!(format_double(0.00001), "1e-05");
        assert_eq!(format_double(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(format_double(123456.0), "123456");
    }

    #[test]
    fn dates_and_timestamps() {
        let d = parse_date("2024-02-29").unwrap();
        assert_eq!(format_date(d), "2024-02-29");
        assert_eq!(parse_date("1970-01-01").unwrap(), 0);
        let t = parse_timestamp("2024-01-02 03:04:05.25").unwrap();
        assert_eq!(format_timestamp(t), "2024-01-02 03:04:05.25");
        assert!(parse_date("2024-13-01").is_err());
    }

    #[test]
    fn numeric_constraint() {
        let v = Value::Text("123.456".into())
            .cast(&DataType::Numeric {
                precision: 5,
                scale: 2,
            })
            .unwrap();
        assert_eq!(v.to_pg_text().unwrap(), "123.46");
        assert!(Value::Text("1234.5".into())
            .cast(&DataType::Numeric {
                precision: 5,
                scale: 2
            })
            .is_err());
    }
}
