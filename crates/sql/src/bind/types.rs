//! The types binding works with: the static type of a compiled
//! sub-expression ([`Ty`]) and the SQL type names of casts and column
//! definitions mapped to ndpdb's [`DataType`] ([`convert_type`]).
//!
//! ```text
//!  '2024-01-01'   Ty::Literal(i)   (PostgreSQL's unknown: typed by context)
//!  $1             Ty::Param(1)     (typed by context, cast before execution)
//!  NULL           Ty::Null
//!  a + 1          Ty::Known(Int)
//!  NUMERIC(10,2)  convert_type ─► DataType::Numeric { precision 10, scale 2 }
//! ```
//!
//! Both the expression compiler and the DDL read them; neither owns them.

use ndpdb_formats::types::MAX_NUMERIC_PRECISION;
use ndpdb_formats::{DataType, SqlState};
use sqlparser::ast::{
    ArrayElemTypeDef, CharacterLength, DataType as AstType, ExactNumberInfo, TimezoneInfo,
};

use crate::{Error, Result};

/// Static type of a compiled sub-expression.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Ty {
    Known(DataType),
    /// An untyped string literal at constant `idx` (PostgreSQL's `unknown`).
    Literal(u32),
    /// A parameter whose type comes from context.
    Param(u32),
    Null,
}

impl Ty {
    pub fn data_type(self) -> Option<DataType> {
        match self {
            Ty::Known(t) => Some(t),
            _ => None,
        }
    }

    /// The type a result column reports (unknown literals are text).
    pub fn output_type(self) -> DataType {
        self.data_type().unwrap_or(DataType::Text)
    }
}

fn unsupported_type(t: &AstType) -> Error {
    Error::new(
        SqlState::UNDEFINED_OBJECT,
        format!("type \"{t}\" is not supported"),
    )
}

/// Maps a SQL type name to an ndpdb type.
pub fn convert_type(t: &AstType) -> Result<DataType> {
    Ok(match t {
        AstType::Int(_)
        | AstType::Integer(_)
        | AstType::Int4(_)
        | AstType::SmallInt(_)
        | AstType::Int2(_) => DataType::Int,
        AstType::BigInt(_) | AstType::Int8(_) => DataType::BigInt,
        AstType::Double(_)
        | AstType::DoublePrecision
        | AstType::Float8
        | AstType::Real
        | AstType::Float(_) => DataType::Double,
        AstType::Numeric(info) | AstType::Decimal(info) => match info {
            ExactNumberInfo::None => DataType::Numeric {
                precision: 0,
                scale: 0,
            },
            ExactNumberInfo::Precision(p) => numeric(*p, 0)?,
            ExactNumberInfo::PrecisionAndScale(p, s) => {
                if *s < 0 {
                    return Err(unsupported_type(t));
                }
                numeric(*p, *s as u64)?
            }
        },
        AstType::Bool | AstType::Boolean => DataType::Bool,
        AstType::Date => DataType::Date,
        AstType::Timestamp(_, TimezoneInfo::None | TimezoneInfo::WithoutTimeZone) => {
            DataType::Timestamp
        }
        AstType::Text | AstType::String(None) => DataType::Text,
        AstType::Varchar(len) | AstType::CharacterVarying(len) => match len {
            None => DataType::Text,
            Some(CharacterLength::IntegerLength { length, .. }) => DataType::Varchar(
                u32::try_from(*length)
                    .map_err(|_| unsupported_type(t))?
                    .max(1),
            ),
            Some(CharacterLength::Max) => DataType::Text,
        },
        AstType::Char(len) | AstType::Character(len) => match len {
            None => DataType::Char(1),
            Some(CharacterLength::IntegerLength { length, .. }) => {
                if *length == 0 {
                    return Err(Error::new(
                        SqlState::INVALID_PARAMETER_VALUE,
                        "length for type char must be at least 1",
                    ));
                }
                if *length > 10_485_760 {
                    return Err(Error::new(
                        SqlState::INVALID_PARAMETER_VALUE,
                        "length for type char cannot exceed 10485760",
                    ));
                }
                DataType::Char(*length as u32)
            }
            Some(CharacterLength::Max) => return Err(unsupported_type(t)),
        },
        AstType::Bytea => DataType::Bytea,
        AstType::JSON => DataType::Json,
        AstType::JSONB => DataType::Jsonb,
        AstType::Array(
            ArrayElemTypeDef::SquareBracket(inner, _)
            | ArrayElemTypeDef::Qualified(inner, _)
            | ArrayElemTypeDef::AngleBracket(inner)
            | ArrayElemTypeDef::Parenthesis(inner),
        ) => match convert_type(inner)? {
            // `int[][]` is `int[]`, as PostgreSQL reads it.
            t @ DataType::Array(_) => t,
            t => DataType::Array(
                ndpdb_formats::array::ElemType::of(t).ok_or_else(|| unsupported_type(inner))?,
            ),
        },
        AstType::Custom(name, args) if args.is_empty() => {
            match name.to_string().to_lowercase().as_str() {
                "int4" | "int" | "integer" => DataType::Int,
                "int8" | "bigint" => DataType::BigInt,
                "float8" => DataType::Double,
                "bool" => DataType::Bool,
                "text" => DataType::Text,
                "json" => DataType::Json,
                "jsonb" => DataType::Jsonb,
                _ => return Err(unsupported_type(t)),
            }
        }
        _ => return Err(unsupported_type(t)),
    })
}

fn numeric(p: u64, s: u64) -> Result<DataType> {
    if p == 0 || p > MAX_NUMERIC_PRECISION as u64 {
        return Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("NUMERIC precision {p} must be between 1 and {MAX_NUMERIC_PRECISION}"),
        ));
    }
    if s > p {
        return Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("NUMERIC scale {s} must be between 0 and precision {p}"),
        ));
    }
    Ok(DataType::Numeric {
        precision: p as u8,
        scale: s as u8,
    })
}
