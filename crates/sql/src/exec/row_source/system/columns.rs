//! The column rows of the catalog: `information_schema.columns` and
//! `pg_attribute`, one row per column of each table and view, with the
//! default as PostgreSQL shows it (`nextval('t_id_seq'::regclass)`).
//!
//! ```text
//!  TableMeta t(a int, b text default 'x')
//!     ─► column_values    ─► (t, a, 1, int4, …) (t, b, 2, text, 'x'::text)
//!     ─► attribute_values ─► (oid(t), a, 23, 1, …) …
//! ```

use super::types::{collation_of, type_info, typmod};
use super::*;

/// A default as PostgreSQL shows it: a sequence call names its sequence
/// as a `regclass`, a string literal carries its cast.
pub(super) fn shown_default(expr: &str, ty: DataType) -> String {
    if let Some(seq) = expr
        .strip_prefix("nextval('")
        .and_then(|r| r.strip_suffix("')"))
    {
        return format!("nextval('{seq}'::regclass)");
    }
    let literal = expr.len() >= 2
        && expr.starts_with('\'')
        && expr.ends_with('\'')
        && !expr[1..expr.len() - 1].replace("''", "").contains('\'');
    let cast = match ty {
        DataType::Text => "text",
        DataType::Varchar(_) => "character varying",
        DataType::Char(_) => "bpchar",
        DataType::Date => "date",
        DataType::Timestamp => "timestamp without time zone",
        DataType::Bytea => "bytea",
        _ => return expr.to_string(),
    };
    if literal {
        format!("{expr}::{cast}")
    } else {
        expr.to_string()
    }
}

pub(super) fn column_row(tb: &TableMeta, c: usize, catalog: &str) -> Vec<Value> {
    let col = &tb.schema.columns[c];
    let nullable = col.nullable && !tb.schema.primary_key.contains(&c);
    column_values(&tb.name, col, c, tb.default_of(c), nullable, true, catalog)
}

/// information_schema.columns: column `c` (`col`) of relation `rel`.
pub(super) fn column_values(
    rel: &str,
    col: &Column,
    c: usize,
    default: Option<&ColumnDefault>,
    nullable: bool,
    updatable: bool,
    catalog: &str,
) -> Vec<Value> {
    let info = type_info(col.ty);
    let identity = default.map_or(Identity::None, |d| d.identity);
    let shown = match (default, identity) {
        (Some(d), Identity::None) => t(&shown_default(&d.expr, col.ty)),
        _ => N,
    };
    let (char_max, octets) = match col.ty {
        DataType::Varchar(n) | DataType::Char(n) => (Some(n as i64), Some(n as i64 * 4)),
        DataType::Text => (None, Some(1_073_741_824)),
        _ => (None, None),
    };
    let (precision, radix, scale) = match col.ty {
        DataType::Int => (Some(32), Some(2), Some(0)),
        DataType::BigInt => (Some(64), Some(2), Some(0)),
        DataType::Double => (Some(53), Some(2), None),
        DataType::Numeric { precision: 0, .. } => (None, Some(10), None),
        DataType::Numeric { precision, scale } => {
            (Some(precision as i64), Some(10), Some(scale as i64))
        }
        _ => (None, None, None),
    };
    let datetime = match col.ty {
        DataType::Date => Some(0),
        DataType::Timestamp => Some(6),
        _ => None,
    };
    let (is_identity, generation) = match identity {
        Identity::None => ("NO", N),
        Identity::Always => ("YES", t("ALWAYS")),
        Identity::ByDefault => ("YES", t("BY DEFAULT")),
    };
    let identity_part = |v: &str| if identity == Identity::None { N } else { t(v) };
    vec![
        t(catalog),
        t("public"),
        t(rel),
        t(&col.name),
        Value::Int(c as i32 + 1),
        shown,
        yes(nullable),
        t(info.sql),
        int(char_max),
        int(octets),
        int(precision),
        int(radix),
        int(scale),
        int(datetime),
        N,
        N,
        N,
        N,
        N,
        N,
        N,
        N,
        N,
        N,
        N,
        t(catalog),
        t("pg_catalog"),
        t(info.name),
        N,
        N,
        N,
        N,
        t(&(c + 1).to_string()),
        t("NO"),
        t(is_identity),
        generation,
        identity_part("1"),
        identity_part("1"),
        identity_part(if col.ty == DataType::BigInt {
            "9223372036854775807"
        } else {
            "2147483647"
        }),
        identity_part("1"),
        t("NO"),
        t("NEVER"),
        N,
        yes(updatable),
    ]
}

pub(super) fn attribute_row(tb: &TableMeta, c: usize) -> Vec<Value> {
    let col = &tb.schema.columns[c];
    let notnull = !col.nullable || tb.schema.primary_key.contains(&c);
    attribute_values(table_oid(tb), col, c, notnull, tb.default_of(c))
}

/// pg_attribute: column `c` (`col`) of the relation with OID `rel`.
pub(super) fn attribute_values(
    rel: i64,
    col: &Column,
    c: usize,
    notnull: bool,
    default: Option<&ColumnDefault>,
) -> Vec<Value> {
    let info = type_info(col.ty);
    let identity = match default.map(|d| d.identity) {
        Some(Identity::Always) => "a",
        Some(Identity::ByDefault) => "i",
        _ => "",
    };
    let collation = collation_of(info);
    vec![
        i(rel),
        t(&col.name),
        i(info.oid),
        Value::Int(info.len),
        Value::Int(c as i32 + 1),
        Value::Int(0),
        Value::Int(typmod(col.ty) as i32),
        b(info.len > 0),
        b(notnull),
        b(default.is_some_and(|d| d.identity == Identity::None)),
        t(identity),
        t(""),
        b(false),
        b(true),
        Value::Int(0),
        i(collation),
    ]
}
