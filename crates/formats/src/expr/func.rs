//! The built-in scalar functions a program can call: their names in SQL,
//! how many arguments each takes, and the byte each is encoded as.
//!
//! ```text
//!  SQL  substr(s, 2, 3) ─ by_name ─► Func::Substr ─► Op::Call { func, nargs: 3 }
//!                                                     encoded: 29, tag, 3
//! ```
//!
//! What each function computes is in `call.rs` (and, for the catalog's
//! functions, `catalog_funcs.rs`); this file only names them, so the
//! catalog functions can match on a [`Func`] without reaching into the
//! evaluator.

use crate::error::{Error, Result};

/// Built-in scalar functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Abs,
    Lower,
    Upper,
    Length,
    Coalesce,
    Round,
    Floor,
    Ceil,
    Substr,
    NullIf,
    Greatest,
    Least,
    Trim,
    /// `spn_score(bytea)`: see [`crate::udf`].
    SpnScore,
    /// Trailing blanks removed (also how a `CHAR(n)` value becomes text).
    Rtrim,
    Ltrim,
    /// `EXTRACT(field FROM v)`: NUMERIC (see [`crate::datetime_part`]).
    Extract,
    /// `date_part('field', v)`: DOUBLE PRECISION.
    DatePart,
    /// `timestamp ± interval` (timestamp, months, days, µs): months
    /// first, the day clamped to the month's end, then days, then time.
    AddInterval,
    /// `ascii(text)`: the first character's code point (0 for '').
    Ascii,
    /// `chr(int)`: the character of a code point.
    Chr,
    /// `strpos(text, text)` / `position(a IN b)`: 1-based, 0 if absent.
    Strpos,
    /// `replace(text, from, to)`.
    Replace,
    /// `a & b`, `a | b` on integers.
    BitAnd,
    BitOr,
    /// `text ~ pattern` with flags (see [`crate::catalog_funcs`]).
    RegexMatch,
    /// `array[i]`, `array_upper(array, dim)`, `array_lower(array, dim)`
    /// on an array's text form.
    ArrayElem,
    ArrayUpper,
    ArrayLower,
    /// Field `i` (1-based) of a record's text form `(a,b)`.
    RecordField,
    /// `pg_get_expr(expr, relation)`: the expression text itself.
    PgGetExpr,
    /// `pg_get_indexdef(defs, oid, column)`: a lookup in a table of
    /// index definitions the planner made from the catalog.
    IndexDef,
    /// `trim([both|leading|trailing] chars from text)`: (text, chars, 0
    /// both / 1 leading / 2 trailing).
    TrimChars,
    /// `to_regclass(name)`, `to_regtype(name)`: (names, name) — the
    /// name, folded and split as PostgreSQL reads a qualified name, looked
    /// up in a table of `schema \t name \t oid` lines the planner made
    /// from the catalog (first match in search-path order); NULL when
    /// nothing has that name.
    NameLookup,
    /// `octet_length(text | bytea)`: bytes of the value (UTF-8 for text).
    OctetLength,
    /// `format_type(type oid, typmod)`: the type's SQL name with its
    /// modifier, as PostgreSQL prints it (`character varying(40)`,
    /// `numeric(10,2)`, `integer[]`; `???` for an unknown OID).
    FormatType,
    /// `array_to_string(array, separator [, null text])` over an array's
    /// text form: its elements joined, NULLs left out or replaced.
    ArrayToString,
    /// The array functions of [`crate::array_funcs`].
    MakeArray,
    ArrayIndex,
    ArraySlice,
    ArrayLength,
    Cardinality,
    ArrayNdims,
    ArrayDims,
    ArrayCat,
    ArrayAppend,
    ArrayPrepend,
    ArrayPosition,
    ArrayPositions,
    ArrayRemove,
    ArrayReplace,
    ArrayContains,
    ArrayOverlap,
    /// `a <@ b`: `b @> a`.
    ArrayContained,
    QuantAny,
    QuantAll,
    StringToArray,
    /// A catalog array in its text form (`1 2`, `{a,b}`) as an array
    /// value: (text, element type tag: 0 integer, 1 text).
    CatalogArray,
    /// `pg_get_serial_sequence(table, column)`: (lines `table \t column
    /// \t sequence`, table, column); the table named as PostgreSQL reads
    /// a name, or by its OID.
    SerialSequence,
    /// `text::regclass` / `text::regtype` of a value known when the
    /// statement runs: (name, names as [`Func::NameLookup`] reads them,
    /// 1 relation / 2 type); a name that is not there is an error.
    NameToOid,
    /// The json / jsonb functions and operators of [`crate::json_funcs`].
    ToJson,
    ToJsonb,
    JsonBuildObject,
    JsonbBuildObject,
    JsonBuildArray,
    JsonbBuildArray,
    JsonGet,
    JsonGetText,
    JsonPath,
    JsonPathText,
    JsonTypeof,
    JsonArrayLength,
    JsonStripNulls,
    JsonbContains,
    JsonbContained,
    JsonbExists,
    JsonbExistsAny,
    JsonbExistsAll,
    JsonbConcat,
    JsonbDelete,
    JsonbDeletePath,
    JsonbSet,
    JsonbPretty,
    /// `current_setting(name)` of a name known when the statement runs:
    /// (lines `name \t value`, name); an unknown name is 42704.
    Setting,
    /// `jsonb_insert(target, path, new [, after])`.
    JsonbInsert,
    /// `json_object(text[])`, `json_object(keys, values)` and `jsonb_`.
    JsonObject,
    JsonbObject,
}

