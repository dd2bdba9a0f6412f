//! Version records: a fixed header followed by a schema-driven body
//! (DESIGN.md §2, DANSEN Fig. 1-(c)).
//!
//! ```text
//!  0        8          16     24    25   28
//!  ┌────────┬──────────┬──────┬─────┬────┬──────────────┬───────────────────┐
//!  │creator │ pred     │ VID  │flags│ 0  │ null bitmap  │ non-null values…  │
//!  │ TxId   │ RecId/∅  │      │     │    │ ⌈cols/8⌉ B   │                   │
//!  └────────┴──────────┴──────┴─────┴────┴──────────────┴───────────────────┘
//! ```
//!
//! Fixed-width values are little-endian (BOOLEAN 1 B, INT/DATE 4 B,
//! BIGINT/DOUBLE/TIMESTAMP 8 B, NUMERIC 16 B mantissa + 1 B scale).
//! TEXT/VARCHAR/BYTEA carry a length header: one byte for lengths < 255,
//! else `0xFF` and a 4-byte length. A version is invalidated only by the
//! existence of a successor (one-point invalidation): the header has no
//! "deleted at" field; DELETE writes a successor with the tombstone flag.

use crate::array::ArrayValue;
use crate::codec::{Reader, Writer};
use crate::error::{Error, Result};
use crate::ids::{RecId, TxId, Vid};
use crate::types::DataType;
use crate::value::{Decimal, Value, MAX_SCALE};

pub const RECORD_HEADER_SIZE: usize = 28;
pub const FLAG_TOMBSTONE: u8 = 0x01;

/// The version header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    pub creator: TxId,
    pub pred: RecId,
    pub vid: Vid,
    pub flags: u8,
}

impl RecordHeader {
    pub fn is_tombstone(&self) -> bool {
        self.flags & FLAG_TOMBSTONE != 0
    }

    pub fn parse(record: &[u8]) -> Result<RecordHeader> {
        let mut r = Reader::new(record);
        let creator = TxId(r.u64()?);
        let pred = RecId::from_raw(r.u64()?);
        let vid = Vid(r.u64()?);
        let flags = r.u8()?;
        if flags & !FLAG_TOMBSTONE != 0 {
            return Err(Error::corrupted(format!("unknown record flags {flags:#x}")));
        }
        r.take(3)?;
        Ok(RecordHeader {
            creator,
            pred,
            vid,
            flags,
        })
    }

    pub fn encode(&self, w: &mut Writer) {
        w.u64(self.creator.0)
            .u64(self.pred.raw())
            .u64(self.vid.0)
            .u8(self.flags)
            .raw(&[0, 0, 0]);
    }
}

/// Encodes a whole record (header + body). `values` must already have the
/// column types (see `Value::cast`); a mismatch is an error.
pub fn encode_record(
    header: &RecordHeader,
    types: &[DataType],
    values: &[Value],
    w: &mut Writer,
) -> Result<()> {
    header.encode(w);
    encode_body(types, values, w)
}

pub fn encode_body(types: &[DataType], values: &[Value], w: &mut Writer) -> Result<()> {
    if types.len() != values.len() {
        return Err(Error::corrupted(format!(
            "row has {} values for {} columns",
            values.len(),
            types.len()
        )));
    }
    let mut bitmap = vec![0u8; types.len().div_ceil(8)];
    for (i, v) in values.iter().enumerate() {
        if v.is_null() {
            bitmap[i / 8] |= 1 << (i % 8);
        }
    }
    w.raw(&bitmap);
    for (ty, v) in types.iter().zip(values) {
        match (ty, v) {
            (_, Value::Null) => {}
            (DataType::Bool, Value::Bool(b)) => {
                w.bool(*b);
            }
            (DataType::Int, Value::Int(x)) => {
                w.i32(*x);
            }
            (DataType::Date, Value::Date(x)) => {
                w.i32(*x);
            }
            (DataType::BigInt, Value::BigInt(x)) => {
                w.i64(*x);
            }
            (DataType::Timestamp, Value::Timestamp(x)) => {
                w.i64(*x);
            }
            (DataType::Double, Value::Double(x)) => {
                w.f64(*x);
            }
            (DataType::Numeric { .. }, Value::Numeric(d)) => {
                w.i128(d.mantissa).u8(d.scale);
            }
            (DataType::Text | DataType::Varchar(_) | DataType::Char(_), Value::Text(s)) => {
                var_bytes(w, s.as_bytes())
            }
            (DataType::Bytea, Value::Bytea(b)) => var_bytes(w, b),
            (DataType::Array(_), Value::Array(a)) => {
                let mut body = Writer::new();
                a.encode(&mut body);
                var_bytes(w, body.as_slice())
            }
            (DataType::Json, Value::Json(s)) => var_bytes(w, s.as_bytes()),
            (DataType::Jsonb, Value::Jsonb(j)) => var_bytes(w, j.to_string().as_bytes()),
            (ty, v) => {
                return Err(Error::corrupted(format!(
                    "value {v:?} does not have column type {ty}"
                )))
            }
        }
    }
    Ok(())
}

