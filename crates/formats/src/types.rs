//! SQL data types, columns and table schemas.

use crate::codec::{Reader, Writer};
use crate::error::{Error, Result};

/// Largest NUMERIC precision ndpdb stores exactly (scaled `i128`).
pub const MAX_NUMERIC_PRECISION: u8 = 38;

/// A column type. `Numeric { precision: 0, .. }` is unconstrained `NUMERIC`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DataType {
    Bool,
    Int,
    BigInt,
    Double,
    Numeric {
        precision: u8,
        scale: u8,
    },
    Date,
    Timestamp,
    Text,
    Varchar(u32),
    /// `CHAR(n)` (PostgreSQL's `bpchar`): values are stored blank-padded
    /// to `n` characters; in expressions they become text without their
    /// trailing blanks.
    Char(u32),
    Bytea,
    /// An array of a scalar type (`integer[]`, `text[]`, any number of
    /// dimensions, as PostgreSQL's arrays).
    Array(ElemType),
    /// `json`: JSON text kept as written (validated on input).
    Json,
    /// `jsonb`: JSON in canonical form (see [`crate::json`]).
    Jsonb,
}

impl DataType {
    pub fn is_numeric(&self) -> bool {
        matches!(
            self,
            DataType::Int | DataType::BigInt | DataType::Double | DataType::Numeric { .. }
        )
    }

    pub fn is_textual(&self) -> bool {
        matches!(
            self,
            DataType::Text | DataType::Varchar(_) | DataType::Char(_)
        )
    }

    /// Bytes of the fixed-width body encoding, `None` for variable width.
    pub fn fixed_width(&self) -> Option<usize> {
        match self {
            DataType::Bool => Some(1),
            DataType::Int | DataType::Date => Some(4),
            DataType::BigInt | DataType::Double | DataType::Timestamp => Some(8),
            DataType::Numeric { .. } => Some(17),
            DataType::Text
            | DataType::Varchar(_)
            | DataType::Char(_)
            | DataType::Bytea
            | DataType::Array(_)
            | DataType::Json
            | DataType::Jsonb => None,
        }
    }

    /// PostgreSQL's name for the type, as `\d` prints it.
    pub fn sql_name(&self) -> String {
        match self {
            DataType::Bool => "boolean".into(),
            DataType::Int => "integer".into(),
            DataType::BigInt => "bigint".into(),
            DataType::Double => "double precision".into(),
            DataType::Numeric { precision: 0, .. } => "numeric".into(),
            DataType::Numeric { precision, scale } => format!("numeric({precision},{scale})"),
            DataType::Date => "date".into(),
            DataType::Timestamp => "timestamp without time zone".into(),
            DataType::Text => "text".into(),
            DataType::Varchar(n) => format!("character varying({n})"),
            DataType::Char(n) => format!("character({n})"),
            DataType::Bytea => "bytea".into(),
            DataType::Array(e) => format!("{}[]", e.scalar().sql_name()),
            DataType::Json => "json".into(),
            DataType::Jsonb => "jsonb".into(),
        }
    }

    pub fn encode(&self, w: &mut Writer) {
        match *self {
            DataType::Bool => w.u8(1),
            DataType::Int => w.u8(2),
            DataType::BigInt => w.u8(3),
            DataType::Double => w.u8(4),
            DataType::Numeric { precision, scale } => w.u8(5).u8(precision).u8(scale),
            DataType::Date => w.u8(6),
            DataType::Timestamp => w.u8(7),
            DataType::Text => w.u8(8),
            DataType::Varchar(n) => w.u8(9).u32(n),
            DataType::Char(n) => w.u8(11).u32(n),
            DataType::Bytea => w.u8(10),
            DataType::Array(e) => {
                w.u8(12);
                e.scalar().encode(w);
                w
            }
            DataType::Json => w.u8(13),
            DataType::Jsonb => w.u8(14),
        };
    }