impl Func {
    const ALL: [Func; 87] = [
        Func::Abs,
        Func::Lower,
        Func::Upper,
        Func::Length,
        Func::Coalesce,
        Func::Round,
        Func::Floor,
        Func::Ceil,
        Func::Substr,
        Func::NullIf,
        Func::Greatest,
        Func::Least,
        Func::Trim,
        Func::SpnScore,
        Func::Rtrim,
        Func::Ltrim,
        Func::Extract,
        Func::DatePart,
        Func::AddInterval,
        Func::Ascii,
        Func::Chr,
        Func::Strpos,
        Func::Replace,
        Func::BitAnd,
        Func::BitOr,
        Func::RegexMatch,
        Func::ArrayElem,
        Func::ArrayUpper,
        Func::ArrayLower,
        Func::RecordField,
        Func::PgGetExpr,
        Func::IndexDef,
        Func::TrimChars,
        Func::NameLookup,
        Func::OctetLength,
        Func::FormatType,
        Func::ArrayToString,
        Func::MakeArray,
        Func::ArrayIndex,
        Func::ArraySlice,
        Func::ArrayLength,
        Func::Cardinality,
        Func::ArrayNdims,
        Func::ArrayDims,
        Func::ArrayCat,
        Func::ArrayAppend,
        Func::ArrayPrepend,
        Func::ArrayPosition,
        Func::ArrayPositions,
        Func::ArrayRemove,
        Func::ArrayReplace,
        Func::ArrayContains,
        Func::ArrayOverlap,
        Func::ArrayContained,
        Func::QuantAny,
        Func::QuantAll,
        Func::StringToArray,
        Func::CatalogArray,
        Func::SerialSequence,
        Func::NameToOid,
        Func::ToJson,
        Func::ToJsonb,
        Func::JsonBuildObject,
        Func::JsonbBuildObject,
        Func::JsonBuildArray,
        Func::JsonbBuildArray,
        Func::JsonGet,
        Func::JsonGetText,
        Func::JsonPath,
        Func::JsonPathText,
        Func::JsonTypeof,
        Func::JsonArrayLength,
        Func::JsonStripNulls,
        Func::JsonbContains,
        Func::JsonbContained,
        Func::JsonbExists,
        Func::JsonbExistsAny,
        Func::JsonbExistsAll,
        Func::JsonbConcat,
        Func::JsonbDelete,
        Func::JsonbDeletePath,
        Func::JsonbSet,
        Func::JsonbPretty,
        Func::Setting,
        Func::JsonbInsert,
        Func::JsonObject,
        Func::JsonbObject,
    ];