fn var_bytes(w: &mut Writer, b: &[u8]) {
    if b.len() < 0xFF {
        w.u8(b.len() as u8);
    } else {
        w.u8(0xFF).u32(b.len() as u32);
    }
    w.raw(b);
}

fn read_var<'a>(r: &mut Reader<'a>) -> Result<&'a [u8]> {
    let n = match r.u8()? {
        0xFF => r.u32()? as usize,
        n => n as usize,
    };
    r.take(n)
}

/// Visits the raw field bytes of a record body, column by column: the
/// little-endian fixed-width bytes (NUMERIC: 16 B mantissa + 1 B scale) or
/// a variable-width payload without its length header; `None` for NULL.
/// The whole body is bounds-checked and must be consumed exactly.
pub fn for_each_field<'a>(
    types: &[DataType],
    body: &'a [u8],
    mut f: impl FnMut(usize, Option<&'a [u8]>) -> Result<()>,
) -> Result<()> {
    let mut r = Reader::new(body);
    let bitmap = r.take(types.len().div_ceil(8))?;
    for (i, ty) in types.iter().enumerate() {
        if bitmap[i / 8] & (1 << (i % 8)) != 0 {
            f(i, None)?;
            continue;
        }
        let field = match ty.fixed_width() {
            Some(n) => r.take(n)?,
            None => read_var(&mut r)?,
        };
        f(i, Some(field))?;
    }
    r.finish("record body")
}

/// Encodes a record from raw fields (the inverse of [`for_each_field`]).
pub fn encode_raw_record<'a>(
    header: &RecordHeader,
    types: &[DataType],
    mut field: impl FnMut(usize) -> Option<&'a [u8]>,
    w: &mut Writer,
) {
    header.encode(w);
    let fields: Vec<Option<&[u8]>> = (0..types.len()).map(&mut field).collect();
    let mut bitmap = vec![0u8; types.len().div_ceil(8)];
    for (i, v) in fields.iter().enumerate() {
        if v.is_none() {
            bitmap[i / 8] |= 1 << (i % 8);
        }
    }
    w.raw(&bitmap);
    for (ty, v) in types.iter().zip(&fields) {
        if let Some(b) = v {
            if ty.fixed_width().is_some() {
                w.raw(b);
            } else {
                var_bytes(w, b);
            }
        }
    }
}

/// A parsed record: header plus the body bytes (decoded on demand).
#[derive(Clone, Copy, Debug)]
pub struct RecordView<'a> {
    pub header: RecordHeader,
    pub body: &'a [u8],
}

