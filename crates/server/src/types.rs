//! Values on the wire (DESIGN.md §11): PostgreSQL type OIDs, and the text
//! and binary formats of every ndpdb type.
//!
//! ```text
//!  ndpdb type     OID    binary format (big-endian)
//!  BOOLEAN         16    1 byte
//!  INTEGER         23    i32            (int2 20→ also accepted as a parameter)
//!  BIGINT          20    i64
//!  DOUBLE         701    f64            (float4 700 accepted as a parameter)
//!  NUMERIC       1700    ndigits, weight, sign, dscale: i16; base-10000 digits
//!  TEXT / VARCHAR 25/1043 UTF-8 bytes
//!  BYTEA           17    raw bytes
//!  DATE          1082    i32 days since 2000-01-01
//!  TIMESTAMP     1114    i64 microseconds since 2000-01-01 00:00:00
//!  arrays        1000…   ndim i32, has-nulls i32, element OID u32,
//!                        ndim × (length i32, lower bound i32),
//!                        elements × (length i32 or -1, element bytes)
//! ```
//!
//! Parameters arrive as untrusted bytes: every decoder checks lengths and
//! answers a SQLSTATE error (22P03 invalid binary representation) instead
//! of panicking.

use bytes::{BufMut, BytesMut};
use pgwire::api::results::FieldFormat;
use pgwire::api::Type;

use ndpdb_formats::array::{ArrayValue, Dim, ElemType, MAX_DIMS};

use ndpdb_formats::value::Decimal;
use ndpdb_formats::{DataType, Error, SqlState, Value};

/// Days between 1970-01-01 and 2000-01-01 (PostgreSQL's epoch).
const PG_EPOCH_DAYS: i32 = 10_957;
/// Microseconds between the two epochs.
const PG_EPOCH_MICROS: i64 = PG_EPOCH_DAYS as i64 * 86_400_000_000;

const NUMERIC_POS: u16 = 0x0000;
const NUMERIC_NEG: u16 = 0x4000;
const NUMERIC_NAN: u16 = 0xC000;

/// The PostgreSQL type of a column type.
pub fn pg_type(ty: &DataType) -> Type {
    match ty {
        DataType::Bool => Type::BOOL,
        DataType::Int => Type::INT4,
        DataType::BigInt => Type::INT8,
        DataType::Double => Type::FLOAT8,
        DataType::Numeric { .. } => Type::NUMERIC,
        DataType::Text => Type::TEXT,
        DataType::Varchar(_) => Type::VARCHAR,
        DataType::Char(_) => Type::BPCHAR,
        DataType::Bytea => Type::BYTEA,
        DataType::Date => Type::DATE,
        DataType::Timestamp => Type::TIMESTAMP,
        DataType::Json => Type::JSON,
        DataType::Jsonb => Type::JSONB,
        DataType::Array(e) => match e.scalar() {
            DataType::Bool => Type::BOOL_ARRAY,
            DataType::Int => Type::INT4_ARRAY,
            DataType::BigInt => Type::INT8_ARRAY,
            DataType::Double => Type::FLOAT8_ARRAY,
            DataType::Numeric { .. } => Type::NUMERIC_ARRAY,
            DataType::Varchar(_) => Type::VARCHAR_ARRAY,
            DataType::Char(_) => Type::BPCHAR_ARRAY,
            DataType::Bytea => Type::BYTEA_ARRAY,
            DataType::Date => Type::DATE_ARRAY,
            DataType::Timestamp => Type::TIMESTAMP_ARRAY,
            DataType::Json => Type::JSON_ARRAY,
            DataType::Jsonb => Type::JSONB_ARRAY,
            DataType::Text | DataType::Array(_) => Type::TEXT_ARRAY,
        },
    }
}

/// The ndpdb type a client-declared parameter type maps to (`None` for
/// "unspecified" or a type ndpdb has no column type for).
pub fn data_type_of(ty: &Type) -> Option<DataType> {
    Some(match *ty {
        Type::BOOL => DataType::Bool,
        Type::INT2 | Type::INT4 => DataType::Int,
        Type::INT8 => DataType::BigInt,
        Type::FLOAT4 | Type::FLOAT8 => DataType::Double,
        Type::NUMERIC => DataType::Numeric {
            precision: 0,
            scale: 0,
        },
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => DataType::Text,
        Type::BYTEA => DataType::Bytea,
        Type::DATE => DataType::Date,
        Type::TIMESTAMP | Type::TIMESTAMPTZ => DataType::Timestamp,
        Type::JSON => DataType::Json,
        Type::JSONB => DataType::Jsonb,
        _ => DataType::Array(ElemType::of(data_type_of(&array_member(ty)?)?)?),
    })
}