    /// How many arguments a call takes. The variadic ones (COALESCE,
    /// GREATEST, LEAST) are bounded by the one-byte argument count of
    /// [`Op::Call`](super::Op::Call).
    pub fn arity(self) -> std::ops::RangeInclusive<usize> {
        match self {
            Func::Coalesce | Func::Greatest | Func::Least => 1..=u8::MAX as usize,
            Func::MakeArray
            | Func::JsonBuildObject
            | Func::JsonbBuildObject
            | Func::JsonBuildArray
            | Func::JsonbBuildArray => 0..=u8::MAX as usize,
            Func::ToJson
            | Func::ToJsonb
            | Func::JsonTypeof
            | Func::JsonArrayLength
            | Func::JsonStripNulls
            | Func::JsonbPretty => 1..=1,
            Func::JsonGet
            | Func::JsonGetText
            | Func::JsonPath
            | Func::JsonPathText
            | Func::JsonbContains
            | Func::JsonbContained
            | Func::JsonbExists
            | Func::JsonbExistsAny
            | Func::JsonbExistsAll
            | Func::JsonbConcat
            | Func::JsonbDelete
            | Func::JsonbDeletePath => 2..=2,
            Func::JsonbSet => 3..=4,
            Func::Setting => 2..=2,
            Func::JsonbInsert => 3..=4,
            Func::JsonObject | Func::JsonbObject => 1..=2,
            Func::ArrayIndex => 2..=7,
            Func::ArraySlice => 3..=13,
            Func::ArrayPosition | Func::StringToArray => 2..=3,
            Func::ArrayReplace
            | Func::QuantAny
            | Func::QuantAll
            | Func::SerialSequence
            | Func::NameToOid => 3..=3,
            Func::ArrayLength
            | Func::ArrayCat
            | Func::ArrayAppend
            | Func::ArrayPrepend
            | Func::ArrayPositions
            | Func::ArrayRemove
            | Func::ArrayContains
            | Func::ArrayOverlap
            | Func::ArrayContained
            | Func::CatalogArray => 2..=2,
            Func::Cardinality | Func::ArrayNdims | Func::ArrayDims => 1..=1,
            Func::Round => 1..=2,
            Func::Substr | Func::ArrayToString => 2..=3,
            Func::AddInterval => 4..=4,
            Func::NullIf | Func::Extract | Func::DatePart | Func::Strpos => 2..=2,
            Func::Replace | Func::RegexMatch | Func::IndexDef | Func::TrimChars => 3..=3,
            Func::BitAnd
            | Func::BitOr
            | Func::ArrayElem
            | Func::ArrayUpper
            | Func::ArrayLower
            | Func::RecordField
            | Func::PgGetExpr
            | Func::NameLookup
            | Func::FormatType => 2..=2,
            Func::Abs
            | Func::Lower
            | Func::Upper
            | Func::Length
            | Func::Floor
            | Func::Ceil
            | Func::Trim
            | Func::Rtrim
            | Func::Ltrim
            | Func::Ascii
            | Func::Chr
            | Func::OctetLength
            | Func::SpnScore => 1..=1,
        }
    }

    pub fn by_name(name: &str) -> Option<Func> {
        Some(match name {
            "abs" => Func::Abs,
            "lower" => Func::Lower,
            "upper" => Func::Upper,
            "length" | "char_length" | "character_length" => Func::Length,
            "coalesce" => Func::Coalesce,
            "round" => Func::Round,
            "floor" => Func::Floor,
            "ceil" | "ceiling" => Func::Ceil,
            "substr" | "substring" => Func::Substr,
            "nullif" => Func::NullIf,
            "greatest" => Func::Greatest,
            "least" => Func::Least,
            "trim" | "btrim" => Func::Trim,
            "rtrim" => Func::Rtrim,
            "ltrim" => Func::Ltrim,
            "spn_score" => Func::SpnScore,
            "date_part" => Func::DatePart,
            "ascii" => Func::Ascii,
            "chr" => Func::Chr,
            "strpos" => Func::Strpos,
            "replace" => Func::Replace,
            "octet_length" => Func::OctetLength,
            _ => return None,
        })
    }

    /// The function's byte in an encoded [`Op::Call`](super::Op::Call).
    pub(super) fn tag(self) -> u8 {
        Func::ALL.iter().position(|f| *f == self).unwrap_or(0) as u8
    }

    pub(super) fn from_tag(t: u8) -> Result<Func> {
        Func::ALL
            .get(t as usize)
            .copied()
            .ok_or_else(|| Error::corrupted(format!("unknown function tag {t}")))
    }
}