    pub fn decode(r: &mut Reader<'_>) -> Result<DataType> {
        Ok(match r.u8()? {
            1 => DataType::Bool,
            2 => DataType::Int,
            3 => DataType::BigInt,
            4 => DataType::Double,
            5 => {
                let precision = r.u8()?;
                let scale = r.u8()?;
                if precision > MAX_NUMERIC_PRECISION || (precision > 0 && scale > precision) {
                    return Err(Error::corrupted("invalid numeric precision/scale"));
                }
                DataType::Numeric { precision, scale }
            }
            6 => DataType::Date,
            7 => DataType::Timestamp,
            8 => DataType::Text,
            9 => DataType::Varchar(r.u32()?),
            11 => DataType::Char(r.u32()?),
            10 => DataType::Bytea,
            12 => DataType::Array(
                ElemType::of(DataType::decode(r)?)
                    .ok_or_else(|| Error::corrupted("array of arrays"))?,
            ),
            13 => DataType::Json,
            14 => DataType::Jsonb,
            t => return Err(Error::corrupted(format!("unknown type tag {t}"))),
        })
    }
}

impl std::fmt::Display for DataType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.sql_name())
    }
}

/// One column of a table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub ty: DataType,
    pub nullable: bool,
}

/// The ordered columns of a table plus its primary key (column positions).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Schema {
    pub columns: Vec<Column>,
    pub primary_key: Vec<usize>,
}

impl Schema {
    pub fn new(columns: Vec<Column>, primary_key: Vec<usize>) -> Schema {
        Schema {
            columns,
            primary_key,
        }
    }

    pub fn len(&self) -> usize {
        self.columns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    pub fn types(&self) -> Vec<DataType> {
        self.columns.iter().map(|c| c.ty).collect()
    }

    pub fn encode(&self, w: &mut Writer) {
        w.u32(self.columns.len() as u32);
        for c in &self.columns {
            w.str(&c.name);
            c.ty.encode(w);
            w.bool(c.nullable);
        }
        w.u32(self.primary_key.len() as u32);
        for &k in &self.primary_key {
            w.u32(k as u32);
        }
    }

    pub fn decode(r: &mut Reader<'_>) -> Result<Schema> {
        let n = r.count(6)?;
        let mut columns = Vec::with_capacity(n);
        for _ in 0..n {
            let name = r.str()?.to_string();
            let ty = DataType::decode(r)?;
            let nullable = r.bool()?;
            columns.push(Column { name, ty, nullable });
        }
        let k = r.count(4)?;
        let mut primary_key = Vec::with_capacity(k);
        for _ in 0..k {
            let i = r.u32()? as usize;
            if i >= columns.len() {
                return Err(Error::corrupted("primary key column out of range"));
            }
            primary_key.push(i);
        }
        Ok(Schema {
            columns,
            primary_key,
        })
    }
}

/// The element type of an array: any scalar column type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElemType {
    Bool,
    Int,
    BigInt,
    Double,
    Numeric { precision: u8, scale: u8 },
    Date,
    Timestamp,
    Text,
    Varchar(u32),
    Char(u32),
    Bytea,
    Json,
    Jsonb,
}

impl ElemType {
    /// The element type of arrays of `t` (`None` for an array type).
    pub fn of(t: DataType) -> Option<ElemType> {
        Some(match t {
            DataType::Bool => ElemType::Bool,
            DataType::Int => ElemType::Int,
            DataType::BigInt => ElemType::BigInt,
            DataType::Double => ElemType::Double,
            DataType::Numeric { precision, scale } => ElemType::Numeric { precision, scale },
            DataType::Date => ElemType::Date,
            DataType::Timestamp => ElemType::Timestamp,
            DataType::Text => ElemType::Text,
            DataType::Varchar(n) => ElemType::Varchar(n),
            DataType::Char(n) => ElemType::Char(n),
            DataType::Bytea => ElemType::Bytea,
            DataType::Json => ElemType::Json,
            DataType::Jsonb => ElemType::Jsonb,
            DataType::Array(_) => return None,
        })
    }

    /// The scalar type of the elements.
    pub fn scalar(self) -> DataType {
        match self {
            ElemType::Bool => DataType::Bool,
            ElemType::Int => DataType::Int,
            ElemType::BigInt => DataType::BigInt,
            ElemType::Double => DataType::Double,
            ElemType::Numeric { precision, scale } => DataType::Numeric { precision, scale },
            ElemType::Date => DataType::Date,
            ElemType::Timestamp => DataType::Timestamp,
            ElemType::Text => DataType::Text,
            ElemType::Varchar(n) => DataType::Varchar(n),
            ElemType::Char(n) => DataType::Char(n),
            ElemType::Bytea => DataType::Bytea,
            ElemType::Json => DataType::Json,
            ElemType::Jsonb => DataType::Jsonb,
        }
    }
}