/// The element type of an array type a client may name.
fn array_member(ty: &Type) -> Option<Type> {
    Some(match *ty {
        Type::BOOL_ARRAY => Type::BOOL,
        Type::INT2_ARRAY => Type::INT2,
        Type::INT4_ARRAY => Type::INT4,
        Type::INT8_ARRAY => Type::INT8,
        Type::FLOAT4_ARRAY => Type::FLOAT4,
        Type::FLOAT8_ARRAY => Type::FLOAT8,
        Type::NUMERIC_ARRAY => Type::NUMERIC,
        Type::TEXT_ARRAY => Type::TEXT,
        Type::VARCHAR_ARRAY => Type::VARCHAR,
        Type::BPCHAR_ARRAY => Type::BPCHAR,
        Type::NAME_ARRAY => Type::NAME,
        Type::BYTEA_ARRAY => Type::BYTEA,
        Type::DATE_ARRAY => Type::DATE,
        Type::TIMESTAMP_ARRAY => Type::TIMESTAMP,
        Type::TIMESTAMPTZ_ARRAY => Type::TIMESTAMPTZ,
        Type::JSON_ARRAY => Type::JSON,
        Type::JSONB_ARRAY => Type::JSONB,
        _ => return None,
    })
}

fn bad_binary(what: &str) -> Error {
    Error::sql(
        SqlState::INVALID_BINARY_REPRESENTATION,
        format!("incorrect binary data format in bind parameter ({what})"),
    )
}

fn fixed<const N: usize>(bytes: &[u8], what: &str) -> Result<[u8; N], Error> {
    bytes.try_into().map_err(|_| bad_binary(what))
}

/// Format codes of Bind (parameters or result columns): none means all
/// text, one applies to every column, otherwise one per column.
#[derive(Clone, Debug, Default)]
pub struct Format(Vec<i16>);

impl Format {
    pub fn new(codes: Vec<i16>) -> Format {
        Format(codes)
    }