impl<'a> RecordView<'a> {
    pub fn parse(record: &'a [u8]) -> Result<RecordView<'a>> {
        let header = RecordHeader::parse(record)?;
        Ok(RecordView {
            header,
            body: &record[RECORD_HEADER_SIZE..],
        })
    }

    pub fn decode(&self, types: &[DataType]) -> Result<Vec<Value>> {
        decode_body(types, self.body)
    }
}

/// Decodes a record body for the given column types.
pub fn decode_body(types: &[DataType], body: &[u8]) -> Result<Vec<Value>> {
    decode_body_columns(types, body, None)
}

/// Decodes only the columns marked in `wanted` (the others come back as
/// NULL without being materialised; their bytes are still bounds-checked
/// and skipped). `None` decodes every column.
pub fn decode_body_columns(
    types: &[DataType],
    body: &[u8],
    wanted: Option<&[bool]>,
) -> Result<Vec<Value>> {
    let mut out = Vec::with_capacity(types.len());
    decode_body_columns_into(types, body, wanted, &mut out)?;
    Ok(out)
}

/// [`decode_body_columns`] into a caller-owned row (cleared first), so a
/// scan reuses one row buffer instead of allocating one per record.
pub fn decode_body_columns_into(
    types: &[DataType],
    body: &[u8],
    wanted: Option<&[bool]>,
    out: &mut Vec<Value>,
) -> Result<()> {
    out.clear();
    let mut r = Reader::new(body);
    let bitmap = r.take(types.len().div_ceil(8))?;
    for (i, ty) in types.iter().enumerate() {
        if bitmap[i / 8] & (1 << (i % 8)) != 0 {
            out.push(Value::Null);
            continue;
        }
        let want = wanted.is_none_or(|w| w.get(i).copied().unwrap_or(true));
        if !want {
            match ty.fixed_width() {
                Some(n) => {
                    r.take(n)?;
                }
                None => {
                    read_var(&mut r)?;
                }
            }
            out.push(Value::Null);
            continue;
        }
        out.push(match ty {
            DataType::Bool => Value::Bool(r.bool()?),
            DataType::Int => Value::Int(r.i32()?),
            DataType::Date => Value::Date(r.i32()?),
            DataType::BigInt => Value::BigInt(r.i64()?),
            DataType::Timestamp => Value::Timestamp(r.i64()?),
            DataType::Double => Value::Double(r.f64()?),
            DataType::Numeric { .. } => {
                let mantissa = r.i128()?;
                let scale = r.u8()?;
                if scale > MAX_SCALE {
                    return Err(Error::corrupted(format!("numeric scale {scale}")));
                }
                Value::Numeric(Decimal::new(mantissa, scale))
            }
            DataType::Text | DataType::Varchar(_) | DataType::Char(_) => Value::Text(
                std::str::from_utf8(read_var(&mut r)?)
                    .map_err(|_| Error::corrupted("invalid UTF-8 in text column"))?
                    .to_string(),
            ),
            DataType::Bytea => Value::Bytea(read_var(&mut r)?.to_vec()),
            DataType::Array(_) => {
                Value::Array(Box::new(ArrayValue::decode_all(read_var(&mut r)?)?))
            }
            t @ (DataType::Json | DataType::Jsonb) => {
                crate::json_convert::decode_stored(*t, read_var(&mut r)?)?
            }
        });
    }
    r.finish("record body")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ids::Lpn;
    use proptest::prelude::*;

    pub(crate) fn arb_type() -> impl Strategy<Value = DataType> {
        prop_oneof![
            Just(DataType::Bool),
            Just(DataType::Int),
            Just(DataType::BigInt),
            Just(DataType::Double),
            (1u8..=38, 0u8..=10).prop_map(|(p, s)| DataType::Numeric {
                precision: p.max(s),
                scale: s
            }),
            Just(DataType::Date),
            Just(DataType::Timestamp),
            Just(DataType::Text),
            (1u32..400).prop_map(DataType::Varchar),
            (1u32..100).prop_map(DataType::Char),
            Just(DataType::Bytea),
            Just(DataType::Array(crate::array::ElemType::Int)),
            Just(DataType::Array(crate::array::ElemType::Text)),
            Just(DataType::Json),
            Just(DataType::Jsonb),
        ]
    }

    pub(crate) fn arb_value(ty: DataType) -> BoxedStrategy<Value> {
        let v: BoxedStrategy<Value> = match ty {
            DataType::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
            DataType::Int => any::<i32>().prop_map(Value::Int).boxed(),
            DataType::BigInt => any::<i64>().prop_map(Value::BigInt).boxed(),
            DataType::Double => any::<f64>()
                .prop_filter("nan", |f| !f.is_nan())
                .prop_map(Value::Double)
                .boxed(),
            DataType::Numeric { precision, scale } => {
                let max = 10i128.pow(precision as u32) - 1;
                (-max..=max)
                    .prop_map(move |m| Value::Numeric(Decimal::new(m, scale)))
                    .boxed()
            }
            DataType::Date => (-700_000i32..2_900_000).prop_map(Value::Date).boxed(),
            DataType::Timestamp => (-50_000_000_000_000_000i64..50_000_000_000_000_000)
                .prop_map(Value::Timestamp)
                .boxed(),
            DataType::Text => ".{0,300}".prop_map(Value::Text).boxed(),
            DataType::Varchar(n) => {
                proptest::collection::vec(any::<char>(), 0..(n as usize).min(50))
                    .prop_map(|c| Value::Text(c.into_iter().collect()))
                    .boxed()
            }
            DataType::Char(n) => proptest::collection::vec(any::<char>(), 0..(n as usize).min(50))
                .prop_map(move |c| {
                    let s: String = c.into_iter().collect();
                    Value::Text(Value::Text(s).cast(&DataType::Char(n)).map_or_else(
                        |_| " ".repeat(n as usize),
                        |v| match v {
                            Value::Text(t) => t,
                            _ => String::new(),
                        },
                    ))
                })
                .boxed(),
            DataType::Bytea => proptest::collection::vec(any::<u8>(), 0..600)
                .prop_map(Value::Bytea)
                .boxed(),
            DataType::Array(e) => proptest::collection::vec(arb_value(e.scalar()), 0..6)
                .prop_map(move |items| Value::Array(Box::new(ArrayValue::from_items(e, items))))
                .boxed(),
            DataType::Json => "[ a-z0-9]{0,20}"
                .prop_map(|s| Value::Json(crate::json::escape(&s)))
                .boxed(),
            DataType::Jsonb => ("[a-z]{0,8}", any::<i32>(), "[a-zA-Z0-9 é\"\\\\\n]{0,20}")
                .prop_map(|(k, n, s)| {
                    Value::Jsonb(Box::new(crate::json::Jsonb::object(vec![
                        (k, crate::json::Jsonb::String(s)),
                        (
                            "n".into(),
                            crate::json_convert::to_jsonb(&Value::Int(n))
                                .unwrap_or(crate::json::Jsonb::Null),
                        ),
                    ])))
                })
                .boxed(),
        };
        prop_oneof![1 => Just(Value::Null), 6 => v].boxed()
    }

    pub(crate) fn arb_row() -> impl Strategy<Value = (Vec<DataType>, Vec<Value>)> {
        proptest::collection::vec(arb_type(), 1..12).prop_flat_map(|types| {
            let vals: Vec<_> = types.iter().map(|t| arb_value(*t)).collect();
            (Just(types), vals)
        })
    }

    proptest! {
        #[test]
        fn record_round_trip((types, values) in arb_row(), creator in any::<u64>(), vid in any::<u64>(), tomb in any::<bool>()) {
            let header = RecordHeader {
                creator: TxId(creator),
                pred: if tomb { RecId::NULL } else { RecId::new(Lpn(vid >> 20), 3) },
                vid: Vid(vid),
                flags: if tomb { FLAG_TOMBSTONE } else { 0 },
            };
            let mut w = Writer::new();
            encode_record(&header, &types, &values, &mut w).unwrap();
            let bytes = w.into_inner();
            let view = RecordView::parse(&bytes).unwrap();
            prop_assert_eq!(view.header, header);
            prop_assert_eq!(view.decode(&types).unwrap(), values.clone());
            // A projected decode keeps the wanted columns and nulls the rest.
            let wanted: Vec<bool> = (0..types.len()).map(|i| i % 2 == 0).collect();
            let projected = decode_body_columns(&types, view.body, Some(&wanted)).unwrap();
            for (i, v) in projected.iter().enumerate() {
                if wanted[i] { prop_assert_eq!(v, &values[i]); } else { prop_assert_eq!(v, &Value::Null); }
            }
        }

        #[test]
        fn corrupt_records_error_not_panic((types, values) in arb_row(), cut in any::<prop::sample::Index>(), flip in any::<(prop::sample::Index, u8)>()) {
            let header = RecordHeader { creator: TxId(1), pred: RecId::NULL, vid: Vid(2), flags: 0 };
            let mut w = Writer::new();
            encode_record(&header, &types, &values, &mut w).unwrap();
            let mut bytes = w.into_inner();
            // Truncation always fails to parse (the body must be consumed exactly).
            let c = cut.index(bytes.len());
            if let Ok(v) = RecordView::parse(&bytes[..c]) {
                prop_assert!(v.decode(&types).is_err());
            }
            // A flipped byte either fails or decodes to *some* values; never panics.
            let i = flip.0.index(bytes.len());
            bytes[i] ^= flip.1 | 1;
            if let Ok(v) = RecordView::parse(&bytes) {
                let _ = v.decode(&types);
            }
        }
    }
}
