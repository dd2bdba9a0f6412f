//! `pg_type` and the type columns of `pg_attribute` / information_schema:
//! each ndpdb type with PostgreSQL's OID, name, length and category, and
//! the type modifier (`atttypmod`) a VARCHAR(n), CHAR(n) or NUMERIC(p,s)
//! column reports.
//!
//! ```text
//!  DataType::Varchar(20) ─► type_info ─► varchar, oid 1043
//!                        ─► typmod    ─► 24 (n + 4, as PostgreSQL stores it)
//! ```

use super::*;

/// What PostgreSQL's catalog says of a type: OID, name, length, the
/// information_schema name, category.
pub(super) struct TypeInfo {
    pub(super) oid: i64,
    pub(super) name: &'static str,
    pub(super) len: i32,
    pub(super) sql: &'static str,
    pub(super) category: &'static str,
}

pub(super) const TYPES: [TypeInfo; 13] = [
    TypeInfo {
        oid: 16,
        name: "bool",
        len: 1,
        sql: "boolean",
        category: "B",
    },
    TypeInfo {
        oid: 17,
        name: "bytea",
        len: -1,
        sql: "bytea",
        category: "U",
    },
    TypeInfo {
        oid: 20,
        name: "int8",
        len: 8,
        sql: "bigint",
        category: "N",
    },
    TypeInfo {
        oid: 23,
        name: "int4",
        len: 4,
        sql: "integer",
        category: "N",
    },
    TypeInfo {
        oid: 25,
        name: "text",
        len: -1,
        sql: "text",
        category: "S",
    },
    TypeInfo {
        oid: 701,
        name: "float8",
        len: 8,
        sql: "double precision",
        category: "N",
    },
    TypeInfo {
        oid: 1042,
        name: "bpchar",
        len: -1,
        sql: "character",
        category: "S",
    },
    TypeInfo {
        oid: 1043,
        name: "varchar",
        len: -1,
        sql: "character varying",
        category: "S",
    },
    TypeInfo {
        oid: 1082,
        name: "date",
        len: 4,
        sql: "date",
        category: "D",
    },
    TypeInfo {
        oid: 1114,
        name: "timestamp",
        len: 8,
        sql: "timestamp without time zone",
        category: "D",
    },
    TypeInfo {
        oid: 1700,
        name: "numeric",
        len: -1,
        sql: "numeric",
        category: "N",
    },
    TypeInfo {
        oid: 114,
        name: "json",
        len: -1,
        sql: "json",
        category: "U",
    },
    TypeInfo {
        oid: 3802,
        name: "jsonb",
        len: -1,
        sql: "jsonb",
        category: "U",
    },
];

/// information_schema.tables: a table (`BASE TABLE`) or a view
/// (`VIEW`, not insertable: ndpdb does not write through views).
pub(super) fn relation_row(name: &str, kind: &str, catalog: &str) -> Vec<Value> {
    vec![
        t(catalog),
        t("public"),
        t(name),
        t(kind),
        N,
        N,
        N,
        N,
        N,
        yes(kind == "BASE TABLE"),
        t("NO"),
        N,
    ]
}

/// The array types of [`TYPES`], in the same order (`_int4` is the
/// array of `int4`).
pub(super) const ARRAY_TYPES: [TypeInfo; 13] = [
    array_type(1000, "_bool"),
    array_type(1001, "_bytea"),
    array_type(1016, "_int8"),
    array_type(1007, "_int4"),
    array_type(1009, "_text"),
    array_type(1022, "_float8"),
    array_type(1014, "_bpchar"),
    array_type(1015, "_varchar"),
    array_type(1182, "_date"),
    array_type(1115, "_timestamp"),
    array_type(1231, "_numeric"),
    array_type(199, "_json"),
    array_type(3807, "_jsonb"),
];

const fn array_type(oid: i64, name: &'static str) -> TypeInfo {
    TypeInfo {
        oid,
        name,
        len: -1,
        sql: "ARRAY",
        category: "A",
    }
}

/// Every type `pg_type` lists: the scalars, then their arrays.
pub(super) fn all_types() -> impl Iterator<Item = &'static TypeInfo> {
    TYPES.iter().chain(ARRAY_TYPES.iter())
}

/// The collation of a type's values: "default" (100) for the string
/// types and their arrays.
pub(super) fn collation_of(ty: &TypeInfo) -> i64 {
    match ty.name {
        "text" | "varchar" | "bpchar" | "_text" | "_varchar" | "_bpchar" => 100,
        _ => 0,
    }
}

/// The element type's OID of an array type, and the array type's OID of
/// an element type (0 where there is none).
fn elem_and_array(ty: &TypeInfo) -> (i64, i64) {
    if let Some(k) = ARRAY_TYPES.iter().position(|a| a.oid == ty.oid) {
        (TYPES[k].oid, 0)
    } else if let Some(k) = TYPES.iter().position(|s| s.oid == ty.oid) {
        (0, ARRAY_TYPES[k].oid)
    } else {
        (0, 0)
    }
}

pub(super) fn type_info(ty: DataType) -> &'static TypeInfo {
    if let DataType::Array(e) = ty {
        let scalar = type_info(e.scalar());
        let k = TYPES.iter().position(|s| s.oid == scalar.oid).unwrap_or(4);
        return &ARRAY_TYPES[k];
    }
    let name = match ty {
        DataType::Bool => "bool",
        DataType::Bytea => "bytea",
        DataType::BigInt => "int8",
        DataType::Int => "int4",
        DataType::Text => "text",
        DataType::Double => "float8",
        DataType::Char(_) => "bpchar",
        DataType::Varchar(_) => "varchar",
        DataType::Date => "date",
        DataType::Timestamp => "timestamp",
        DataType::Numeric { .. } => "numeric",
        DataType::Json => "json",
        DataType::Jsonb => "jsonb",
        DataType::Array(_) => "text",
    };
    TYPES.iter().find(|t| t.name == name).unwrap_or(&TYPES[4])
}

/// PostgreSQL's type modifier of a column type (-1: none).
pub(super) fn typmod(ty: DataType) -> i64 {
    match ty {
        DataType::Array(e) => typmod(e.scalar()),
        DataType::Varchar(n) | DataType::Char(n) => n as i64 + 4,
        DataType::Numeric { precision, scale } if precision > 0 => {
            ((precision as i64) << 16 | scale as i64) + 4
        }
        _ => -1,
    }
}

pub(super) fn type_row(ty: &TypeInfo) -> Vec<Value> {
    let preferred = matches!(ty.name, "bool" | "text" | "float8");
    let collation = collation_of(ty);
    let (elem, array) = elem_and_array(ty);
    vec![
        i(ty.oid),
        t(ty.name),
        i(PG_CATALOG_OID),
        i(OWNER_OID),
        Value::Int(ty.len),
        b(ty.len > 0),
        t("b"),
        t(ty.category),
        b(preferred),
        b(true),
        t(","),
        i(0),
        i(elem),
        i(array),
        b(false),
        i(0),
        Value::Int(-1),
        Value::Int(0),
        i(collation),
        i(more::type_input(ty.name)),
    ]
}