    /// All text (what Describe of a statement reports).
    pub fn text() -> Format {
        Format(Vec::new())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The code of column `i`.
    pub fn code(&self, i: usize) -> i16 {
        match self.0.as_slice() {
            [] => 0,
            [one] => *one,
            many => many.get(i).copied().unwrap_or(0),
        }
    }

    fn unsupported(code: i16) -> Error {
        Error::sql(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("unsupported format code: {code}"),
        )
    }

    /// Whether column `i` is binary; a code other than 0 or 1 is 22023.
    pub fn binary(&self, i: usize) -> Result<bool, Error> {
        match self.code(i) {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(Format::unsupported(other)),
        }
    }

    /// Every code must be 0 (text) or 1 (binary).
    pub fn check(&self) -> Result<(), Error> {
        match self.0.iter().find(|c| !matches!(c, 0 | 1)) {
            Some(c) => Err(Format::unsupported(*c)),
            None => Ok(()),
        }
    }

    /// pgwire's format of column `i` (after [`Format::check`]).
    pub fn field_format(&self, i: usize) -> FieldFormat {
        if self.code(i) == 1 {
            FieldFormat::Binary
        } else {
            FieldFormat::Text
        }
    }
}

/// Decodes one bound parameter. `declared` is the type the client named
/// in Parse (or UNKNOWN), `inferred` the type ndpdb inferred from context.
pub fn decode_param(
    bytes: Option<&[u8]>,
    binary: bool,
    declared: Option<&Type>,
    inferred: Option<DataType>,
) -> Result<Value, Error> {
    let Some(bytes) = bytes else {
        return Ok(Value::Null);
    };
    let declared = declared.filter(|t| **t != Type::UNKNOWN);
    if !binary {
        let text = crate::wire::body::utf8(bytes).map_err(|e| Error::sql(e.code, e.message))?;
        let target = declared.and_then(data_type_of).or(inferred);
        let v = Value::Text(text.to_string());
        return match target {
            Some(t) => v.cast(&t),
            None => Ok(v),
        };
    }
    let ty = match declared {
        Some(t) => t.clone(),
        None => match &inferred {
            Some(t) => pg_type(t),
            None => {
                return Err(Error::sql(
                    SqlState::INDETERMINATE_DATATYPE,
                    "could not determine data type of a binary parameter",
                ))
            }
        },
    };
    Ok(match ty {
        Type::BOOL => match bytes {
            [b] => Value::Bool(*b != 0),
            _ => return Err(bad_binary("bool")),
        },
        Type::INT2 => Value::Int(i16::from_be_bytes(fixed(bytes, "int2")?) as i32),
        Type::INT4 => Value::Int(i32::from_be_bytes(fixed(bytes, "int4")?)),
        Type::INT8 => Value::BigInt(i64::from_be_bytes(fixed(bytes, "int8")?)),
        Type::FLOAT4 => Value::Double(f32::from_be_bytes(fixed(bytes, "float4")?) as f64),
        Type::FLOAT8 => Value::Double(f64::from_be_bytes(fixed(bytes, "float8")?)),
        Type::NUMERIC => Value::Numeric(decode_numeric(bytes)?),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => Value::Text(
            String::from_utf8(bytes.to_vec()).map_err(|_| bad_binary("text is not UTF-8"))?,
        ),
        Type::BYTEA => Value::Bytea(bytes.to_vec()),
        Type::DATE => {
            let d = i32::from_be_bytes(fixed(bytes, "date")?);
            Value::Date(
                d.checked_add(PG_EPOCH_DAYS)
                    .ok_or_else(|| bad_binary("date"))?,
            )
        }
        Type::TIMESTAMP | Type::TIMESTAMPTZ => {
            let t = i64::from_be_bytes(fixed(bytes, "timestamp")?);
            Value::Timestamp(
                t.checked_add(PG_EPOCH_MICROS)
                    .ok_or_else(|| bad_binary("timestamp"))?,
            )
        }
        // json's binary form is its text; jsonb's a version byte (1)
        // and its text.
        Type::JSON | Type::JSONB => {
            let text = match (ty == Type::JSONB, bytes) {
                (true, [1, rest @ ..]) => rest,
                (true, _) => return Err(bad_binary("jsonb version")),
                (false, b) => b,
            };
            let text = std::str::from_utf8(text).map_err(|_| bad_binary("json is not UTF-8"))?;
            Value::Text(text.to_string()).cast(&data_type_of(&ty).unwrap_or(DataType::Json))?
        }
        ref other if array_member(other).is_some() => decode_binary_array(bytes, other)?,
        other => {
            return Err(Error::sql(
                SqlState::FEATURE_NOT_SUPPORTED,
                format!(
                    "binary parameters of type {} are not supported",
                    other.name()
                ),
            ))
        }
    })
}

/// Appends one field (length prefix + bytes, or -1 for NULL) to a DataRow.
pub fn put_field(buf: &mut BytesMut, v: &Value, format: FieldFormat) {
    if matches!(v, Value::Null) {
        buf.put_i32(-1);
        return;
    }
    let at = buf.len();
    buf.put_i32(0);
    match format {
        FieldFormat::Text => {
            if let Some(s) = v.to_pg_text() {
                buf.put_slice(s.as_bytes());
            }
        }
        FieldFormat::Binary => put_binary(buf, v),
    }
    let len = (buf.len() - at - 4) as i32;
    buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

fn put_binary(buf: &mut BytesMut, v: &Value) {
    match v {
        Value::Null => {}
        Value::Bool(b) => buf.put_u8(*b as u8),
        Value::Int(i) => buf.put_i32(*i),
        Value::BigInt(i) => buf.put_i64(*i),
        Value::Double(d) => buf.put_f64(*d),
        Value::Numeric(d) => put_numeric(buf, *d),
        Value::Date(d) => buf.put_i32(d.wrapping_sub(PG_EPOCH_DAYS)),
        Value::Timestamp(t) => buf.put_i64(t.wrapping_sub(PG_EPOCH_MICROS)),
        Value::Text(s) => buf.put_slice(s.as_bytes()),
        Value::Bytea(b) => buf.put_slice(b),
        Value::Json(s) => buf.put_slice(s.as_bytes()),
        Value::Jsonb(j) => {
            buf.put_u8(1);
            buf.put_slice(j.to_string().as_bytes());
        }
        Value::Array(a) => {
            let member = pg_type(&a.elem.scalar());
            buf.put_i32(a.dims.len() as i32);
            buf.put_i32(a.items.iter().any(Value::is_null) as i32);
            buf.put_u32(member.oid());
            for d in &a.dims {
                buf.put_i32(d.len);
                buf.put_i32(d.lower);
            }
            for v in &a.items {
                put_field(buf, v, FieldFormat::Binary);
            }
        }
    }
}

/// An array parameter in the binary format (see the table above).
fn decode_binary_array(bytes: &[u8], ty: &Type) -> Result<Value, Error> {
    let member = array_member(ty).ok_or_else(|| bad_binary("array"))?;
    let elem = data_type_of(&member)
        .and_then(ElemType::of)
        .ok_or_else(|| bad_binary("array element type"))?;
    let mut at = 0usize;
    let mut next = |n: usize| -> Result<&[u8], Error> {
        let b = bytes.get(at..at + n).ok_or_else(|| bad_binary("array"))?;
        at += n;
        Ok(b)
    };
    let int = |b: &[u8]| i32::from_be_bytes(b.try_into().unwrap_or([0; 4]));
    let ndim = int(next(4)?);
    let _has_nulls = next(4)?;
    let _elem_oid = next(4)?;
    if !(0..=MAX_DIMS as i32).contains(&ndim) {
        return Err(bad_binary("array dimensions"));
    }
    let mut dims = Vec::new();
    let mut count: usize = if ndim == 0 { 0 } else { 1 };
    for _ in 0..ndim {
        let len = int(next(4)?);
        let lower = int(next(4)?);
        if len <= 0 {
            return Err(bad_binary("array dimensions"));
        }
        count = count
            .checked_mul(len as usize)
            .filter(|&n| n <= bytes.len() / 4)
            .ok_or_else(|| bad_binary("array dimensions"))?;
        dims.push(Dim { len, lower });
    }
    let mut items = Vec::with_capacity(count);
    for _ in 0..count {
        let n = int(next(4)?);
        items.push(if n < 0 {
            Value::Null
        } else {
            decode_param(Some(next(n as usize)?), true, Some(&member), None)?
                .cast(&elem.scalar())?
        });
    }
    if at != bytes.len() {
        return Err(bad_binary("array"));
    }
    Ok(Value::Array(Box::new(ArrayValue { elem, dims, items })))
}

/// NUMERIC in PostgreSQL's binary form: base-10000 digits around the
/// decimal point, leading and trailing zero groups stripped.
pub fn put_numeric(buf: &mut BytesMut, d: Decimal) {
    let sign = if d.mantissa < 0 {
        NUMERIC_NEG
    } else {
        NUMERIC_POS
    };
    let digits = d.mantissa.unsigned_abs().to_string();
    let scale = d.scale as usize;
    let (int_part, frac_part) = if digits.len() > scale {
        digits.split_at(digits.len() - scale)
    } else {
        ("", digits.as_str())
    };
    let frac = format!("{}{frac_part}", "0".repeat(scale - frac_part.len()));
    // Integer groups, right-aligned to multiples of 4.
    let pad = (4 - int_part.len() % 4) % 4;
    let int_padded = format!("{}{int_part}", "0".repeat(pad));
    let frac_pad = (4 - frac.len() % 4) % 4;
    let frac_padded = format!("{frac}{}", "0".repeat(frac_pad));
    let group = |s: &str| -> Vec<i16> {
        s.as_bytes()
            .chunks(4)
            .map(|c| c.iter().fold(0i16, |a, b| a * 10 + (b - b'0') as i16))
            .collect()
    };
    let int_groups = group(&int_padded);
    let frac_groups = group(&frac_padded);
    let mut weight = int_groups.len() as i16 - 1;
    let mut groups: Vec<i16> = int_groups.into_iter().chain(frac_groups).collect();
    while groups.first() == Some(&0) {
        groups.remove(0);
        weight -= 1;
    }
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    buf.put_i16(groups.len() as i16);
    buf.put_i16(weight);
    buf.put_u16(sign);
    buf.put_u16(d.scale as u16);
    for g in groups {
        buf.put_i16(g);
    }
}

/// NUMERIC from PostgreSQL's binary form, bounds-checked.
pub fn decode_numeric(bytes: &[u8]) -> Result<Decimal, Error> {
    let word = |i: usize| -> Result<u16, Error> {
        bytes
            .get(i * 2..i * 2 + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| bad_binary("numeric"))
    };
    let ndigits = word(0)? as i16;
    let weight = word(1)? as i16 as i32;
    let sign = word(2)?;
    let dscale = word(3)?;
    if ndigits < 0 || bytes.len() != 8 + ndigits as usize * 2 {
        return Err(bad_binary("numeric"));
    }
    if sign == NUMERIC_NAN {
        return Err(Error::sql(
            SqlState::FEATURE_NOT_SUPPORTED,
            "NUMERIC NaN is not supported",
        ));
    }
    if sign != NUMERIC_POS && sign != NUMERIC_NEG {
        return Err(bad_binary("numeric sign"));
    }
    if dscale > ndpdb_formats::value::MAX_SCALE as u16 {
        return Err(Error::sql(
            SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            "numeric scale out of range",
        ));
    }
    let overflow = || {
        Error::sql(
            SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            "numeric value out of range",
        )
    };
    // mantissa = Σ digit_i × 10^(4·(weight−i) + dscale)
    let mut mantissa: i128 = 0;
    for i in 0..ndigits as usize {
        let digit = word(4 + i)? as i16;
        if !(0..10_000).contains(&digit) {
            return Err(bad_binary("numeric digit"));
        }
        let exp = 4 * (weight - i as i32) + dscale as i32;
        let term = if exp >= 0 {
            10i128
                .checked_pow(exp as u32)
                .and_then(|p| p.checked_mul(digit as i128))
                .ok_or_else(overflow)?
        } else if exp > -4 {
            digit as i128 / 10i128.pow((-exp) as u32)
        } else {
            0
        };
        mantissa = mantissa.checked_add(term).ok_or_else(overflow)?;
    }
    if sign == NUMERIC_NEG {
        mantissa = -mantissa;
    }
    Ok(Decimal::new(mantissa, dscale as u8))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric_round_trip(m: i128, scale: u8) {
        let d = Decimal::new(m, scale);
        let mut buf = BytesMut::new();
        put_numeric(&mut buf, d);
        assert_eq!(decode_numeric(&buf).unwrap(), d, "{m} scale {scale}");
    }

    #[test]
    fn numeric_binary_round_trips() {
        for (m, s) in [
            (0, 0),
            (0, 2),
            (1, 0),
            (-1, 0),
            (12345678, 2),
            (-12345678, 4),
            (10000, 0),
            (100000000, 8),
            (5, 3),
            (i64::MAX as i128, 0),
            (123456789012345678901234567890, 10),
        ] {
            numeric_round_trip(m, s);
        }
    }

    #[test]
    fn numeric_binary_matches_postgres_layout() {
        // 1234.5678 → ndigits 2, weight 0, sign +, dscale 4, [1234, 5678]
        let mut buf = BytesMut::new();
        put_numeric(&mut buf, Decimal::new(12345678, 4));
        assert_eq!(&buf[..], &[0, 2, 0, 0, 0, 0, 0, 4, 0x04, 0xD2, 0x16, 0x2E]);
        // 0.01 → ndigits 1, weight -1, dscale 2, [100]
        let mut buf = BytesMut::new();
        put_numeric(&mut buf, Decimal::new(1, 2));
        assert_eq!(&buf[..], &[0, 1, 0xFF, 0xFF, 0, 0, 0, 2, 0, 100]);
    }

    #[test]
    fn truncated_binary_parameters_are_errors() {
        for ty in [
            Type::INT4,
            Type::INT8,
            Type::FLOAT8,
            Type::NUMERIC,
            Type::DATE,
        ] {
            let e = decode_param(Some(&[1, 2, 3]), true, Some(&ty), None).unwrap_err();
            assert_eq!(
                e.sqlstate(),
                SqlState::INVALID_BINARY_REPRESENTATION,
                "{ty}"
            );
        }
        let e = decode_param(
            Some(&[0, 5, 0, 0, 0, 0, 0, 0]),
            true,
            Some(&Type::NUMERIC),
            None,
        )
        .unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::INVALID_BINARY_REPRESENTATION);
    }

    #[test]
    fn text_parameters_take_the_declared_or_inferred_type() {
        let v = decode_param(Some(b"42"), false, Some(&Type::INT8), None).unwrap();
        assert_eq!(v, Value::BigInt(42));
        let v = decode_param(Some(b"42"), false, None, Some(DataType::Int)).unwrap();
        assert_eq!(v, Value::Int(42));
        let e = decode_param(Some(b"x"), false, None, Some(DataType::Int)).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::INVALID_TEXT_REPRESENTATION);
    }
}
